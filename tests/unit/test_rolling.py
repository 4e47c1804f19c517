"""The rolling upgrade (nfvcat.cloud.rolling, nfvcat.cloud.rolling_heat): its rules over simulated members, then
on Heat and Nova faked at the HTTP level (tests/unit/cloudfake.py): a VRRP pair whose consoles announce their
roles, updated one member at a time through Heat's pre-update hooks."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import requests

from nfvcat.cloud import rolling, rolling_heat
from nfvcat.cloud.stacks import Bundle, Stacks
from nfvcat.core.errors import UserError
from tests.unit.cloudfake import HEAT, NOVA, cloud, sent  # noqa: F401 (fixture)

BOOT = "[    0.000000] Linux version 6.1.0-28-cloud-amd64\n"


def test_the_role_is_the_last_one_announced_since_the_last_boot() -> None:
    text = BOOT + "NFVCAT-VRRP state=BACKUP instance=vrouter priority=100\nNFVCAT-VRRP state=MASTER instance=vrouter\n"
    assert rolling.role(text) == "MASTER"
    assert rolling.role(text + BOOT + "systemd[1]: Started keepalived\n") is None  # rebooted, nothing said yet
    assert rolling.role(text + BOOT + "NFVCAT-VRRP state=BACKUP instance=vrouter\n") == "BACKUP"
    assert rolling.role("") is None and rolling.role(None) is None


class Pair:
    """Two VRRP members: a is master. ``handover`` makes the other master; ``upgrade`` reboots the member
    (role unknown for ``boot_polls`` polls, then BACKUP, or MASTER when nobody is)."""

    def __init__(self, roles: dict[str, str | None], boot_polls: int = 2, takes_over: bool = True,
                 problems: list[str] | None = None) -> None:
        self.names = sorted(roles)
        self.state = dict(roles)
        self.boot_polls, self.takes_over, self.problems = boot_polls, takes_over, problems or []
        self.log: list[str] = []
        self.booting: dict[str, int] = {}

    def roles(self) -> dict[str, str | None]:
        for n in list(self.booting):
            self.booting[n] -= 1
            if self.booting[n] <= 0:
                del self.booting[n]
                self.state[n] = "BACKUP" if "MASTER" in self.state.values() else "MASTER"
        return dict(self.state)

    def handover(self, name: str) -> None:
        self.log.append(f"handover {name}")
        self.state[name] = None
        if self.takes_over:
            for n in self.names:
                if n != name:
                    self.state[n] = "MASTER"

    def upgrade(self, name: str) -> None:
        self.log.append(f"upgrade {name} (roles {self.state})")
        self.state[name] = None
        self.booting[name] = self.boot_polls

    def rejoined(self, name: str) -> bool:
        return self.roles()[name] is not None

    def placement(self) -> list[str]:
        return self.problems


def roll(pair: Pair, **kw: Any) -> list[rolling.Step]:
    """``rolling.roll`` on a clock that moves 5 s a reading, without sleeping."""
    return rolling.roll(pair, lambda s: None, timeout=30, sleep=lambda s: None,
                        clock=iter(range(0, 10 ** 6, 5)).__next__, **kw)


def test_the_backup_goes_first_and_the_master_hands_over_before_it_is_touched() -> None:
    pair = Pair({"router_a": "MASTER", "router_b": "BACKUP"})
    steps = roll(pair)
    assert pair.log == ["upgrade router_b (roles {'router_a': 'MASTER', 'router_b': 'BACKUP'})", "handover router_a",
                        "upgrade router_a (roles {'router_a': None, 'router_b': 'MASTER'})"]
    assert [(s.member, s.handover) for s in steps] == [("router_b", False), ("router_a", True)]
    assert steps[1].roles_after == {"router_a": "BACKUP", "router_b": "MASTER"}


def test_unknown_roles_refuse_before_anything_is_touched_unless_accepted() -> None:
    pair = Pair({"router_a": None, "router_b": None})
    with pytest.raises(rolling.Stopped, match="the VRRP role of router_a, router_b is unknown"):
        roll(pair)
    assert pair.log == []
    steps = roll(pair, accept_unknown=True)
    assert [s.member for s in steps] == ["router_a", "router_b"] and not any(s.handover for s in steps)


def test_a_master_nobody_takes_over_from_stops_the_upgrade_with_the_members_done_named() -> None:
    pair = Pair({"router_a": "MASTER", "router_b": "BACKUP"}, takes_over=False)
    with pytest.raises(rolling.Stopped, match=r"router_a handed the master role over, but no other member took it"
                       r".*\(members upgraded: router_b\)"):
        roll(pair)
    assert pair.log[-1] == "handover router_a"  # router_a was not upgraded


def test_a_member_that_never_rejoins_or_a_broken_placement_stops_the_upgrade() -> None:
    pair = Pair({"router_a": "MASTER", "router_b": "BACKUP"}, boot_polls=10 ** 6)
    with pytest.raises(rolling.Stopped, match="router_b announced no VRRP role in 30 s after its upgrade"):
        roll(pair)
    assert pair.log == ["upgrade router_b (roles {'router_a': 'MASTER', 'router_b': 'BACKUP'})"]
    broken = Pair({"router_a": "MASTER", "router_b": "BACKUP"}, problems=["members on different hosts FAIL"])
    with pytest.raises(rolling.Stopped, match="after router_b: members on different hosts FAIL"):
        roll(broken)
    assert len(broken.log) == 1


# ---- on Heat and Nova ------------------------------------------------------------------------------------------

class HeatPair:
    """Stack ``pair`` (id s1) with router_a (srv-a, VRRP master, host-1) and router_b (srv-b, host-2) in server
    group grp. Clearing a member's hook rebuilds it (a new boot on its console), or with ``replace`` creates its
    replacement (srv-a2, srv-b2), which Nova can place only once the old server is gone (anti-affinity, two
    hosts)."""

    def __init__(self, m: Any, replace: bool = False) -> None:
        self.m, self.replace = m, replace
        self.events: list[dict[str, Any]] = []
        self.status, self.updated = "CREATE_COMPLETE", "t0"
        self.ids = {"router_a": "srv-a", "router_b": "srv-b"}
        self.server = {"srv-a": "ACTIVE", "srv-b": "ACTIVE"}
        self.host = {"srv-a": "host-1", "srv-b": "host-2"}
        self.console = {"srv-a": BOOT + "NFVCAT-VRRP state=MASTER\n", "srv-b": BOOT + "NFVCAT-VRRP state=BACKUP\n"}
        self.pending: set[str] = set()
        self.fails: set[str] = set()  # members whose update Heat fails
        self.stale = 0  # replacements the scheduler refuses although their host is free (its view is late)
        m.get(f"{HEAT}/stacks/pair/s1", json=lambda r, c: {"stack": {
            "id": "s1", "stack_name": "pair", "stack_status": self.status, "updated_time": self.updated,
            "tags": ["nfvcat:pair@1.0.0"]}})
        m.get(re.compile(rf"^{HEAT}/stacks/pair(/s1)?/resources\?nested_depth=5"), json=lambda r, c: {"resources": [
            *({"resource_name": n, "physical_resource_id": sid, "resource_type": "OS::Nova::Server"}
              for n, sid in self.ids.items()),
            {"resource_name": "group", "physical_resource_id": "grp", "resource_type": "OS::Nova::ServerGroup"}]})
        m.get(re.compile(rf"^{HEAT}/stacks/pair/s1/events"), json=lambda r, c: {"events": self.events})
        m.patch(f"{HEAT}/stacks/pair/s1", json=self._patch, status_code=202)
        m.post(re.compile(rf"^{HEAT}/stacks/pair/s1/resources/\w+/signal$"), json=self._signal)
        m.post(f"{HEAT}/stacks/pair/s1/actions", json={})
        m.get(f"{NOVA}/os-server-groups/grp", json=lambda r, c: {"server_group": {
            "id": "grp", "name": "vrouter-ha", "policy": "anti-affinity", "members": sorted(self.ids.values())}})
        m.get(re.compile(rf"^{NOVA}/servers/detail"), json={"servers": []})  # find_server's search by name
        m.get(re.compile(rf"^{NOVA}/servers/[\w-]+$"), json=self._get)
        m.delete(re.compile(rf"^{NOVA}/servers/[\w-]+$"), json=self._delete, status_code=204)
        m.post(re.compile(rf"^{NOVA}/servers/[\w-]+/action$"), json=lambda r, c: self._action(
            r.path.split("/")[-2], r.json()))

    def _get(self, req: Any, ctx: Any) -> Any:
        sid = req.path.rsplit("/", 1)[-1]
        if sid not in self.server:
            ctx.status_code = 404
            return {"itemNotFound": {"code": 404, "message": f"Instance {sid} could not be found."}}
        return {"server": {"id": sid, "status": self.server[sid], "OS-EXT-SRV-ATTR:host": self.host[sid]}}

    def _delete(self, req: Any, ctx: Any) -> None:
        sid = req.path.rsplit("/", 1)[-1]
        self.host.pop(sid), self.server.pop(sid)

    def event(self, resource: str, status: str, reason: str = "") -> None:
        self.events.append({"id": f"e{len(self.events)}", "resource_name": resource, "resource_status": status,
                            "resource_status_reason": reason, "physical_resource_id": self.ids[resource]})

    def _patch(self, req: Any, ctx: Any) -> dict[str, Any]:
        hook = req.json()["environment"]["resource_registry"]["resources"]["router_a"]["hooks"]
        self.updated = f"t{len(sent(self.m, 'PATCH', '/stacks/pair/s1$'))}"
        if hook == "pre-update":
            self.status = "UPDATE_IN_PROGRESS"
            self.pending = self.pending or {"router_a", "router_b"}  # sent again: the members not done yet
            for r in sorted(self.pending):
                self.event(r, "CREATE_COMPLETE", "UPDATE paused until Hook pre-update is cleared")
        else:
            self.status = "UPDATE_COMPLETE"
        return {}

    def _signal(self, req: Any, ctx: Any) -> dict[str, Any]:
        name = req.path.rsplit("/", 2)[-2]
        assert req.json() == {"unset_hook": "pre-update"} and name in self.pending
        sid = self.ids[name]
        self.event(name, "CREATE_COMPLETE", "Hook pre-update is cleared")  # as Heat says it: the old state
        self.event(name, "UPDATE_IN_PROGRESS", "state changed")
        if self.replace:
            free = {"host-1", "host-2"} - set(self.host.values())
            if not free or self.stale:  # the old server still holds its host: nowhere to put the replacement
                self.stale = max(0, self.stale - 1)
                self.status = "UPDATE_FAILED"
                self.event(name, "CREATE_FAILED", "No valid host was found. There are not enough hosts available.")
                return {}
            self.event(name, "UPDATE_COMPLETE", f'The Resource Server "{name}" [{sid}] Stack "pair" [s1] requires '
                       "replacement.")
            sid = self.ids[name] = f"{sid.split('2')[0]}2"
            self.event(name, "CREATE_IN_PROGRESS", "state changed")
            self.server[sid], self.host[sid], self.console[sid] = "ACTIVE", free.pop(), ""
        if name in self.fails:
            self.event(name, "UPDATE_FAILED", "Rebuilding server failed, status 'ERROR'")
            return {}
        self.console[sid] += BOOT + "NFVCAT-VRRP state=BACKUP\n"  # a new boot, keepalived back up
        self.event(name, "CREATE_COMPLETE" if self.replace else "UPDATE_COMPLETE", "state changed")
        self.pending.discard(name)
        if not self.pending:
            self.status = "UPDATE_COMPLETE"
        return {}

    def _action(self, sid: str, body: dict[str, Any]) -> Any:
        if "os-getConsoleOutput" in body:
            return {"output": self.console[sid]}
        if "os-stop" in body:  # a clean shutdown: keepalived says priority 0, the other takes over at once
            self.server[sid] = "SHUTOFF"
            other = next(s for n, s in self.ids.items() if s != sid)
            self.console[other] += "NFVCAT-VRRP state=MASTER\n"
        if "os-start" in body:
            self.server[sid] = "ACTIVE"
        return None


class Plan:
    stack, stack_id, entry, current, target = "pair", "s1", "pair", "1.0.0", "1.1.0"

    def __init__(self, how: str = "rebuilt (image)") -> None:
        self.servers_down = ["srv-a", "srv-b"]
        self.how_down = dict.fromkeys(self.servers_down, how)


def test_on_heat_each_member_is_let_go_at_its_hook_in_turn_and_the_hooks_are_cleared_after(
        cloud: Any, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811 (fixture)
    m, conn = cloud
    monkeypatch.setattr("nfvcat.core.waiting.time.sleep", lambda s: None)
    monkeypatch.setattr("nfvcat.cloud.rolling.time.sleep", lambda s: None)
    pair = HeatPair(m)
    said: list[str] = []
    b = Bundle({"heat_template_version": "2021-04-16", "resources": {}}, {}, {"parameters": {"x": 1}})
    status, steps = rolling_heat.apply(conn, Stacks(conn, said.append), Plan(), b, {}, [], 600, 600, False)
    assert status == "UPDATE_COMPLETE"
    assert [(s.member, s.handover, s.placement) for s in steps] == [("router_b", False, []), ("router_a", True, [])]
    calls = [(r.method, r.path.rsplit("/", 3)[-3:], r.text) for r in m.request_history
             if r.method in ("PATCH", "POST") and "console" not in (r.text or "").lower()]
    order = [c[1][-2] if c[0] == "POST" and c[1][-1] == "signal" else json.loads(c[2]) if c[0] == "POST" else
             c[0] for c in calls]
    assert order == ["PATCH", "router_b", {"os-stop": None}, "router_a", {"os-start": None}, "PATCH"]
    first, last = (r.json() for r in sent(m, "PATCH", "/stacks/pair/s1$"))
    assert first["environment"] == {"parameters": {"x": 1}, "resource_registry": {"resources": {
        "router_a": {"hooks": "pre-update"}, "router_b": {"hooks": "pre-update"}}}}
    assert last["environment"]["resource_registry"]["resources"] == {"router_a": {"hooks": []},
                                                                     "router_b": {"hooks": []}}
    assert first["tags"] == "nfvcat:pair@1.1.0,nfvcat-from:pair@1.0.0"
    assert pair.server == {"srv-a": "ACTIVE", "srv-b": "ACTIVE"}  # the handed-over member was started again


def test_on_heat_unknown_roles_send_no_update(cloud: Any, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    m, conn = cloud
    pair = HeatPair(m)
    pair.console["srv-b"] = BOOT  # an older day-0: no role line
    b = Bundle({"resources": {}}, {}, {})
    with pytest.raises(UserError, match="the VRRP role of router_b is unknown"):
        rolling_heat.apply(conn, Stacks(conn, lambda s: None), Plan(), b, {}, [], 600, 600, False)
    assert sent(m, "PATCH", "/stacks/pair/s1$") == [] and sent(m, "POST", "/signal$") == []


def test_on_heat_a_stack_without_two_members_going_down_is_refused(cloud: Any) -> None:  # noqa: F811
    m, conn = cloud
    HeatPair(m)
    plan = Plan()
    plan.servers_down = ["srv-a"]
    with pytest.raises(UserError, match="no server group of which the upgrade takes two or more members down"):
        rolling_heat.apply(conn, Stacks(conn, lambda s: None), plan, Bundle({}, {}, {}), {}, [], 600, 600, False)


def test_on_heat_a_member_whose_update_fails_stops_the_upgrade_and_cancels_the_rest(
        cloud: Any, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811 (fixture)
    m, conn = cloud
    monkeypatch.setattr("nfvcat.core.waiting.time.sleep", lambda s: None)
    pair = HeatPair(m)
    pair.fails.add("router_b")
    with pytest.raises(UserError, match="the update of router_b failed: Rebuilding server failed"):
        rolling_heat.apply(conn, Stacks(conn, lambda s: None), Plan(), Bundle({}, {}, {}), {}, [], 600, 600, False)
    assert [r.json() for r in sent(m, "POST", "/actions$")] == [{"cancel_without_rollback": None}]
    assert [r.path.rsplit("/", 2)[-2] for r in sent(m, "POST", "/signal$")] == ["router_b"]  # router_a untouched
    assert not any("os-stop" in r.text for r in sent(m, "POST", "/servers/"))  # the master never handed over


def test_on_heat_a_member_the_update_replaces_is_deleted_first_so_its_replacement_finds_its_host(
        cloud: Any, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811 (fixture)
    m, conn = cloud
    monkeypatch.setattr("nfvcat.core.waiting.time.sleep", lambda s: None)
    monkeypatch.setattr("nfvcat.cloud.rolling.time.sleep", lambda s: None)
    pair = HeatPair(m, replace=True)
    status, steps = rolling_heat.apply(conn, Stacks(conn, lambda s: None), Plan("replaced"), Bundle({}, {}, {}), {},
                                       [], 600, 600, False)
    assert status == "UPDATE_COMPLETE" and [s.placement for s in steps] == [[], []]
    assert pair.ids == {"router_a": "srv-a2", "router_b": "srv-b2"}
    assert pair.host == {"srv-a2": "host-1", "srv-b2": "host-2"}  # each replacement on the host it freed
    order = [f"{r.method} {r.path.rsplit('/', 2)[-2] if r.path.endswith('/signal') else r.path.rsplit('/', 1)[-1]}"
             for r in m.request_history if r.method == "DELETE" or r.path.endswith("/signal")]
    assert order == ["DELETE srv-b", "POST router_b", "DELETE srv-a", "POST router_a"]
    # the master was stopped (handed over) before it was deleted, and its replacement is not started by nfvcat
    assert [r.path.split("/")[-2] for r in sent(m, "POST", "/servers/[\\w-]+/action$") if "os-stop" in r.text] == \
        ["srv-a"]
    assert not any("os-start" in r.text for r in sent(m, "POST", "/action$"))


def test_on_heat_without_the_slot_freed_the_replacement_finds_no_host(cloud: Any) -> None:  # noqa: F811
    # the fake itself: what Nova does to a replacement created before the server it replaces is deleted
    m, _ = cloud
    pair = HeatPair(m, replace=True)
    pair.pending = {"router_b"}
    requests.post(f"{HEAT}/stacks/pair/s1/resources/router_b/signal", json={"unset_hook": "pre-update"},
                  timeout=5)
    assert pair.events[-1]["resource_status"] == "CREATE_FAILED"


def test_on_heat_a_replacement_the_scheduler_refuses_for_a_while_is_sent_again(
        cloud: Any, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811 (fixture)
    m, conn = cloud
    slept: list[float] = []
    monkeypatch.setattr("nfvcat.core.waiting.time.sleep", lambda s: None)
    monkeypatch.setattr("nfvcat.cloud.rolling_heat.time.sleep", slept.append)
    pair = HeatPair(m, replace=True)
    pair.stale = 2  # the scheduler's view of the freed host is late twice (as seen on the dev cloud)
    said: list[str] = []
    status, steps = rolling_heat.apply(conn, Stacks(conn, said.append), Plan("replaced"), Bundle({}, {}, {}), {},
                                       [], 600, 600, False)
    assert status == "UPDATE_COMPLETE" and pair.ids == {"router_a": "srv-a2", "router_b": "srv-b2"}
    assert [(s.member, s.placement) for s in steps] == [("router_b", []), ("router_a", [])]
    signals = [r.path.rsplit("/", 2)[-2] for r in sent(m, "POST", "/signal$")]
    assert signals == ["router_b", "router_b", "router_b", "router_a"]
    assert len(sent(m, "PATCH", "/stacks/pair/s1$")) == 4  # the update, twice again, then without the hooks
    assert [r.path.rsplit("/", 1)[-1] for r in m.request_history if r.method == "DELETE"] == ["srv-b", "srv-a"]
    assert sum(1 for s in said if "its replacement found no host" in s) == 2 and slept.count(30.0) == 2
