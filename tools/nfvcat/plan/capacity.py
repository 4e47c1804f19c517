"""How many copies of a chain (or of one flavor) fit, and what runs out first."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from nfvcat.plan.planner import Failure, Planner
from nfvcat.plan.request import Chain


@dataclass
class CapacityResult:
    copies: int
    limit_reached: bool
    failure: Failure | None
    usage: dict[str, dict[str, float]] = field(default_factory=dict)
    runs_out: list[tuple[str, int, str]] = field(default_factory=list)  # (code, hosts, example message)


def usage(planner: Planner) -> dict[str, dict[str, float]]:
    """Used and total over all hosts: placement inventories, huge pages per size, PCI devices per pool."""
    out: dict[str, dict[str, float]] = {}

    def add(name: str, used: float, total: float) -> None:
        entry = out.setdefault(name, {"used": 0, "total": 0})
        entry["used"] += used
        entry["total"] += total

    for hs in planner.hosts:
        add("PCPU", hs.pcpu_used, hs.pcpu_total)
        add("VCPU", hs.vcpu_used, int(hs.vcpu_total))
        add("MEMORY_MB", hs.mem_used, int(hs.mem_total))
        for cell in hs.topology.cells:
            for p in cell.mempages or []:
                if p.size_kb > 4:
                    add(f"pages {p.size_kb // 1024}M" if p.size_kb < 1048576 else f"pages {p.size_kb // 1048576}G",
                        p.used, p.total - p.reserved)
        for key, total in hs.device_totals.items():
            tags = dict(key)
            pool = tags.get("physical_network") or f"{tags.get('vendor_id')}:{tags.get('product_id')}"
            add(f"PCI {pool}", total - len(hs.free_devices.get(key, [])), total)
    return {k: {"used": v["used"], "total": v["total"]} for k, v in sorted(out.items())}


def run(planner: Planner, chain: Chain, limit: int) -> CapacityResult:
    copies, failure = 0, None
    while copies < limit:
        result = planner.place_chain(chain, suffix=f"#{copies + 1}", stop_on_failure=True)
        if result.failures:
            failure = result.failures[0]
            break
        copies += 1
    runs_out: list[tuple[str, int, str]] = []
    if failure is not None:
        counts = Counter(r.code for _, r in failure.reasons)
        example: dict[str, str] = {}
        for _, r in failure.reasons:
            example.setdefault(r.code, r.message)
        runs_out = [(code, n, example[code]) for code, n in counts.most_common()]
    return CapacityResult(copies=copies, limit_reached=failure is None, failure=failure, usage=usage(planner),
                          runs_out=runs_out)
