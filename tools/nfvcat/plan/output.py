"""Plan results as a text table or JSON."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict
from typing import Any

from nfvcat.plan.capacity import CapacityResult
from nfvcat.plan.filters import NEEDS_HOST_ACCESS
from nfvcat.plan.planner import ChainResult, Failure, Placement
from nfvcat.plan.weigher import DESCRIPTION

MAX_HOSTS_SHOWN = 6


def _cpus(cpus: list[int]) -> str:
    if not cpus:
        return "-"
    out, start, prev = [], cpus[0], cpus[0]
    for c in [*cpus[1:], None]:
        if c is not None and c == prev + 1:
            prev = c
            continue
        out.append(f"{start}-{prev}" if prev != start else str(start))
        if c is not None:
            start = prev = c
    return ",".join(out)


def grouped(failure: Failure) -> list[dict[str, Any]]:
    """Hosts with the same reason code together, largest group first."""
    groups: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for host, r in failure.reasons:
        groups[r.code].append((host, r.message))
    out = [{"code": code, "hosts": len(items), "message": items[0][1], "host_names": [h for h, _ in items],
            "same_message": len({m for _, m in items}) == 1}
           for code, items in groups.items()]
    return sorted(out, key=lambda g: (-int(g["hosts"]), str(g["code"])))


def _placement_json(p: Placement) -> dict[str, Any]:
    doc = asdict(p)
    if not p.other_numa_cells:  # only where Placement's unknown order decides the cells
        del doc["other_numa_cells"]
    if not p.undecided_hosts:  # only where the weights do not decide Nova's choice
        del doc["undecided"], doc["undecided_hosts"], doc["undecided_reason"]
    return doc


def _failure_json(f: Failure) -> dict[str, Any]:
    return {"vnf": f.vnf, "instance": f.instance, "summary": grouped(f),
            "hosts": {h: {"code": r.code, "reason": r.message} for h, r in f.reasons}}


def meta(inventory_path: str, hosts: int, source: str, strategy: str, enabled_filters: list[str]) -> dict[str, Any]:
    """What a plan document says of the run: the inventory, the request and how a host is chosen."""
    return {"inventory": inventory_path, "hosts": hosts, "source": source, "strategy": strategy,
            "host_choice": DESCRIPTION[strategy], "enabled_filters": list(enabled_filters)}


def plan_doc(result: ChainResult, meta: dict[str, Any]) -> dict[str, Any]:
    """``nfvcat plan --format json``'s document."""
    return {**meta, "fits": not result.failures, "placements": [_placement_json(p) for p in result.placements],
            "failures": [_failure_json(f) for f in result.failures]}


def plan_json(result: ChainResult, meta: dict[str, Any]) -> str:
    return json.dumps(plan_doc(result, meta), indent=2, sort_keys=False)


def _pci(p: Placement) -> str:
    parts = []
    for d in p.pci_devices:
        what = d.get("physical_network") or d["vendor_product"]
        parts.append(f"{d['address']} ({what}, numa {d['numa_node']})")
    return "; ".join(parts) or "-"


def _failure_text(f: Failure) -> list[str]:
    unknown = any(r.code == NEEDS_HOST_ACCESS for _, r in f.reasons)
    lines = [f"{f.instance}: " + ("fits none of the hosts the inventory describes; the others need host access"
                                  if unknown else "does not fit on any host")]
    for g in grouped(f):
        names = g["host_names"]
        shown = ", ".join(names[:MAX_HOSTS_SHOWN]) + (f" and {len(names) - MAX_HOSTS_SHOWN} more"
                                                      if len(names) > MAX_HOSTS_SHOWN else "")
        first = "" if g["same_message"] else f" (figures of {names[0]})"
        lines.append(f"  {g['hosts']} host(s) [{shown}]: {g['message']}{first}")
    return lines


def plan_text(result: ChainResult, meta: dict[str, Any]) -> str:
    lines = [f"inventory: {meta['inventory']} ({meta['hosts']} hosts)   request: {meta['source']}",
             f"host choice: {DESCRIPTION[meta['strategy']]}", ""]
    rows = [("INSTANCE", "HOST", "NUMA", "PINNED CPUS", "PAGES", "PCI DEVICES")]
    for p in result.placements:
        rows.append((p.instance, p.host, ",".join(map(str, p.numa_cells)) or "-",
                     _cpus(p.pinned_cpus) + (f" +emu {_cpus(p.emulator_cpus)}" if p.emulator_cpus else ""),
                     p.page_size, _pci(p)))
    if len(rows) > 1:
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        for r in rows:
            lines.append("  ".join(c.ljust(widths[i]) for i, c in enumerate(r[:5])) + "  " + r[5])
        lines.append("")
    for p in result.placements:
        if p.other_numa_cells:
            others = " or ".join(",".join(map(str, c)) for c in p.other_numa_cells)
            lines.append(f"{p.instance}: NUMA {','.join(map(str, p.numa_cells))} if Placement lists that device's "
                         f"provider first, else NUMA {others} (PCI in Placement: its candidate order decides; "
                         f"--candidates-from CLOUD asks it)")
    for p in result.placements:
        if p.undecided_hosts:
            more = p.undecided_hosts - MAX_HOSTS_SHOWN
            names = ", ".join(p.undecided[:MAX_HOSTS_SHOWN]) + (f" and {more} more" if more > 0 else "")
            lines.append(f"{p.instance}: undecided: Nova may take any of {p.undecided_hosts} hosts [{names}], not "
                         f"necessarily {p.host} ({p.undecided_reason})")
    for f in result.failures:
        lines.extend(_failure_text(f))
    total = len(result.placements) + len(result.failures)
    unknown = sum(any(r.code == NEEDS_HOST_ACCESS for _, r in f.reasons) for f in result.failures)
    lines.append(f"{len(result.placements)} of {total} instance(s) placed"
                 + ("" if len(result.failures) == unknown else f"; {len(result.failures) - unknown} do not fit")
                 + (f"; {unknown} unknown (hosts that need host access)" if unknown else ""))
    return "\n".join(lines)


def capacity_json(res: CapacityResult, meta: dict[str, Any]) -> str:
    doc = {**meta, "copies": res.copies, "limit_reached": res.limit_reached,
           "runs_out_first": [{"code": c, "hosts": n, "message": m} for c, n, m in res.runs_out],
           "failure": _failure_json(res.failure) if res.failure else None, "usage": res.usage}
    return json.dumps(doc, indent=2)


def capacity_text(res: CapacityResult, meta: dict[str, Any]) -> str:
    lines = [f"inventory: {meta['inventory']} ({meta['hosts']} hosts)   request: {meta['source']}",
             f"host choice: {DESCRIPTION[meta['strategy']]}", "",
             f"{res.copies} cop{'y' if res.copies == 1 else 'ies'} fit"
             + (f" (stopped at the --max-copies limit {res.copies})" if res.limit_reached else "")]
    if res.failure:
        lines.append(f"copy {res.copies + 1} stops at {res.failure.instance}; what runs out first:")
        for _code, n, msg in res.runs_out:
            lines.append(f"  {n} host(s): {msg}")
    lines.append("")
    lines.append("usage after placing: ")
    for name, u in res.usage.items():
        if u["total"]:
            share = 100 * u["used"] / u["total"]
            lines.append(f"  {name:<22} {int(u['used']):>8} / {int(u['total']):<8} ({share:.0f}%)")
    return "\n".join(lines)
