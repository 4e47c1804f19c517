"""Upgrading a deployed stack to another version of its catalog entry: the plan (Heat's own update preview, the
interface change from the release record, the entry's CHANGELOG), the version rules, and the update itself, which
converges when run again after an interruption.

The update is Heat's PATCH (``openstack stack update --existing``): the stack keeps the parameters it was given
(secrets included, which Heat never shows back) unless mapped or cleared, and the preview is the same request's
(``PATCH /stacks/{name}/{id}/preview?show_nested=true``). Heat's rollback is on: a failed update goes back to the
version before. The mark (``nfvcat:NAME@VERSION``) travels in the same request, so the stack's tag and its
resources change together; a run interrupted anywhere (Ctrl-C, the process killed, heat-engine restarted) is
finished by the next one: a stack in progress is waited for, a failed one (heat-engine lost the update) is
updated again, one at the target and complete is left alone.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nfvcat.catalog import entries, history
from nfvcat.catalog.versions import breaking_changes, parse_version
from nfvcat.cloud import release_images
from nfvcat.cloud import server_changes as sc
from nfvcat.cloud.connect import call
from nfvcat.cloud.marks import parse_mark, stack_tags
from nfvcat.cloud.stacks import Bundle, Stacks, bundle
from nfvcat.core.errors import EXIT_FINDINGS, EXIT_USAGE, UserError
from nfvcat.core.waiting import TimedOut, until

KINDS = ("replaced", "updated", "added", "deleted", "unchanged")
SERVER = "OS::Nova::Server"
PORT = "OS::Neutron::Port"
HIDDEN = "******"  # Heat's answer for a hidden parameter's value


@dataclass
class Plan:
    stack: str
    stack_id: str
    entry: str
    current: str
    target: str
    bump: str  # major | minor | patch | same | downgrade
    changes: dict[str, list[dict[str, str]]] = field(default_factory=dict)  # kind -> resources (preview)
    downtime: list[str] = field(default_factory=list)  # servers the update deletes or replaces
    servers_down: list[str] = field(default_factory=list)  # their server ids (the outage's prediction)
    how_down: dict[str, str] = field(default_factory=dict)  # server id -> replaced, deleted, rebuilt (...), ...
    state: list[str] = field(default_factory=list)  # what those servers hold, and the entry's way to carry it
    interface: dict[str, list[str]] = field(default_factory=dict)  # added / removed / changed
    breaking: list[str] = field(default_factory=list)
    unmapped: list[str] = field(default_factory=list)  # what a major bump needs mapped and is not
    notes: list[tuple[str, str]] = field(default_factory=list)  # CHANGELOG sections (version, text)
    status: str = ""
    losses: list[str] = field(default_factory=list)  # reasons to stop: group memberships, MACs/IPs, volumes lost
    corrected: list[str] = field(default_factory=list)  # servers the preview replaces that the update leaves alone

    def as_dict(self) -> dict[str, Any]:
        return {"stack": self.stack, "entry": self.entry, "from": self.current, "to": self.target,
                "bump": self.bump, "status": self.status, "preview": self.changes, "downtime": self.downtime,
                "state": self.state, "losses": self.losses, "preview_corrected": self.corrected,
                "interface": self.interface, "breaking": self.breaking, "unmapped": self.unmapped,
                "changelog": [{"version": v, "text": t} for v, t in self.notes]}


def bump(current: str, target: str) -> str:
    a, b = parse_version(current), parse_version(target)
    if a is None or b is None:
        return "unknown"
    if b < a:
        return "downgrade"
    if b == a:
        return "same"
    if b.major > a.major or (a.major == 0 and b.minor > a.minor):
        return "major"
    return "minor" if b.minor > a.minor else "patch"


def interface_change(old: dict[str, Any], new: dict[str, Any]) -> dict[str, list[str]]:
    """Parameters and outputs added, removed or changed (type, default) between two interfaces."""
    op, np = old.get("parameters") or {}, new.get("parameters") or {}
    oo, no = set(old.get("outputs") or []), set(new.get("outputs") or [])
    return {"added": [f"parameter {p}" for p in sorted(set(np) - set(op))] + [f"output {o}" for o in sorted(no - oo)],
            "removed": [f"parameter {p}" for p in sorted(set(op) - set(np))] + [f"output {o}" for o in sorted(oo - no)],
            "changed": [f"parameter {p}: {op[p]} -> {np[p]}" for p in sorted(set(op) & set(np)) if op[p] != np[p]]}


def deployed_stack(stacks: Stacks, name: str) -> tuple[dict[str, Any], str, str]:
    """The stack (its full record), and the entry and version its mark names."""
    found = stacks.find(name)
    if found is None:
        raise UserError(f"no stack {name} on this cloud (`nfvcat list` shows what nfvcat deployed)")
    full = stacks.get(name, str(found["id"]))
    mark = parse_mark(full.get("tags"), str(full.get("stack_status") or ""))
    if mark is None:
        raise UserError(f"stack {name} carries no nfvcat:NAME@VERSION mark (not deployed by nfvcat instantiate); "
                        "nothing says which version it runs")
    return full, mark[0], mark[1]


def mapped_parameters(stack: dict[str, Any], maps: dict[str, str], given: dict[str, Any],
                      new_params: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The parameters the update sends (``-P`` values, and each ``--map OLD=NEW`` carrying OLD's current value to
    NEW) and the ones it clears: each mapped OLD and every parameter the stack has that the target template does
    not declare (Heat refuses a value for an undeclared parameter; the plan says whether that is allowed)."""
    params = dict(given)
    current = stack.get("parameters") or {}
    for old, new in maps.items():
        if new and new not in new_params:
            raise UserError(f"--map {old}={new}: the target version has no parameter {new}", EXIT_USAGE)
        if new and new not in params and (old in current or new not in current):  # else mapped by an earlier run
            value = current.get(old)
            if value is None or value == HIDDEN:
                raise UserError(f"--map {old}={new}: Heat does not show {old}'s value (hidden or unset); "
                                f"give it as -P {new}=VALUE", EXIT_USAGE)
            params[new] = value
    gone = {k for k in current if not k.startswith("OS::") and k not in new_params}
    return params, sorted(gone | set(maps))


def resume(stacks: Stacks, name: str, timeout: float, stall: float) -> bool:
    """An update or rollback an earlier, interrupted run left in progress: waited for before anything else (until
    it settles, or makes no progress for ``stall`` seconds: then ``apply`` sends the update again). True when it
    made no progress."""
    found = stacks.find(name)
    if found is not None and str(found["stack_status"]).endswith("IN_PROGRESS"):
        stacks.say(f"{name}: {found['stack_status']} (an earlier run?), waiting for it")
        sid = str(found["id"])
        stack = settle(stacks, name, sid, timeout, {ev["id"] for ev in stacks.events(name, sid)}, stall=stall)
        return str(stack["stack_status"]).endswith("IN_PROGRESS")
    return False


def plan(stacks: Stacks, root: Path, deployed: tuple[dict[str, Any], str, str], target_entry: entries.Entry,
         b: Bundle, params: dict[str, Any], clear: list[str], maps: dict[str, str], given: dict[str, Any]) -> Plan:
    """What the upgrade of the stack ``deployed`` (``deployed_stack``'s answer) to ``target_entry`` would do, the
    stack given the parameters ``given`` (its environment's); nothing changes on the cloud."""
    full, entry, current = deployed
    name, sid = str(full["stack_name"]), str(full["id"])
    p = Plan(name, sid, entry, current, target_entry.version, bump(current, target_entry.version),
             status=str(full.get("stack_status")))
    body = update_body(b, params, clear, full.get("tags"), entry, target_entry.version, 60, current)
    res = call(stacks.api, "PATCH", f"/stacks/{name}/{sid}/preview?show_nested=true", f"stack update preview {name}",
               json=body)
    changes = res.get("resource_changes") or {}
    for kind in KINDS:
        p.changes[kind] = [{"name": str(r.get("resource_name")),
                            "type": str(r.get("resource_type")).rsplit("/", 1)[-1],  # a nested template's file name
                            "parent": str(r.get("parent_resource") or ""),
                            "id": str(r.get("physical_resource_id") or "")} for r in changes.get(kind) or []]
    added = {(r["name"], r["parent"]) for r in p.changes["added"]}
    going = [r for r in p.changes["replaced"] + p.changes["deleted"] if r["type"] == SERVER]
    try:
        old: Bundle | None = bundle(history.resolve(root, f"{entry}@{current}", "heat").template, [])
    except UserError:
        old = None  # deployed from a version this catalog never released: nothing to compare with
    resources = functools.cache(lambda: stacks.resources(name, sid))  # asked once, when needed
    stays, rebuilt, readdressed = _server_verdicts(resources, old, b, given, params, clear, p)
    down = [(r, "replaced" if r in p.changes["replaced"] or (r["name"], r["parent"]) in added else "deleted")
            for r in going if (r["parent"], r["name"]) not in stays] + rebuilt
    # the preview shows a replaced resource as its replacement (no id yet): the server that goes is the stack's
    ids = {(str(r.get("resource_name")), str(r.get("parent_resource") or "")): str(r.get("physical_resource_id"))
           for r in resources()} if down else {}
    for r, how in down:
        where = _where(r)
        server = r["id"] or ids.get((r["name"], r["parent"])) or "no server"
        p.downtime.append(f"{where}{r['name']} (server {server}): {how}")
        if server != "no server":
            p.servers_down.append(server)
            p.how_down[server] = how
        if not how.startswith("resized"):  # a resize keeps the disk
            p.state += [f"{where}{r['name']} holds {s.get('holds')}; to carry it: {s.get('carry')}"
                        for s in target_entry.state(r["name"], r["parent"])]
    try:
        old_if = history.interface(root, entry, "heat", current)
    except UserError:
        old_if = {}  # deployed from a version this catalog never released: no interface to compare with
    new_if = history.interface(root, entry, "heat", target_entry.version) if target_entry.version != current \
        else old_if
    p.interface = interface_change(old_if, new_if) if old_if else {"unknown": [f"{entry}@{current} not recorded"]}
    p.breaking = breaking_changes(old_if, new_if) if old_if else []
    for item in p.breaking:
        pname = item.split("'")[1] if "'" in item else ""
        if "removed or renamed" in item and item.startswith("parameter") and pname not in maps:
            p.unmapped.append(f"{item}: --map {pname}=NEW (or --map {pname}= to drop it)")
        elif ("has no default" in item or "retyped" in item) and pname not in params:
            p.unmapped.append(f"{item}: -P {pname}=VALUE")
    p.notes = history.changelog(target_entry.dir, current, target_entry.version)
    p.losses = losses(p.changes) + readdressed
    if old is None:
        p.losses.append(f"scheduler hints: unknown ({entry}@{current} is not a release of this catalog)")
    else:
        p.losses += [f"{where}{res}: its scheduler hint group (server group membership: anti-affinity) is gone in "
                     f"{target_entry.version}" for where, res in sorted(grouped(old) - grouped(b))]
    return p


def _server_verdicts(resources: Callable[[], list[dict[str, Any]]], old: Bundle | None, b: Bundle,
                     given: dict[str, Any], params: dict[str, Any], clear: list[str], p: Plan
                     ) -> tuple[set[tuple[str, str]], list[tuple[dict[str, str], str]], list[str]]:
    """Heat's preview checked against both versions' definitions (``nfvcat.cloud.server_changes``): (parent, name)
    of the servers it replaces that the update leaves alone (each said in ``p.corrected``); the servers it calls
    "updated" that the update takes down, with how (rebuilt, resized; "unknown" when it cannot tell); and the
    ports it updates whose IP or MAC address changes in place (losses). ``old``: the deployed release's bundle
    (None: not a release of this catalog); ``given``: the parameters the stack was given."""
    replaced = [r for r in p.changes["replaced"] if r["type"] == SERVER]
    updated = [r for r in p.changes["updated"] if r["type"] == SERVER]
    ports = [r for r in p.changes["updated"] if r["type"] == PORT]
    if not replaced and not updated and not ports:
        return set(), [], []
    if old is None:  # not a release of this catalog: Heat's verdict stands, a server it updates may go down
        return (set(), [(r, "unknown (not a release of this catalog: nothing to compare with)") for r in updated],
                [f"{_where(r)}{r['name']}: updated: its IP and MAC addresses may change (not a release of this "
                 "catalog: nothing to compare with)" for r in ports])
    before, after = sc.Scope(old.template, given, old.files), \
        sc.Scope(b.template, {**{k: v for k, v in given.items() if k not in clear}, **params}, b.files)
    changed = {(r["parent"], r["name"]): kind for kind in ("added", "replaced", "updated") for r in p.changes[kind]}
    stays, down, readdressed = set(), [], []
    for r in replaced:
        parents = _parents(resources(), r["parent"])
        if parents is not None and sc.unchanged(before, after, parents, r["name"], changed):
            stays.add((r["parent"], r["name"]))
            p.corrected.append(f"{_where(r)}{r['name']}: Heat's preview replaces it, but both versions define it "
                               "alike and nothing it references changes (the preview resolves no attribute of the "
                               "new stack): it stays")
    for r in updated:
        parents = _parents(resources(), r["parent"])
        how = sc.disruption(before, after, parents, r["name"]) if parents is not None else "unknown"
        if how and how.startswith("refused"):
            readdressed.append(f"server {_where(r)}{r['name']}: the update is {how}")
        elif how:
            down.append((r, how))
    for r in ports:
        parents = _parents(resources(), r["parent"])
        lost = sc.address_change(before, after, parents, r["name"]) if parents is not None else \
            ["IP address", "MAC address"]
        if lost:
            readdressed.append(f"port {_where(r)}{r['name']}: updated: its {' and '.join(lost)} change(s)")
    return stays, down, readdressed


def _where(r: dict[str, str]) -> str:
    return f"{r['parent']}/" if r["parent"] else ""


def _parents(resources: list[dict[str, Any]], parent: str) -> list[str] | None:
    """The template resources from the top down to ``parent`` (the preview names only the innermost), found in
    the stack's ``resources`` (nested ones too)."""
    if not parent:
        return []
    chain, seen = [parent], {parent}
    by_name: dict[str, str] = {}
    for res in resources:
        by_name.setdefault(str(res.get("resource_name")), str(res.get("parent_resource") or ""))
    while by_name.get(chain[0]):
        up = by_name[chain[0]]
        if up in seen:
            return None
        chain.insert(0, up)
        seen.add(up)
    return chain if chain[0] in by_name else None


LOSS_TYPES = {"OS::Neutron::Port": "port {name}: {how}: its MAC address and IP address change",
              "OS::Cinder::Volume": "volume {name}: {how}: its data is deleted",
              "OS::Nova::ServerGroup": "server group {name}: {how}: its members lose their group (anti-affinity)"}


def losses(changes: dict[str, list[dict[str, str]]]) -> list[str]:
    """What Heat's preview replaces or deletes that a chain cannot get back: ports (MAC and IP), volumes (data),
    server groups (membership)."""
    out = []
    for how in ("replaced", "deleted"):
        for r in changes.get(how) or []:
            text = LOSS_TYPES.get(r["type"])
            if text:
                out.append(text.format(name=f"{_where(r)}{r['name']}", how=how))
    return out


def grouped(b: Bundle) -> set[tuple[str, str]]:
    """(template file, resource) of every server of the bundle's templates with a scheduler hint ``group``."""
    out = set()
    for name, tpl in b.templates():
        for rname, r in (tpl.get("resources") or {}).items():
            props = r.get("properties") if isinstance(r, dict) else None
            hints = props.get("scheduler_hints") if isinstance(props, dict) else None
            if isinstance(r, dict) and r.get("type") == SERVER and _names_group(hints):
                out.add((f"{Path(str(name)).name}/" if name else "", str(rname)))
    return out


def _names_group(hints: Any) -> bool:
    """A ``group`` key anywhere in the hints (conditional ones too: ``{if: [cond, {group: ...}]}``)."""
    if isinstance(hints, dict):
        return "group" in hints or any(_names_group(v) for v in hints.values())
    if isinstance(hints, list):
        return any(_names_group(v) for v in hints)
    return False


def update_body(b: Bundle, params: dict[str, Any], clear: list[str], tags: Any, entry: str, version: str,
                timeout_min: int, previous: str) -> dict[str, Any]:
    """The PATCH (and its preview): the mark of ``version`` and the ``previous`` one travel with the update."""
    tags = stack_tags(tags, entry, version, previous if previous != version else None)
    return {"template": b.template, "files": b.files, "environment": b.environment, "parameters": params,
            "clear_parameters": clear, "tags": ",".join(tags),
            "timeout_mins": timeout_min, "disable_rollback": False}


def refusal(p: Plan, accept_loss: bool = False) -> str | None:
    """Why the version rules refuse this upgrade (or what it loses, unless ``accept_loss``), or None."""
    if p.bump == "downgrade":
        return f"{p.entry} {p.current} -> {p.target} is a downgrade; deploy the old version with instantiate"
    if p.bump in ("major", "unknown") and p.unmapped:
        return (f"{p.entry} {p.current} -> {p.target} is a major upgrade and breaks the stack's interface; map "
                "every removed or renamed parameter: " + "; ".join(p.unmapped))
    if p.losses and not accept_loss:
        return (f"{p.entry} {p.current} -> {p.target} loses what a chain cannot get back: " + "; ".join(p.losses)
                + " (--accept-loss goes ahead)")
    return None


# ---- the update, converging ----------------------------------------------------------------------------------

SETTLED = ("UPDATE_COMPLETE", "ROLLBACK_COMPLETE", "ROLLBACK_FAILED", "CREATE_COMPLETE")


def settle(stacks: Stacks, name: str, sid: str, timeout: float, seen: set[str],
           stale: str | None = None, stall: float | None = None) -> dict[str, Any]:
    """Wait until the stack is no longer in progress, saying each resource's progress; UPDATE_FAILED counts only
    once Heat has not started its rollback within a few polls (it fails first, then rolls back). With ``stall``,
    a stack still in progress with no new event for that long is returned as it is: nothing works on it (Heat's
    convergence engine does not resume a traversal a restarted heat-engine was running)."""
    failed_polls = 0
    last, events = time.monotonic(), len(seen)

    def poll() -> tuple[dict[str, Any], bool]:  # (the stack, whether the wait is over)
        nonlocal failed_polls, last, events
        stack = stacks.get(name, sid)
        stacks.progress(name, sid, seen)
        status = str(stack["stack_status"])
        if len(seen) != events:
            last, events = time.monotonic(), len(seen)
        if stall is not None and status.endswith("IN_PROGRESS") and time.monotonic() - last > stall:
            return stack, True
        fresh = stale is None or stack.get("updated_time") != stale or status.endswith("IN_PROGRESS")
        if fresh and status.endswith("FAILED") and status not in SETTLED:
            failed_polls += 1
        return stack, fresh and (status in SETTLED or failed_polls >= 3 or (
            status.endswith("FAILED") and bool(stack.get("disable_rollback"))))

    try:
        return until(poll, lambda got: got[1], timeout=timeout, what=name, state=lambda got: got[0]["stack_status"],
                     first=1.0, most=4.0)[0]
    except TimedOut as exc:
        raise UserError(f"{exc}; run nfvcat upgrade again to wait on", EXIT_FINDINGS) from None


def failed_resource(stacks: Stacks, name: str, sid: str, since: set[str]) -> str:
    """The first resource that failed in this update (from the events after ``since``), with Heat's reason."""
    for ev in stacks.events(name, sid):
        status = str(ev.get("resource_status", ""))
        if ev["id"] not in since and status.endswith("FAILED") and ev.get("resource_name") != name:
            return f"{ev['resource_name']} {status}: {ev.get('resource_status_reason') or ''}".strip()
    return ""


def apply(stacks: Stacks, p: Plan, b: Bundle, params: dict[str, Any], clear: list[str], timeout: float,
          stall: float, lost: bool = False) -> str:
    """Run the update (or finish one an earlier run left): returns the stack's final status; a failure that
    Heat rolled back raises with the failed resource and its reason (exit 2). An update in progress with no event
    for ``stall`` seconds (or ``lost``: ``resume`` saw none) is sent again (the convergence engine takes a new
    update over a stack in progress)."""
    name, sid = p.stack, p.stack_id
    stack = stacks.get(name, sid)
    seen = {ev["id"] for ev in stacks.events(name, sid)}
    if str(stack["stack_status"]).endswith("IN_PROGRESS") and not lost:
        stacks.say(f"{name}: {stack['stack_status']} (an earlier run?), waiting for it")
        stack = settle(stacks, name, sid, timeout, seen, stall=stall)
        if str(stack["stack_status"]).endswith("IN_PROGRESS"):
            stacks.say(f"{name}: no event for {stall:.0f} s in {stack['stack_status']} (heat-engine restarted?), "
                       "sending the update again")
    mark = parse_mark(stack.get("tags"), str(stack["stack_status"]))
    if mark == (p.entry, p.target) and stack["stack_status"] in ("UPDATE_COMPLETE", "CREATE_COMPLETE"):
        stacks.say(f"{name}: at {p.entry}@{p.target} ({stack['stack_status']})")
        return str(stack["stack_status"])
    before = stack.get("updated_time") or ""
    baseline = set(seen)  # progress adds what it reports to seen
    stacks.say(f"{name}: updating {p.entry} {p.current} -> {p.target}" if p.current != p.target else
               f"{name}: updating to {p.entry}@{p.target} again ({stack['stack_status']})")
    call(stacks.api, "PATCH", f"/stacks/{name}/{sid}", f"stack update {name}",
         json=update_body(b, params, clear, stack.get("tags"), p.entry, p.target, int(timeout // 60) + 1,
                          p.current))
    stack = settle(stacks, name, sid, timeout, seen, stale=before, stall=stall)
    status = str(stack["stack_status"])
    if status.endswith("IN_PROGRESS"):
        raise UserError(f"{name}: no event for {stall:.0f} s in {status}; run nfvcat upgrade again", EXIT_FINDINGS)
    if status == "UPDATE_COMPLETE":
        return status
    cause = failed_resource(stacks, name, sid, baseline) or str(stack.get("stack_status_reason") or status)
    after = "rolled back to the version before" if status == "ROLLBACK_COMPLETE" else status
    raise UserError(f"{name}: update to {p.entry}@{p.target} failed at {cause}; {after}", EXIT_FINDINGS)


def prepare(stacks: Stacks, root: Path, name: str, to: str | None, environments: list[str],
            given: dict[str, Any], maps: dict[str, str], *,
            images: Callable[[dict[str, Any], dict[str, str]], Any]
            ) -> tuple[Plan, Bundle, dict[str, Any], list[str]]:
    """The upgrade of stack ``name`` to ``to`` (``upgrade --to``: a VERSION or the entry as every command names
    one, ``history.target_version``; None: the newest the catalog offers), with ``environments`` (files or the
    target entry's example names), ``-P`` values and ``--map``s: the plan, the bundle, and the parameters the update
    sends and clears. ``images`` is given the target's entry.yaml before Heat's preview, which validates the images
    the templates name: it puts them on the cloud (``nfvcat.cloud.release_images.ensure``), but the ones the
    stack's parameters leave unused (the second argument: ``release_images.unused``)."""
    deployed = deployed_stack(stacks, name)
    full, entry_name, _ = deployed
    version = history.target_version(root, entry_name, "heat", to)
    if version is None:
        raise UserError(f"{entry_name}: the catalog offers no version of it")
    target = history.resolve(root, f"{entry_name}@{version}", "heat")
    b = bundle(target.template, target.environments(environments))
    params, clear = mapped_parameters(full, maps, given, b.template.get("parameters") or {})
    env = call(stacks.api, "GET", f"/stacks/{name}/{full['id']}/environment", f"stack environment {name}")
    had = dict((env or {}).get("parameters") or {})  # what the stack was given (Heat keeps it on a PATCH)
    kept = {k: v for k, v in had.items() if k not in clear}
    images(target.meta, release_images.unused(b, {**kept, **(b.environment.get("parameters") or {}), **params},
                                              target.meta))
    return plan(stacks, root, deployed, target, b, params, clear, maps, had), b, params, clear
