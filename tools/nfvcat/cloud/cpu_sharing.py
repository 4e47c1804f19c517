"""The pCPUs an instance shares with the other instances of its host (``nfvcat check``).

Its pinned vCPUs, and its emulator threads under ``hw:emulator_threads_policy: isolate``, against every pCPU
the host's other instances hold: their pinned vCPUs (the compute API's topology), their isolated emulator
threads (host access: no API shows them) and, for an instance that asks for isolation (thread or emulator
policy ``isolate``), the host's cpu_shared_set, where floating vCPUs and emulator threads run. The thread
policy against the host's thread siblings (the inventory's map and, with host access, the compute host's own),
as Nova's hardware module packs a guest cell: ``require`` fills sibling threads, consecutive vCPUs on one core;
``isolate`` is never placed on a host with SMT under cpu_dedicated_set (legacy: its pCPUs' siblings idle);
``prefer`` puts each core's vCPUs in one consecutive run. The verdict names the vCPUs and pCPUs that break it.
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
                  pins: dict[int, int], cells: list[tuple[int, dict[int, int]]] | None = None) -> None:
    """hw:cpu_thread_policy against each thread sibling map of the host, as Nova packs a guest cell
    (nova.virt.hardware._pack_instance_onto_cores): the cell's vCPUs, in order, fill the threads of one core
    after the other, ``t`` per core (the same ``t`` for every core but the last); ``require`` takes ``t`` >= 2;
    ``isolate`` one thread per core, and on a host with SMT and cpu_dedicated_set not at all (bug 1889633: the
    scheduler forbids HW_CPU_HYPERTHREADING), its siblings idle otherwise; ``prefer`` (explicit) the largest
    ``t`` the free cores allowed at boot. ``cells``: (host node, vCPU -> pCPU) per guest cell."""
    policy = specs.get("hw:cpu_thread_policy")
    if policy not in ("require", "isolate", "prefer") or not pins:
        return
    cells = cells if cells is not None else [(-1, pins)]
    maps = ctx.cpu_maps(host)
    if not maps:
        ctx.add(vnf, name, "CPU thread policy", UNKNOWN,
                f"host {host}'s thread siblings: no source shows them" +
                ("" if ctx.access else " (check --host-access: the host's topology)"))
    for m in maps:
        if policy == "require":
            _require(ctx, vnf, name, cells, m)
        elif policy == "prefer":
            _prefer(ctx, vnf, name, cells, m)
        else:
            _isolate(ctx, vnf, name, sid, host, pins, cells, m)


@dataclass
class Packing:
    """How a guest cell's vCPUs sit on the host's cores, against Nova's packing order."""
    per_core: int  # t: the most vCPUs of the cell on one core
    cores: list[tuple[list[int], list[int]]]  # (vCPUs, their pCPUs) per core used, in vCPU order
    split: list[str]  # what breaks Nova's order (consecutive vCPUs, t per core, one core after the other)


def packing(pins: dict[int, int], m: CpuMap) -> Packing:
    def core(p: int) -> int:
        return min({p} | m.siblings.get(p, set()))

    vcpus = sorted(pins)
    by_core: dict[int, list[int]] = {}
    for v in vcpus:
        by_core.setdefault(core(pins[v]), []).append(v)
    cores = sorted(([vs, [pins[v] for v in vs]] for vs in by_core.values()), key=lambda c: c[0][0])
    t = max(len(vs) for vs, _ in cores)
    split = []
    for i in range(0, len(vcpus), t):
        chunk = vcpus[i:i + t]
        homes = sorted({core(pins[v]) for v in chunk})
        if len(homes) > 1:
            split.append(f"vCPUs {chunk} (pCPUs {[pins[v] for v in chunk]}) on {len(homes)} cores, "
                         f"Nova packs them onto the threads of one")
    return Packing(t, [(vs, ps) for vs, ps in cores], split)


def _cell_label(node: int) -> str:
    return "" if node < 0 else f"cell on host node {node}: "


def _require(ctx: CheckContext, vnf: str, name: str, cells: list[tuple[int, dict[int, int]]], m: CpuMap) -> None:
    problems, fine = [], []
    for node, pins in cells:
        if not pins:
            continue
        mine = sorted(set(pins.values()))
        lonely = [p for p in mine if not m.siblings.get(p)]
        pk = packing(pins, m)
        label = _cell_label(node)
        if lonely:
            problems.append(f"{label}pCPUs {lonely} on cores without a thread sibling")
        elif pk.per_core < 2:
            alone = "; ".join(f"vCPU {vs[0]} on pCPU {ps[0]} (its sibling(s) "
                              f"{sorted(m.siblings.get(ps[0], set()))} without a vCPU of it)"
                              for vs, ps in pk.cores)
            problems.append(f"{label}each vCPU alone on its core: {alone}; Nova packs require onto sibling threads")
        elif pk.split:
            problems.append(label + "; ".join(pk.split))
        else:
            fine.append(f"{label}pCPUs {mine}, {pk.per_core} vCPUs per core")
    ctx.add(vnf, name, "CPU thread policy", FAIL if problems else PASS,
            "require: " + "; ".join(problems or fine) + f" ({m.source})")


def _prefer(ctx: CheckContext, vnf: str, name: str, cells: list[tuple[int, dict[int, int]]], m: CpuMap) -> None:
    problems, fine = [], []
    for node, pins in cells:
        if not pins:
            continue
        pk, order = packing(pins, m), sorted(pins)
        label = _cell_label(node)
        # a core's vCPUs are always a run of consecutive vCPUs (the fallback fills every free thread in order)
        broken = [f"vCPUs {vs} (pCPUs {ps}) share a core but are not consecutive" for vs, ps in pk.cores
                  if order.index(vs[-1]) - order.index(vs[0]) != len(vs) - 1]
        if broken:
            problems.append(label + "; ".join(broken))
        else:
            fine.append(f"{label}{pk.per_core} vCPU(s) per core")
    ctx.add(vnf, name, "CPU thread policy", FAIL if problems else PASS,
            "prefer: " + "; ".join(problems or fine) + f" ({m.source})")


def _isolate(ctx: CheckContext, vnf: str, name: str, sid: str, host: str | None, pins: dict[int, int],
             cells: list[tuple[int, dict[int, int]]], m: CpuMap) -> None:
    mine = sorted(set(pins.values()))
    siblings = {p: sorted(m.siblings.get(p, set())) for p in mine if m.siblings.get(p)}
    if not siblings:
        ctx.add(vnf, name, "CPU thread policy", PASS, f"isolate: pCPUs {mine} on cores without thread siblings "
                f"({m.source})")
        return
    if not (set().union(*m.dedicated.values()) & m.shared):  # cpu_dedicated_set, not the legacy vcpu_pin_set
        on = "; ".join(f"vCPU {v} on pCPU {p} (siblings {siblings[p]})" for v, p in sorted(pins.items())
                       if p in siblings)
        ctx.add(vnf, name, "CPU thread policy", FAIL,
                f"isolate on a host with SMT and cpu_dedicated_set: {on}; Nova never places it there "
                f"(hardware._pack_instance_onto_cores, bug 1889633; the scheduler forbids HW_CPU_HYPERTHREADING) "
                f"({m.source})")
        return
    # legacy: cpuset and pcpuset are one set, no cpu_shared_set of floating vCPUs to count as held
    held = held_by_others(ctx, sid, host, shared_set=False) if host else None
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
            f"isolate (legacy vcpu_pin_set): pCPUs {mine} ({m.source}): " +
            ("; ".join(busy) if busy else unseen_detail(ctx, held) if held.unseen else f"siblings {siblings} idle"))
