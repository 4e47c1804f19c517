"""The campaign's cloud steps against an OpenStack faked at the HTTP level (tests/unit/cloudfake.py): a stack
that leaves something behind fails terminate, an API that cannot be asked is 'could not run', never a pass."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nfvcat.campaign import controlplane as cp
from nfvcat.catalog.tdf import General, TestSpec
from tests.unit.cloudfake import CINDER, HEAT, NOVA, cloud  # noqa: F401  (the fixture)

NAME = "nfvcat-test-t"


def _run(conn: Any) -> cp.CloudRun:
    test = TestSpec("t", "", "chain-vrouter", [], {}, [], [], None, None, None)
    general = General("fake", None, "netns", None, None, None, None, Path("results"), "nfvcat")
    return cp.CloudRun("fake", test, general, lambda s: None, conn=conn)


def _stack(m: Any, resources: list[dict[str, str]]) -> None:
    body = {"id": "s1", "stack_name": NAME, "stack_status": "CREATE_COMPLETE", "stack_status_reason": ""}
    m.get(f"{HEAT}/stacks?name={NAME}", json={"stacks": [body]})
    m.get(f"{HEAT}/stacks/{NAME}/s1/resources", json={"resources": resources})
    m.delete(f"{HEAT}/stacks/{NAME}/s1", status_code=204)
    m.get(f"{HEAT}/stacks/{NAME}/s1/events", json={"events": []})
    m.get(f"{HEAT}/stacks/{NAME}/s1", status_code=404, json={})


def test_terminate_fails_naming_what_the_stack_left(cloud: Any) -> None:  # noqa: F811
    m, conn = cloud
    _stack(m, [{"resource_type": "OS::Nova::Server", "physical_resource_id": "srv"}])
    m.get(f"{NOVA}/servers/srv", json={"server": {"id": "srv"}})
    with pytest.raises(cp.StepFailed, match="OS::Nova::Server srv"):
        _run(conn).terminate(timeout=30)


def test_terminate_that_cannot_look_is_could_not_run(cloud: Any) -> None:  # noqa: F811
    m, conn = cloud
    _stack(m, [{"resource_type": "OS::Cinder::Volume", "physical_resource_id": "vol"}])
    m.get(f"{CINDER}/volumes/vol", status_code=503, json={"message": "down"})
    with pytest.raises(cp.CannotRun, match="503"):
        _run(conn).terminate(timeout=30)


def test_terminate_of_a_clean_stack_passes(cloud: Any) -> None:  # noqa: F811
    m, conn = cloud
    _stack(m, [{"resource_type": "OS::Nova::Server", "physical_resource_id": "srv"}])
    m.get(f"{NOVA}/servers/srv", status_code=404, json={})
    assert "gone" in _run(conn).terminate(timeout=30)


def test_checks_that_need_admin_are_not_a_pass() -> None:
    rows = [{"vnf": "vr", "subject": "left", "check": "bound", "status": "PASS", "detail": ""},
            {"vnf": "vr", "subject": "vr", "check": "CPU pinning", "status": "needs admin", "detail": "admin-only"}]
    assert cp.judge_checks(rows, ["bound"]) == "all 1 check(s) pass"
    with pytest.raises(cp.StepFailed, match="needs admin"):
        cp.judge_checks(rows, None)
    with pytest.raises(cp.StepFailed, match="did not run: page size"):
        cp.judge_checks(rows, ["bound", "page size"])
