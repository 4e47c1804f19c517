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
    hosts).

    Heat as the dev cloud showed it (Heat 27, convergence, one engine): every member whose environment has the
    hook is held at it by each update, whether the update changes it or not; an update that fails leaves its held
    members' threads waiting, and when such a member is let go in a later update that old thread takes the signal
    and the new one holds it again (then the stack ends UPDATE_FAILED, "resource with id N not found", with every
    resource complete); a later update deletes a failed replacement first, and while it does, a signal to the
    member's name reaches that row and is refused."""

    def __init__(self, m: Any, replace: bool = False) -> None:
        self.m, self.replace = m, replace
        self.events: list[dict[str, Any]] = []
        self.status, self.updated, self.reason = "CREATE_COMPLETE", "t0", ""
        self.ids = {"router_a": "srv-a", "router_b": "srv-b"}
        self.server = {"srv-a": "ACTIVE", "srv-b": "ACTIVE"}
        self.host = {"srv-a": "host-1", "srv-b": "host-2"}
        self.console = {"srv-a": BOOT + "NFVCAT-VRRP state=MASTER\n", "srv-b": BOOT + "NFVCAT-VRRP state=BACKUP\n"}
        self.pending: set[str] = set()  # members the current update has not finished
        self.waiting: dict[str, int] = {"router_a": 0, "router_b": 0}  # threads held at each member's hook
        self.failed_rows: set[str] = set()  # members whose replacement failed (its row is deleted next update)
        self.deleting: set[str] = set()  # members whose failed row the current update deletes
        self.old_thread = False  # a thread of a failed update took a signal in the current one
        self.fails: set[str] = set()  # members whose update Heat fails
        self.stale = 0  # replacements the scheduler refuses although their host is free (its view is late)
        self.stale_for: str | None = None  # only this member's (None: any member's)
        self.terminating = 0  # polls of a deleted server's actions before its host finishes deleting it
        m.get(f"{HEAT}/stacks/pair/s1", json=lambda r, c: {"stack": {
            "id": "s1", "stack_name": "pair", "stack_status": self.status, "updated_time": self.updated,
            "stack_status_reason": self.reason, "disable_rollback": True, "tags": ["nfvcat:pair@1.0.0"]}})
        m.get(re.compile(rf"^{HEAT}/stacks/pair(/s1)?/resources\?nested_depth=5"), json=lambda r, c: {"resources": [
            *({"resource_name": n, "physical_resource_id": sid, "resource_type": "OS::Nova::Server",
               "resource_status": "CREATE_FAILED" if n in self.failed_rows else "CREATE_COMPLETE"}
              for n, sid in self.ids.items()),
            {"resource_name": "group", "physical_resource_id": "grp", "resource_type": "OS::Nova::ServerGroup",
             "resource_status": "CREATE_COMPLETE"}]})
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
        m.get(re.compile(rf"^{NOVA}/servers/[\w-]+/os-instance-actions$"), json=lambda r, c: {"instanceActions": [
            {"action": "create", "request_id": "req-create", "start_time": "2026-11-29T00:00:00.000000"},
            {"action": "delete", "request_id": "req-delete", "start_time": "2026-11-29T01:00:00.000000"}]})
        m.get(re.compile(rf"^{NOVA}/servers/[\w-]+/os-instance-actions/req-delete$"), json=self._delete_action)

    def _get(self, req: Any, ctx: Any) -> Any:
        sid = req.path.rsplit("/", 1)[-1]
        if sid not in self.server:
            ctx.status_code = 404
            return {"itemNotFound": {"code": 404, "message": f"Instance {sid} could not be found."}}
        return {"server": {"id": sid, "status": self.server[sid], "OS-EXT-SRV-ATTR:host": self.host[sid]}}

    def _delete(self, req: Any, ctx: Any) -> None:
        sid = req.path.rsplit("/", 1)[-1]
        self.host.pop(sid), self.server.pop(sid)

    def _delete_action(self, req: Any, ctx: Any) -> dict[str, Any]:
        finished = self.terminating <= 0
        self.terminating -= 1
        return {"instanceAction": {"action": "delete", "request_id": "req-delete", "events": [
            {"event": "compute_terminate_instance", "start_time": "2026-11-29T01:00:01.000000",
             "finish_time": "2026-11-29T01:00:03.000000" if finished else None, "result": None}]}}

    def event(self, resource: str, status: str, reason: str = "") -> None:
        self.events.append({"id": f"e{len(self.events)}", "resource_name": resource, "resource_status": status,
                            "resource_status_reason": reason, "physical_resource_id": self.ids[resource]})

    def _patch(self, req: Any, ctx: Any) -> dict[str, Any]:
        registry = req.json()["environment"]["resource_registry"]["resources"]
        held = sorted(n for n, r in registry.items() if r["hooks"] == "pre-update")
        self.updated = f"t{len(sent(self.m, 'PATCH', '/stacks/pair/s1$'))}"
        self.reason, self.old_thread = "", False
        if not held and not self.pending:  # the update that clears the hooks: nothing changes
            self.status, self.deleting = "UPDATE_COMPLETE", set()
            return {}
        self.status = "UPDATE_IN_PROGRESS"
        for name in sorted(self.failed_rows):  # the failed replacement, deleted first
            self.event(name, "DELETE_IN_PROGRESS", "state changed")
            self.event(name, "DELETE_COMPLETE", "state changed")
        self.deleting, self.failed_rows = set(self.failed_rows), set()
        going = self.pending - set(held)
        self.pending |= set(held) if not self.pending else set()  # sent again: the members not done yet
        for name in held:  # held by this update, changed or not
            self.waiting[name] += 1
            self.event(name, "CREATE_COMPLETE", "UPDATE paused until Hook pre-update is cleared")
        for name in sorted(going):  # not held: goes at once
            self._go(name)
        return {}

    def _signal(self, req: Any, ctx: Any) -> dict[str, Any]:
        name = req.path.rsplit("/", 2)[-2]
        assert req.json() == {"unset_hook": "pre-update"}
        if name in self.deleting:
            ctx.status_code = 400
            self.event(name, "DELETE_COMPLETE", "Cannot signal resource during DELETE")
            return {"code": 400, "error": {"type": "NotSupported",
                                           "message": "Signal resource during DELETE is not supported."}}
        if not self.waiting[name]:
            ctx.status_code = 400
            return {"code": 400, "error": {"type": "InvalidBreakPointHook", "message": f'The "pre-update" hook is '
                                           f'not defined on Server "{name}" [{self.ids[name]}] Stack "pair" [s1]'}}
        self.event(name, "CREATE_COMPLETE", "Hook pre-update is cleared")  # as Heat says it: the old state
        if self.waiting[name] > 1:  # a failed update's thread takes it; this update's holds the member again
            self.event(name, "UPDATE_IN_PROGRESS", "state changed")
            self.waiting[name], self.old_thread = 1, True
            self.event(name, "UPDATE_COMPLETE", "UPDATE paused until Hook pre-update is cleared")
            return {}
        self.waiting[name] = 0
        self._go(name)
        return {}

    def _go(self, name: str) -> None:
        sid = self.ids[name]
        self.event(name, "UPDATE_IN_PROGRESS", "state changed")
        if self.replace:
            free = {"host-1", "host-2"} - set(self.host.values())
            if not free or (self.stale and self.stale_for in (None, name)):  # nowhere to put the replacement
                self.stale = max(0, self.stale - 1)
                self.status, self.reason = "UPDATE_FAILED", "Resource CREATE failed: No valid host was found."
                self.failed_rows.add(name)
                self.event(name, "CREATE_FAILED", "No valid host was found. There are not enough hosts available.")
                return
            self.event(name, "UPDATE_COMPLETE", f'The Resource Server "{name}" [{sid}] Stack "pair" [s1] requires '
                       "replacement.")
            sid = self.ids[name] = f"{sid.split('2')[0]}2"
            self.event(name, "CREATE_IN_PROGRESS", "state changed")
            self.server[sid], self.host[sid], self.console[sid] = "ACTIVE", free.pop(), ""
        if name in self.fails:
            self.event(name, "UPDATE_FAILED", "Rebuilding server failed, status 'ERROR'")
            return
        self.console[sid] += BOOT + "NFVCAT-VRRP state=BACKUP\n"  # a new boot, keepalived back up
        self.event(name, "CREATE_COMPLETE" if self.replace else "UPDATE_COMPLETE", "state changed")
        self.pending.discard(name)
        if not self.pending:
            self.status, self.reason = ("UPDATE_FAILED", "resource with id 9 not found") if self.old_thread else \
                ("UPDATE_COMPLETE", "")

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


@pytest.fixture
def replaced(cloud: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any, HeatPair, list[float]]:  # noqa: F811
    """The pair whose members the update replaces, each pause recorded and not taken."""
    m, conn = cloud
    slept: list[float] = []
    monkeypatch.setattr("nfvcat.core.waiting.time.sleep", slept.append)  # the time module's: every pause
    return m, conn, HeatPair(m, replace=True), slept


def roll_replaced(conn: Any, said: list[str] | None = None) -> tuple[str, list[rolling.Step]]:
    """The rolling upgrade of the pair whose members the update replaces."""
    return rolling_heat.apply(conn, Stacks(conn, (said if said is not None else []).append), Plan("replaced"),
                              Bundle({}, {}, {}), {}, [], 600, 600, False)


def held_by_update(m: Any) -> list[list[str]]:
    """The members each update sent held at their hook, in order."""
    return [sorted(n for n, r in p.json()["environment"]["resource_registry"]["resources"].items()
                   if r["hooks"] == "pre-update") for p in sent(m, "PATCH", "/stacks/pair/s1$")]


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


def test_on_heat_a_member_the_update_replaces_is_deleted_first_so_its_replacement_finds_its_host(replaced: Any) -> None:
    m, conn, pair, _ = replaced
    status, steps = roll_replaced(conn)
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
    pair.pending, pair.waiting["router_b"] = {"router_b"}, 1
    requests.post(f"{HEAT}/stacks/pair/s1/resources/router_b/signal", json={"unset_hook": "pre-update"},
                  timeout=5)
    assert pair.events[-1]["resource_status"] == "CREATE_FAILED"


def test_on_heat_a_signal_while_the_failed_replacement_is_deleted_is_refused(cloud: Any) -> None:  # noqa: F811
    # the fake itself: what the dev cloud answered to the update sent again with the member held (CI, 2026-11-29)
    m, _ = cloud
    pair = HeatPair(m, replace=True)
    pair.failed_rows, pair.pending = {"router_b"}, {"router_b"}
    env: dict[str, Any] = {"resource_registry": {"resources": {"router_a": {"hooks": []},
                                                               "router_b": {"hooks": "pre-update"}}}}
    requests.patch(f"{HEAT}/stacks/pair/s1", json={"environment": env}, timeout=5)
    res = requests.post(f"{HEAT}/stacks/pair/s1/resources/router_b/signal", json={"unset_hook": "pre-update"},
                        timeout=5)
    assert res.status_code == 400 and "Signal resource during DELETE" in res.text


def test_on_heat_a_replacement_the_scheduler_refuses_for_a_while_is_sent_again(replaced: Any) -> None:
    """The backup's replacement is refused twice. The update is sent again with only the master held (the backup's
    server is gone already: it goes at once, and no signal reaches Heat's failed row); the master, still held by
    the failed updates' threads, is held again after its first signal and let go again; Heat then ends the
    update UPDATE_FAILED with everything complete, and the update that clears the hooks settles it."""
    m, conn, pair, slept = replaced
    pair.stale = 2  # the scheduler's view of the freed host is late twice (as seen on the dev cloud)
    said: list[str] = []
    status, steps = roll_replaced(conn, said)
    assert status == "UPDATE_COMPLETE" and pair.ids == {"router_a": "srv-a2", "router_b": "srv-b2"}
    assert pair.host == {"srv-a2": "host-1", "srv-b2": "host-2"}
    assert [(s.member, s.placement) for s in steps] == [("router_b", []), ("router_a", [])]
    signals = [r.path.rsplit("/", 2)[-2] for r in sent(m, "POST", "/signal$")]
    assert signals == ["router_b", "router_a", "router_a"]
    assert held_by_update(m) == [["router_a", "router_b"], ["router_a"], ["router_a"], []]
    assert [r.path.rsplit("/", 1)[-1] for r in m.request_history if r.method == "DELETE"] == ["srv-b", "srv-a"]
    assert sum(1 for s in said if "its replacement found no host" in s) == 2 and slept.count(30.0) == 2
    assert any("held at its hook again" in s for s in said)
    assert any("Heat ended the rolling update UPDATE_FAILED (resource with id 9 not found)" in s for s in said)


def test_on_heat_the_last_members_replacement_refused_is_sent_again_without_a_signal(replaced: Any) -> None:
    # as in CI on 2026-11-29: the last member's replacement refused; the update sent again holds nobody, and no
    # signal goes to the member's name while Heat deletes the failed replacement (400 "during DELETE")
    m, conn, pair, _ = replaced
    pair.stale, pair.stale_for = 1, "router_a"
    said: list[str] = []
    status, steps = roll_replaced(conn, said)
    assert status == "UPDATE_COMPLETE" and pair.host == {"srv-a2": "host-1", "srv-b2": "host-2"}
    assert [s.member for s in steps] == ["router_b", "router_a"]
    assert [r.path.rsplit("/", 2)[-2] for r in sent(m, "POST", "/signal$")] == ["router_b", "router_a"]
    assert held_by_update(m) == [["router_a", "router_b"], [], []]
    assert "router_a: its replacement found no host; the update again (try 2)" in said
    assert not any("Heat ended the rolling update" in s for s in said)


def test_on_heat_a_failed_update_with_a_resource_not_complete_is_not_settled_over(replaced: Any) -> None:
    # the same, but a resource of the stack is left failed: the update that clears the hooks would replace it
    m, conn, pair, _ = replaced
    pair.stale = 1
    real = pair._go

    def go(name: str) -> None:
        real(name)
        if not pair.pending:
            pair.failed_rows.add("router_a")
    pair._go = go
    with pytest.raises(UserError, match=r"the rolling update ended UPDATE_FAILED: .* \(router_a CREATE_FAILED\)"):
        roll_replaced(conn)
    assert len(sent(m, "PATCH", "/stacks/pair/s1$")) == 2  # the update and the one sent again; hooks not cleared


def test_on_heat_a_deleted_members_replacement_waits_for_its_host_to_finish_deleting_it(replaced: Any) -> None:
    m, conn, pair, _ = replaced
    pair.terminating = 3  # the host is still deleting the server for three polls after the API lost it
    said: list[str] = []
    roll_replaced(conn, said)
    order = [("DELETE " if r.method == "DELETE" else "") + r.path.rsplit("/", 1)[-1] if r.method == "DELETE" or
             "os-instance-actions" in r.path else f"signal {r.path.rsplit('/', 2)[-2]}" for r in m.request_history
             if r.method == "DELETE" or "os-instance-actions/" in r.path or r.path.endswith("/signal")]
    assert order[:6] == ["DELETE srv-b", "req-delete", "req-delete", "req-delete", "req-delete", "signal router_b"]
    assert any("its host finished deleting server srv-b" in s for s in said)


def test_on_heat_a_cloud_that_shows_no_delete_event_gets_the_settle_time(replaced: Any) -> None:
    m, conn, _, slept = replaced
    m.get(re.compile(rf"^{NOVA}/servers/[\w-]+/os-instance-actions$"), status_code=403,
          json={"forbidden": {"code": 403, "message": "Policy doesn't allow os_compute_api:os-instance-actions:list"}})
    said: list[str] = []
    status, _ = roll_replaced(conn, said)
    assert status == "UPDATE_COMPLETE"
    assert sum(1 for s in said if "the cloud shows no compute_terminate_instance event" in s) == 2
    assert slept.count(rolling_heat.SCHEDULER_SETTLE) == 2
