"""The pCPUs an instance shares with the other instances of its host (``nfvcat check``).

Its pinned vCPUs, and its emulator threads under ``hw:emulator_threads_policy: isolate``, against every pCPU
the host's other instances hold: their pinned vCPUs (the compute API's topology), their isolated emulator
threads (host access: no API shows them) and, for an instance that asks for isolation (thread or emulator
policy ``isolate``), the host's cpu_shared_set, where floating vCPUs and emulator threads run. The thread
policy against the host's thread siblings (the inventory's map and, with host access, the compute host's own):
``require`` puts every vCPU on a core with a sibling, ``isolate`` leaves every sibling of its pCPUs idle.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nfvcat.cloud.check_context import CheckContext, CpuMap
from nfvcat.cloud.verdicts import ADMIN, FAIL, HOST_ACCESS, PASS, UNKNOWN

EXCLUSIVE = "pCPUs not shared with other instances"


@dataclass
class Held:
    """The pCPUs a host's other instances hold, and who holds each."""
    by: dict[int, list[str]] = field(default_factory=dict)
    unseen: list[str] = field(default_factory=list)  # instances whose isolated emulator threads no source shows
    seen: list[str] = field(default_factory=list)  # instances whose isolated emulator threads a source showed

    def hold(self, pcpus: set[int] | list[int], who: str) -> None:
        for p in pcpus:
            self.by.setdefault(p, []).append(who)

    def clash(self, mine: set[int]) -> str:
        return "; ".join(f"pCPU {p}: {', '.join(self.by[p])}" for p in sorted(mine & set(self.by)))


def asks_isolation(specs: dict[str, str]) -> bool:
    return "isolate" in (specs.get("hw:cpu_thread_policy"), specs.get("hw:emulator_threads_policy"))


def held_by_others(ctx: CheckContext, sid: str, host: str, shared_set: bool) -> Held | None:
    """What the host's other instances hold (None when listing them is admin-only); ``shared_set``: the host's
    cpu_shared_set counts as held."""
    others = ctx.neighbours(host)
    if others is None:
        return None
    held = Held()
    for other in sorted(others.values(), key=lambda o: o.name):
        if other.id == sid:
            continue
        held.hold(set(other.pins.values()), f"server {other.name}'s vCPUs")
        if other.specs.get("hw:emulator_threads_policy") == "isolate":
            facts = ctx.facts(other.id, host)
            if facts is None:
                held.unseen.append(other.name)
            else:
                held.seen.append(other.name)
                held.hold(facts.emulator_pcpus or set(), f"server {other.name}'s emulator threads")
    if shared_set:
        for m in ctx.cpu_maps(host):
            held.hold(m.shared, f"the cpu_shared_set ({m.source})")
    return held


def unseen_detail(ctx: CheckContext, held: Held) -> str:
    where = "no API shows them (check --host-access)" if ctx.access is None else f"{ctx.access.name} does not know"
    return f"emulator threads of {', '.join(held.unseen)}: {where}"


def exclusive(ctx: CheckContext, vnf: str, name: str, sid: str, host: str | None, specs: dict[str, str],
              pins: dict[int, int]) -> None:
    """No pCPU of the instance's pinned vCPUs held by another instance of the host."""
    if host is None:
        ctx.add(vnf, name, EXCLUSIVE, ADMIN, "the server's host is admin-only")
        return
    held = held_by_others(ctx, sid, host, asks_isolation(specs))
    if held is None:
        ctx.add(vnf, name, EXCLUSIVE, ADMIN, f"listing the servers of {host} is admin-only")
        return
    mine = set(pins.values())
    clash = held.clash(mine)
    n = len(ctx.neighbours(host) or {}) - (1 if sid in (ctx.neighbours(host) or {}) else 0)
    ctx.add(vnf, name, EXCLUSIVE, FAIL if clash else HOST_ACCESS if held.unseen else PASS,
            clash or (unseen_detail(ctx, held) if held.unseen else
                      f"{n} other instance(s) on {host}, none on {sorted(mine)}" +
                      (f" (emulator threads of {', '.join(held.seen)} {ctx.source})" if held.seen else "")))


def emulator(ctx: CheckContext, vnf: str, name: str, sid: str, host: str | None, specs: dict[str, str],
             pins: dict[int, int], host_nodes: list[int]) -> None:
    """The emulator threads: on the cpu_shared_set under policy share; on pCPUs of their own under isolate."""
    policy = specs.get("hw:emulator_threads_policy")
    if not policy:
        return
    facts = ctx.host_facts(vnf, name, "emulator threads", sid, host,
                           f"policy {policy}: no API shows the emulator threads' pCPUs")
    if facts is None:
        return
    maps = ctx.cpu_maps(host)
    if policy == "share":
        shared = {c for m in maps for c in m.shared}
        ok = facts.emulator_pcpus is None and bool(shared)
        ctx.add(vnf, name, "emulator threads", PASS if ok else FAIL,
                (f"policy share: on the host's cpu_shared_set {sorted(shared)}" if ok else
                 f"policy share: emulator pCPUs {sorted(facts.emulator_pcpus or [])}, host shared set "
                 f"{sorted(shared)}") + f" ({ctx.source})")
        return
    emu = set(facts.emulator_pcpus or [])
    problems = [] if emu else ["no pCPU reserved for them"]
    for m in maps:
        dedicated = {c for node in host_nodes for c in m.dedicated.get(node, set())}
        if emu - dedicated:
            problems.append(f"{sorted(emu - dedicated)} outside the node's cpu_dedicated_set ({m.source})")
    if emu & set(pins.values()):
        problems.append(f"{sorted(emu & set(pins.values()))} also a vCPU's pCPU")
    held = held_by_others(ctx, sid, host, shared_set=False) if host else None
    if held is not None and held.clash(emu):
        problems.append(held.clash(emu))
    ctx.add(vnf, name, "emulator threads", FAIL if problems else PASS,
            f"policy isolate: pCPUs {sorted(emu)} ({ctx.source})" + (": " + "; ".join(problems) if problems else ""))


def thread_policy(ctx: CheckContext, vnf: str, name: str, sid: str, host: str | None, specs: dict[str, str],
                  pins: dict[int, int]) -> None:
    """hw:cpu_thread_policy against each thread sibling map of the host."""
    policy = specs.get("hw:cpu_thread_policy")
    if policy not in ("require", "isolate") or not pins:
        return
    maps = ctx.cpu_maps(host)
    if not maps:
        ctx.add(vnf, name, "CPU thread policy", UNKNOWN,
                f"host {host} not in the inventory" + ("" if ctx.access else " (check --host-access: the host's "
                                                                             "topology)"))
    for m in maps:
        if policy == "require":
            _require(ctx, vnf, name, pins, m)
        else:
            _isolate(ctx, vnf, name, sid, host, pins, m)


def _require(ctx: CheckContext, vnf: str, name: str, pins: dict[int, int], m: CpuMap) -> None:
    mine = sorted(set(pins.values()))
    lonely = [p for p in mine if not m.siblings.get(p)]
    ctx.add(vnf, name, "CPU thread policy", FAIL if lonely else PASS,
            f"require: pCPUs {mine} " + (f"of which {lonely} on cores without a thread sibling" if lonely else
                                         "on cores with thread siblings") + f" ({m.source})")


def _isolate(ctx: CheckContext, vnf: str, name: str, sid: str, host: str | None, pins: dict[int, int],
             m: CpuMap) -> None:
    mine = sorted(set(pins.values()))
    siblings = {p: sorted(m.siblings.get(p, set())) for p in mine if m.siblings.get(p)}
    if not siblings:
        ctx.add(vnf, name, "CPU thread policy", PASS, f"isolate: pCPUs {mine} on cores without thread siblings "
                f"({m.source})")
        return
    held = held_by_others(ctx, sid, host, shared_set=True) if host else None
    if held is None:
        ctx.add(vnf, name, "CPU thread policy", ADMIN, f"isolate: siblings {siblings}: the other instances of the "
                "host are admin-only")
        return
    own = {p: [f"its own vCPU {v}"] for v, p in pins.items()}
    facts = ctx.facts(sid, host)
    for p in (facts.emulator_pcpus or set()) if facts else set():
        own.setdefault(p, []).append("its own emulator threads")
    busy = [f"pCPU {p}'s sibling {q}: {', '.join(own.get(q, []) + held.by.get(q, []))}"
            for p, qs in siblings.items() for q in qs if q in own or q in held.by]
    ctx.add(vnf, name, "CPU thread policy", FAIL if busy else HOST_ACCESS if held.unseen else PASS,
            f"isolate: pCPUs {mine} ({m.source}): " + ("; ".join(busy) if busy else unseen_detail(ctx, held)
                                                         if held.unseen else f"siblings {siblings} idle"))
