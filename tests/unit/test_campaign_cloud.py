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


class _Dataplane:
    """The cloud target's data plane as its ACL and QoS steps see it: what the probes found."""

    def __init__(self, acl_status: str, qos_status: str) -> None:
        self.acl_status, self.qos_status = acl_status, qos_status

    def acl(self, spec: Any, say: Any) -> dict[str, Any]:
        return {"rules": 3, "classes": {"allowed": {"status": self.acl_status, "passed": 4, "probed": 4,
                                                    "not_observable": 0}}}

    def qos(self, spec: Any, root: Any, say: Any) -> dict[str, Any]:
        return {"status": self.qos_status,
                "bandwidth_limit": {"status": self.qos_status, "detail": "d", "limit_mbps": 1,
                                    "limited_median_mbps": 1, "unlimited_median_mbps": 2},
                "dscp_marking": {"status": self.qos_status, "detail": "d", "with_policy": 1, "without": 0}}


@pytest.mark.parametrize("status", ["PASS", "FAIL"])
def test_the_cloud_targets_acl_and_qos_steps_follow_the_probes_verdicts(status: str, monkeypatch: Any) -> None:
    """The steps compare the probes' classes with a campaign step's PASS (not a check verdict's)."""
    from types import SimpleNamespace

    from nfvcat_testbeds.targets import cloud as cloud_target

    monkeypatch.setattr("nfvcat.catalog.require_root", lambda: Path("."))
    steps = cloud_target.CloudSteps.__new__(cloud_target.CloudSteps)
    steps.dp = _Dataplane(status, status)  # type: ignore[assignment]
    steps.ctx = SimpleNamespace(test=SimpleNamespace(dataplane=SimpleNamespace(acl=object(), qos=object())),
                                record=SimpleNamespace(details={}), say=lambda text: None)  # type: ignore[assignment]
    if status == "PASS":
        assert steps.acl().startswith("3 rules: allowed PASS")
        assert steps.qos().startswith("bandwidth limit: PASS")
    else:
        with pytest.raises(cp.StepFailed):
            steps.acl()
        with pytest.raises(cp.StepFailed):
            steps.qos()


def test_the_check_step_names_the_image_each_server_booted_and_a_rebuild_passes() -> None:
    from nfvcat.cloud.verdicts import REBUILD, UNKNOWN, Verdict

    rebuilt = Verdict("vr", "vr-1", "image provenance", REBUILD, "nfvcat-vrouter-1.1.2 (images/vrouter 1.1.2): a "
                      "local rebuild, sha256 ..., 4 package(s) differ from the lock: ...")
    rows = cp.verdict_rows([Verdict("vr", "left", "bound", "pass", ""), rebuilt], "check")
    assert cp.judge_checks(rows, None) == "all 2 check(s) pass; images: vr-1 nfvcat-vrouter-1.1.2 local rebuild"
    assert cp.judge_checks(rows, ["bound"]) == "all 1 check(s) pass; images: vr-1 nfvcat-vrouter-1.1.2 local rebuild"
    plain = Verdict("gw", "gw-1", "image provenance", UNKNOWN, "cirros: provenance unknown: no nfvcat provenance in "
                    "its Glance properties")
    with pytest.raises(cp.StepFailed, match=r"first: gw gw-1 image provenance: unknown .*; images: vr-1 "
                       r"nfvcat-vrouter-1.1.2 local rebuild, gw-1 cirros unknown provenance$"):
        cp.judge_checks(rows + cp.verdict_rows([plain], "check"), None)
