"""Healing a VNF of a Heat stack (nfvcat.cloud.heat_heal, `nfvcat heal --via heat`): its server resource marked
unhealthy in the nested stack that holds it, then the stack updated with what it has; Heat faked at the HTTP
level."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests_mock

from nfvcat import cli
from nfvcat.core.errors import EXIT_FINDINGS
from tests.unit.cloudfake import HEAT, cli_cloud, sent  # noqa: F401 (fixture)


class HealStack:
    """Stack demo (s1) whose VNF vnf1 is a nested stack (demo-vnf1-abc, n1) holding server srv-1; an update
    replaces a server marked unhealthy (srv-2), then the stack is ``final``."""

    def __init__(self, m: requests_mock.Mocker, final: str = "UPDATE_COMPLETE") -> None:
        self.server, self.unhealthy, self.status, self.final = "srv-1", False, "CREATE_COMPLETE", final
        self.updated = "2026-11-28T10:00:00Z"
        m.get(f"{HEAT}/stacks", json=lambda req, ctx: {"stacks": [self.body()]})
        m.get(f"{HEAT}/stacks/demo/s1", json=lambda req, ctx: {"stack": self.body()})
        m.get(f"{HEAT}/stacks/demo/s1/events", json={"events": []})
        m.get(f"{HEAT}/stacks/demo/resources", json=lambda req, ctx: {"resources": [
            {"resource_name": "vnf1", "resource_type": "demo-vnf.yaml", "physical_resource_id": "n1"},
            {"resource_name": "server", "resource_type": "OS::Nova::Server", "parent_resource": "vnf1",
             "physical_resource_id": self.server,
             "links": [{"rel": "stack", "href": f"{HEAT}/stacks/demo-vnf1-abc/n1"}]}]})
        m.patch(f"{HEAT}/stacks/demo-vnf1-abc/n1/resources/server", json=self._mark)
        m.patch(f"{HEAT}/stacks/demo/s1", json=self._update, status_code=202)

    def body(self) -> dict[str, Any]:
        return {"id": "s1", "stack_name": "demo", "stack_status": self.status, "updated_time": self.updated}

    def _mark(self, req: Any, ctx: Any) -> dict[str, Any]:
        self.unhealthy = req.json()["mark_unhealthy"]
        return {}

    def _update(self, req: Any, ctx: Any) -> dict[str, Any]:
        if self.unhealthy:
            self.server, self.unhealthy = "srv-2", False
        self.status, self.updated = self.final, "2026-11-28T11:00:00Z"
        return {}


@pytest.fixture
def heat(cli_cloud: Any, monkeypatch: pytest.MonkeyPatch) -> Any:  # noqa: F811 (fixture)
    monkeypatch.setattr("nfvcat.cloud.upgrade.time.sleep", lambda s: None)
    return cli_cloud


def test_heal_marks_the_vnfs_server_unhealthy_in_its_nested_stack_then_updates_the_stack(heat: Any,
                                                                                       capsys: Any) -> None:
    HealStack(heat)
    assert cli.main(["heal", "demo", "--via", "heat", "--server", "vnf1", "--os-cloud", "x", "--no-check",
                     "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["healed"] == {"vnf": "vnf1", "server": "srv-1",
                                                            "new_server": "srv-2", "status": "UPDATE_COMPLETE"}
    [mark] = sent(heat, "PATCH", r"/stacks/demo-vnf1-abc/n1/resources/server$")
    assert mark.json() == {"mark_unhealthy": True, "resource_status_reason": "nfvcat heal"}
    [update] = sent(heat, "PATCH", r"/stacks/demo/s1$")
    assert set(update.json()) == {"timeout_mins"}  # the stack as it is: template and parameters kept


def test_heal_of_an_unknown_vnf_names_the_ones_there_and_a_failed_update_its_status(heat: Any,
                                                                                   capsys: Any) -> None:
    HealStack(heat, final="UPDATE_FAILED")
    assert cli.main(["heal", "demo", "--via", "heat", "--server", "nope", "--os-cloud", "x", "--no-check"]) == 1
    assert "no server of VNF nope (servers of: vnf1)" in capsys.readouterr().err
    assert cli.main(["heal", "demo", "--via", "heat", "--server", "vnf1", "--os-cloud", "x",
                     "--no-check"]) == EXIT_FINDINGS
    assert "heal demo vnf1: UPDATE_FAILED" in capsys.readouterr().err
