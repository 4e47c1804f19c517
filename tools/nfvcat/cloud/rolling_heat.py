"""The rolling upgrade on Heat (``upgrade --rolling``, rules in ``nfvcat.cloud.rolling``): the members of the
stack's server groups that the upgrade takes down are its members.

Heat updates every resource it can at once; its breakpoints hold each member back. The update is sent with a
``pre-update`` hook on every member (the environment's ``resource_registry``), so Heat pauses before touching
any of them; each member is let go in turn by clearing its hook (``unset_hook`` signal), and its update (Nova's
rebuild or a replacement) is waited for before the next. The update is sent only when the first member is let
go: a refusal before it (unknown roles) changes nothing. A member the update replaces is deleted first
(``_free_slot``): Heat creates a replacement before deleting what it replaces, which an anti-affinity group as
large as its hosts cannot place. A replacement Nova's scheduler still refuses is sent again with the hooks only on
the members still waiting their turn: Heat pauses every resource that has a hook, changed or not, and while it
deletes the failed replacement a signal to the member's name reaches that row and is refused ("Signal resource
during DELETE"). Once every member is done and the stack complete, a second update of the same template clears
the hooks, so no later update stops at them. A member that ``handover`` stopped (Nova's clean
shutdown) and that is rebuilt, not replaced, is started again after its update.

A member's role comes from its console log (Nova's ``os-getConsoleOutput``), read since its last boot; after its
upgrade it has rejoined once its console shows a boot it did not show before, and a role after it.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import Any

from nfvcat.cloud import redundancy_check, rolling
from nfvcat.cloud.connect import call
from nfvcat.cloud.readiness import console
from nfvcat.cloud.stacks import Bundle, Stacks
from nfvcat.cloud.verdicts import PASS
from nfvcat.core.errors import EXIT_FINDINGS, EXIT_USAGE, UserError
from nfvcat.core.waiting import TimedOut, until

HOOK = "pre-update"
PAUSED = "paused until Hook pre-update is cleared"
DONE = ("UPDATE_COMPLETE", "CREATE_COMPLETE")
SERVER = "OS::Nova::Server"
SCHEDULER_SETTLE = 10.0  # s after Nova's compute host finished deleting a member before Heat may place its replacement
TERMINATED = "compute_terminate_instance"  # the compute host's event of a delete: it ends after the host told the
# scheduler of the deletion (``_complete_deletion``); events are shown to the server's owner from microversion 2.51
ACTIONS_MICROVERSION = "2.51"
NO_HOST_RETRIES, NO_HOST_WAIT = 5, 30.0  # a replacement that found no host: sent again, 30 s apart (Nova's
# scheduler_instance_sync_interval, after which every compute host has told the scheduler its instances, is 120 s)
GONE_ON = ("hook is not defined", "Signal resource during DELETE")  # Heat's 400s to a member no longer held
PLACEMENT_CHECKS = ("anti-affinity policy", "members (>= 2 servers of the stack)", "members on different hosts")


def _ended(ev: dict[str, Any]) -> bool:
    """Whether a member's event ends its update. Heat's own events on the way are not: the hook cleared (said with
    the resource's old state, CREATE_COMPLETE), and "requires replacement" (UPDATE_COMPLETE, before the
    replacement's CREATE_IN_PROGRESS and CREATE_COMPLETE)."""
    status, reason = str(ev.get("resource_status")), str(ev.get("resource_status_reason") or "")
    if status.endswith("FAILED"):
        return True
    return status in DONE and "Hook" not in reason and "requires replacement" not in reason


def members_of(conn: Any, stacks: Stacks, name: str, sid: str, servers_down: list[str]) -> dict[str, str]:
    """Resource name -> server id of the stack's top-level servers that are in one of its Nova server groups and
    that the upgrade takes down (``servers_down``); an error when fewer than two are, or a member is nested."""
    resources = stacks.resources(name, sid)
    groups = [str(r["physical_resource_id"]) for r in resources
              if r.get("resource_type") == "OS::Nova::ServerGroup" and r.get("physical_resource_id")]
    in_groups: set[str] = set()
    for gid in groups:
        body = call(conn.compute, "GET", f"/os-server-groups/{gid}", f"server group {gid}",
                    microversion=redundancy_check.GROUP_MICROVERSION, ok=(200, 404))
        in_groups |= {str(m) for m in ((body or {}).get("server_group") or {}).get("members") or []}
    out, nested = {}, []
    for r in resources:
        server = str(r.get("physical_resource_id") or "")
        if r.get("resource_type") != SERVER or server not in in_groups or server not in servers_down:
            continue
        if r.get("parent_resource"):
            nested.append(f"{r['parent_resource']}/{r['resource_name']}")
        else:
            out[str(r["resource_name"])] = server
    if nested:
        raise UserError(f"--rolling: members in nested stacks ({', '.join(nested)}) are not supported; upgrade "
                        "without --rolling", EXIT_USAGE)
    if len(out) < 2:
        raise UserError(f"--rolling: {name} has no server group of which the upgrade takes two or more members "
                        f"down (members it takes down: {', '.join(sorted(out)) or 'none'}); upgrade without "
                        "--rolling", EXIT_USAGE)
    return out


def hooks(environment: dict[str, Any], names: list[str], held: list[str]) -> dict[str, Any]:
    """The environment with the pre-update hook on each resource of ``held`` and none (``[]``, which clears what an
    earlier update set) on the other resources of ``names``."""
    env = copy.deepcopy(environment or {})
    registry = env.setdefault("resource_registry", {}).setdefault("resources", {})
    for name in names:
        registry.setdefault(name, {})["hooks"] = HOOK if name in held else []
    return env


@dataclass
class HeatMembers:
    """The members of a stack's server group as ``rolling.Members``; ``send(environment)`` sends the update."""

    conn: Any
    stacks: Stacks
    stack: str
    stack_id: str
    servers: dict[str, str]  # resource -> server id
    send: Any  # callable(the members held at their hook) -> None: sends the update
    timeout: float
    replaced: set[str] = field(default_factory=set)  # members the update replaces (the others are rebuilt)
    settle: float = SCHEDULER_SETTLE
    names: list[str] = field(default_factory=list)
    sent: bool = False
    done: set[str] = field(default_factory=set)  # members whose update ended
    retried: bool = False  # an update was sent again (a replacement the scheduler refused)
    stopped: set[str] = field(default_factory=set)
    boots: dict[str, int] = field(default_factory=dict)  # boots seen on the console before the member's upgrade
    seen: set[str] = field(default_factory=set)  # event ids already looked at

    def __post_init__(self) -> None:
        self.names = sorted(self.servers)

    def _console(self, name: str) -> str:
        return console(self.conn, self.servers[name]) or ""

    def roles(self) -> dict[str, str | None]:
        return {n: rolling.role(self._console(n)) for n in self.names}

    def handover(self, name: str) -> None:
        compute = self.conn.compute
        compute.stop_server(self.servers[name])
        self.stopped.add(name)
        self._server_status(name, "SHUTOFF")

    def _server_status(self, name: str, want: str) -> None:
        compute = self.conn.compute
        try:
            status = until(lambda: compute.get_server(self.servers[name]).status, lambda s: s in (want, "ERROR"),
                           timeout=self.timeout, what=f"{name} {want}", first=1.0, most=4.0)
        except TimedOut as exc:
            raise UserError(f"--rolling: {exc}", EXIT_FINDINGS) from None
        if status != want:
            raise UserError(f"--rolling: {name} (server {self.servers[name]}) went to ERROR", EXIT_FINDINGS)

    def upgrade(self, name: str) -> None:
        self.boots[name] = len(rolling.BOOT.findall(self._console(name)))
        if not self.sent:
            self._send(self.names)
            self.sent = True
        tries = [0]

        def attempt() -> dict[str, Any]:
            if tries[0]:  # the scheduler may still count the deleted server on its host: it learns of a deletion
                # by an asynchronous message from the compute host, at the latest at that host's next instance sync
                self.stacks.say(f"{name}: its replacement found no host; the update again (try {tries[0] + 1})")
                # its server is gone already: the member goes at once, the ones after it stay held
                self._send([n for n in self.names if n not in self.done and n != name])
                self.retried = True
            else:
                self._wait_event(name, lambda ev: PAUSED in str(ev.get("resource_status_reason") or ""),
                                 "held at its hook")
                if name in self.replaced:
                    self._free_slot(name)
                self._let_go(name)
            tries[0] += 1
            return self._wait_event(name, finished, "updated")

        def finished(ev: dict[str, Any]) -> bool:
            if PAUSED in str(ev.get("resource_status_reason") or ""):
                # held again: the update that failed still had the member at its hook, and its thread took the
                # signal (it goes no further: its update is not the stack's current one)
                self.stacks.say(f"{name}: held at its hook again (by the update sent again); let go again")
                self._let_go(name, again=True)
                return False
            return _ended(ev)

        def placed(ev: dict[str, Any]) -> bool:
            no_host = name in self.replaced and "No valid host" in str(ev.get("resource_status_reason") or "")
            return not no_host or tries[0] > NO_HOST_RETRIES

        try:
            ended = until(attempt, placed, timeout=self.timeout, what=f"{name} placed",
                          state=lambda ev: ev.get("resource_status"), first=NO_HOST_WAIT, most=NO_HOST_WAIT)
        except TimedOut as exc:
            raise UserError(f"--rolling: {exc}", EXIT_FINDINGS) from None
        if str(ended.get("resource_status")).endswith("FAILED"):
            raise UserError(f"--rolling: the update of {name} failed: {ended.get('resource_status_reason')}",
                            EXIT_FINDINGS)
        self.done.add(name)
        # replaced: the new server is the member (Heat's resource list may still show the old row for a while)
        new = str(ended.get("physical_resource_id") or "") if ended.get("resource_status") == "CREATE_COMPLETE" \
            else ""
        if new and new != self.servers[name]:
            self.servers[name] = new
            self.boots[name] = 0
            self.stopped.discard(name)
        if name in self.stopped:  # a rebuild keeps a stopped server stopped
            self.conn.compute.start_server(self.servers[name])
            self.stopped.discard(name)
        self._server_status(name, "ACTIVE")

    def _let_go(self, name: str, again: bool = False) -> None:
        """Clear the member's hook. ``again``: held a second time, by a thread of the failed update, which Heat may
        already have let go on (400: its hook "is not defined"), or after the member's replacement, while Heat
        deletes the row it replaced (400: "Signal resource during DELETE"); either way nothing waits at it."""
        what = f"clear the {HOOK} hook of {name}"
        body = call(self.stacks.api, "POST", f"/stacks/{self.stack}/{self.stack_id}/resources/{name}/signal", what,
                    json={"unset_hook": HOOK}, ok=(200, 204, 400) if again else (200, 204))
        if again and body and not any(gone in str(body) for gone in GONE_ON):
            raise UserError(f"{what}: HTTP 400: {body}", EXIT_USAGE)

    def _send(self, held: list[str]) -> None:
        """The update, with the members ``held`` at their hook; the events before it are not looked at again (a
        member held by an earlier update is let go at its hook in this one)."""
        self.seen |= {str(ev["id"]) for ev in self.stacks.events(self.stack, self.stack_id)}
        self.send(held)

    def _free_slot(self, name: str) -> None:
        """Delete the member's server before Heat replaces it: Heat creates a replacement before it deletes the
        server it replaces, and in an anti-affinity group with as many members as hosts it can take (the pair on
        two) the replacement would find no host. Its ports are the stack's and stay; Heat's replacement takes them
        and its host."""
        compute, sid = self.conn.compute, self.servers[name]
        self.stacks.say(f"{name}: deleting server {sid}, so that its replacement can take its host")
        compute.delete_server(sid)
        try:
            until(lambda: compute.find_server(sid, ignore_missing=True), lambda s: s is None, timeout=self.timeout,
                  what=f"{name} server {sid} deleted", state=lambda s: s.status, first=1.0, most=4.0)
        except TimedOut as exc:
            raise UserError(f"--rolling: {exc}", EXIT_FINDINGS) from None
        # Nova's anti-affinity filter counts the group's members (a deleted server stays one) among the instances
        # the scheduler believes each host has. The compute host tells the scheduler of a deletion by an
        # asynchronous message, after the server is gone from the API; its delete event ends after that message
        # is sent. On the dev cloud a replacement sent as soon as the server was gone from the API found no valid
        # host in 1 of 4 runs (ServerGroupAntiAffinityFilter returned 0 hosts).
        self._terminated(name, sid)
        time.sleep(self.settle)
        self.stopped.discard(name)

    def _terminated(self, name: str, sid: str) -> None:
        """Wait until the compute host's event of the server's delete ended (the server's instance actions, which
        Nova shows for a deleted server); said, and not waited for, when the cloud shows no such event."""
        compute = self.conn.compute

        def event() -> dict[str, Any] | None:
            body = call(compute, "GET", f"/servers/{sid}/os-instance-actions", f"the actions of server {sid}",
                        microversion=ACTIONS_MICROVERSION, ok=(200, 403, 404)) or {}
            deletes = [a for a in body.get("instanceActions") or [] if a.get("action") == "delete"]
            if not deletes:
                return None
            rid = max(deletes, key=lambda a: str(a.get("start_time") or ""))["request_id"]
            action = (call(compute, "GET", f"/servers/{sid}/os-instance-actions/{rid}", f"action {rid} of {sid}",
                           microversion=ACTIONS_MICROVERSION, ok=(200, 403, 404)) or {}).get("instanceAction") or {}
            return next((e for e in action.get("events") or [] if e.get("event") == TERMINATED), None)

        first = event()
        if first is None:
            self.stacks.say(f"{name}: the cloud shows no {TERMINATED} event of server {sid}; its replacement is "
                            f"sent {self.settle:g} s after the server is gone")
            return
        t0 = time.monotonic()
        if not first.get("finish_time"):
            try:
                until(event, lambda e: e is None or bool(e.get("finish_time")), timeout=self.timeout,
                      what=f"{name} server {sid} deleted on its host", state=lambda e: "deleting", first=1.0,
                      most=4.0)
            except TimedOut as exc:
                raise UserError(f"--rolling: {exc}", EXIT_FINDINGS) from None
        self.stacks.say(f"{name}: its host finished deleting server {sid} ({time.monotonic() - t0:.1f} s after it was "
                        f"gone from the API); its replacement goes in {self.settle:g} s")

    def _wait_event(self, name: str, match: Any, what: str) -> dict[str, Any]:
        """The first event of resource ``name`` not looked at before that ``match``es (waited for)."""
        def poll() -> dict[str, Any] | None:
            for ev in self.stacks.events(self.stack, self.stack_id):
                if str(ev["id"]) in self.seen or ev.get("resource_name") != name:
                    continue
                self.seen.add(str(ev["id"]))
                if match(ev):
                    return ev
            return None

        try:
            found = until(poll, lambda ev: ev is not None, timeout=self.timeout, what=f"{name} {what}",
                          state=lambda ev: "waiting", first=1.0, most=4.0)
        except TimedOut as exc:
            raise UserError(f"--rolling: {exc}", EXIT_FINDINGS) from None
        return found or {}

    def rejoined(self, name: str) -> bool:
        text = self._console(name)
        return len(rolling.BOOT.findall(text)) > self.boots.get(name, 0) and rolling.role(text) is not None

    def placement(self) -> list[str]:
        return [f"{v.subject}: {v.check} {v.status}: {v.detail}"
                for v in redundancy_check.check(self.conn, self.stack)
                if v.check in PLACEMENT_CHECKS and v.status != PASS]


def apply(conn: Any, stacks: Stacks, p: Any, b: Bundle, params: dict[str, Any], clear: list[str], timeout: float,
          stall: float, accept_unknown: bool) -> tuple[str, list[rolling.Step]]:
    """The upgrade of plan ``p`` one member at a time: the stack's final status and the steps."""
    from nfvcat.cloud.upgrade import settle, update_body

    name, sid = p.stack, p.stack_id
    servers = members_of(conn, stacks, name, sid, p.servers_down)
    tags = stacks.get(name, sid).get("tags")

    def send(held: list[str]) -> None:
        body = update_body(b, params, clear, tags, p.entry, p.target, int(timeout // 60) + 1, p.current)
        body["environment"] = hooks(b.environment, sorted(servers), held)
        body["disable_rollback"] = True  # a member that fails stops the upgrade; the ones done stay done
        call(stacks.api, "PATCH", f"/stacks/{name}/{sid}", f"stack update {name}", json=body)

    members = HeatMembers(conn, stacks, name, sid, servers, send, timeout,
                          {n for n, server in servers.items() if p.how_down.get(server) == "replaced"})
    try:
        steps = rolling.roll(members, stacks.say, timeout=timeout, accept_unknown=accept_unknown)
    except UserError:
        if members.sent and str(stacks.get(name, sid).get("stack_status")).endswith("IN_PROGRESS"):
            # the members not let go stay as they are, the ones done stay done: `upgrade --rolling` again goes on
            call(stacks.api, "POST", f"/stacks/{name}/{sid}/actions", f"cancel the update of {name}",
                 json={"cancel_without_rollback": None})
        raise
    seen = {str(ev["id"]) for ev in stacks.events(name, sid)}
    stack = settle(stacks, name, sid, timeout, seen, stall=stall)
    status = str(stack["stack_status"])
    if status != "UPDATE_COMPLETE":
        unsettled = [f"{r['resource_name']} {r.get('resource_status')}" for r in stacks.resources(name, sid)
                     if not str(r.get("resource_status")).endswith("COMPLETE")]
        if not (members.retried and status == "UPDATE_FAILED" and not unsettled):
            raise UserError(f"{name}: the rolling update ended {status}: {stack.get('stack_status_reason')}"
                            + (f" ({', '.join(unsettled)})" if unsettled else ""), EXIT_FINDINGS)
        # an update sent again leaves the failed one's members held at their hooks; when they are let go in the
        # new one, the old one's thread goes on and fails the stack (on the dev cloud: "resource with id N not
        # found") with every member done and every resource complete. The update below converges it.
        stacks.say(f"{name}: Heat ended the rolling update {status} ({stack.get('stack_status_reason')}) with every "
                   "member upgraded and every resource complete; the update that clears the hooks settles it")
    before = stacks.get(name, sid).get("updated_time") or ""
    send([])  # the same update again, without the hooks: no later update stops at them
    status = str(settle(stacks, name, sid, timeout, seen, stale=before, stall=stall)["stack_status"])
    if status != "UPDATE_COMPLETE":
        raise UserError(f"{name}: the update that clears the rolling hooks ended {status}", EXIT_FINDINGS)
    return status, steps
