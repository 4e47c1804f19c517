"""Why a VNF does not fit a host, in Nova's terms.

Nova's ``numa_fit_instance_to_host`` only answers None, so the reason is found by testing constraints:
first one at a time against the per-cell summaries (pages, dedicated CPUs, memory), then by refitting with
Nova without the PCI requests, without the NUMA-aware vSwitch metadata or with the thread policy relaxed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nfvcat.plan import filters
from nfvcat.plan.demand import CellNeed, Demand, page_label
from nfvcat.plan.hoststate import HostState
from nfvcat.plan.novaenv import nova


@dataclass
class Reason:
    code: str  # short, groups hosts: pcpu, pages:1G, pci:port direct physnet sriov1, role, ...
    message: str


def _per_cell(hs: HostState, value: Any) -> str:
    return ", ".join(f"cell{c.id} {value(c)}" for c in hs.cells())


def diagnose(d: Demand, hs: HostState, group_reason: str | None = None) -> Reason:
    if d.invalid:
        return Reason("invalid", d.invalid)
    found = filters.static_check(d, hs)
    if found:
        return Reason(*found)
    if group_reason:
        return Reason("anti-affinity", group_reason)
    msg = filters.resource_reason(d, hs)
    if msg:
        return Reason(msg.split(",")[0].replace("placement: not enough ", "placement:"), msg)
    if not filters.cpu_policy_ok(d, hs):
        return Reason("threads", "NUMATopologyFilter: hw:cpu_thread_policy=require on a host without SMT "
                                 "thread siblings")
    return _numa_pci(d, hs)


def _numa_pci(d: Demand, hs: HostState) -> Reason:
    if d.topology is None:
        return _pci_reason(d, hs, None)
    cells = hs.cells()
    if len(cells) < len(d.cells):
        return Reason("numa-nodes", f"the instance needs {len(d.cells)} NUMA nodes (hw:numa_nodes), "
                                    f"the host has {len(cells)}")
    for i, need in enumerate(d.cells):
        extra = " per guest NUMA node" if len(d.cells) > 1 else ""
        if need.pagesize:
            ok = [c for c in cells if filters.cell_may_fit(
                _only(need, pages=True), c, hs, 0)]
            if not ok:
                size = need.pagesize
                if size > 0:
                    pages = -(-need.memory * 1024 // size)
                    free = _per_cell(hs, lambda c, s=size: (c.pages.get(s, (0, 0))[0] // s) if s in c.pages
                                     else "none configured")
                    return Reason(f"pages:{page_label(size)}",
                                  f"no {page_label(size)} pages left: need {pages} x {page_label(size)}{extra} in "
                                  f"one NUMA cell, free pages: {free}")
                return Reason(f"pages:{page_label(size)}",
                              f"not enough free {page_label(size)} pages for {need.memory} MiB{extra} in one NUMA "
                              f"cell (hw:mem_page_size={page_label(size)})")
        reserved = 1 if d.emulator_isolate and i == 0 else 0
        if need.dedicated and not any(min(c.n_pcpus, c.avail_pcpus) >= need.pcpus + reserved for c in cells):
            plus = " + 1 for isolated emulator threads" if reserved else ""
            return Reason("pcpu", f"not enough dedicated CPUs in any NUMA cell: need {need.pcpus}{plus}{extra} in "
                                  f"one cell, free PCPUs: {_per_cell(hs, lambda c: c.avail_pcpus)}")
        if not any(filters.cell_may_fit(_only(need, memory=True), c, hs, 0) for c in cells):
            return Reason("memory", f"not enough memory in any NUMA cell: need {need.memory} MiB{extra}, free: "
                                    f"{_per_cell(hs, lambda c: f'{c.memory - c.memory_usage} MiB')}")
        if need.cpus and not any(filters.cell_may_fit(_only(need, cpus=True), c, hs, 0) for c in cells):
            return Reason("vcpu-cell", f"shared CPUs over the cell limit (cpu_allocation_ratio "
                                       f"{hs.spec.cpu_allocation_ratio}): need {need.cpus}, used: "
                                       f"{_per_cell(hs, lambda c: f'{c.cpu_usage}/{c.n_cpus}')}")
    # each constraint alone can be met somewhere: ask Nova without one constraint at a time
    if d.pci_requests and filters.exact_fit(d, hs, requests=[])[0]:
        return _pci_reason(d, hs, d.topology)
    if d.network_metadata is not None and _fits_without_network(d, hs):
        nodes = {p: n for p, n in hs.spec.physnet_numa_nodes.items() if p in d.network_metadata.physnets}
        if d.network_metadata.tunneled and hs.spec.tunneled_numa_nodes:
            nodes["tunnel"] = hs.spec.tunneled_numa_nodes
        where = ", ".join(f"{k} on node {','.join(map(str, v))}" for k, v in sorted(nodes.items()))
        return Reason("vswitch-numa", f"NUMA-aware vSwitch ({where}): the guest does not fit on those node(s); "
                                      f"free PCPUs: {_per_cell(hs, lambda c: c.avail_pcpus)}")
    if d.thread_policy == "isolate" and _fits_with_prefer(d, hs):
        if hs.topology.has_threads:
            return Reason("threads", "hw:cpu_thread_policy=isolate on a host with SMT thread siblings (placement "
                                     "forbids trait HW_CPU_HYPERTHREADING; Nova refuses isolate on "
                                     "cpu_dedicated_set hosts with siblings)")
        free = ", ".join(f"cell{c.id} {_free_cores(c)}" for c in hs.topology.cells)
        return Reason("threads", f"hw:cpu_thread_policy=isolate needs {d.cells[0].pcpus} whole free cores in one "
                                 f"cell, free whole cores: {free}")
    if len(d.cells) == 1:
        need = d.cells[0]
        what = []
        if need.dedicated:
            what.append(f"{need.pcpus} free PCPUs")
        if need.pagesize:
            what.append(f"{need.memory} MiB of {page_label(need.pagesize)} pages")
        if d.pci_requests:
            what.append("its PCI devices (NUMA affinity policy)")
        if len(what) > 1:
            return Reason("numa-combination", "no single NUMA cell has " + " and ".join(what) + " together: "
                          + _per_cell(hs, lambda c: f"{c.avail_pcpus} PCPUs"))
    return Reason("numa", "numa_fit_instance_to_host found no fit for the instance NUMA topology")


def _only(need: CellNeed, pages: bool = False, memory: bool = False, cpus: bool = False) -> CellNeed:
    return CellNeed(pcpus=0, cpus=need.cpus if cpus else 0, memory=need.memory if (pages or memory or cpus) else 0,
                    pagesize=need.pagesize if pages else None, dedicated=need.dedicated and not cpus)


def _free_cores(cell: Any) -> int:
    """Cores whose thread siblings are all free (what 'isolate' takes per vCPU)."""
    free = cell.free_pcpus
    if not cell.siblings:
        return len(free)
    return sum(1 for s in cell.siblings if s and s <= free)


def _fits_without_network(d: Demand, hs: HostState) -> bool:
    saved = d.network_metadata
    try:
        d.network_metadata = None
        return filters.exact_fit(d, hs, requests=[])[0]
    finally:
        d.network_metadata = saved


def _fits_with_prefer(d: Demand, hs: HostState) -> bool:
    topo = d.topology.obj_clone()
    for c in topo.cells:
        c.cpu_thread_policy = nova().fields.CPUThreadAllocationPolicy.PREFER
    return filters.exact_fit(d, hs, topology=topo, requests=[])[0]


def _pci_reason(d: Demand, hs: HostState, topology: Any) -> Reason:
    if not hs.device_totals:
        return Reason("pci:none", "PciPassthroughFilter: the host has no PCI devices in [pci] device_spec")
    for req, label in zip(d.pci_requests, d.pci_labels, strict=True):
        counts = hs.pci_counts(req)
        if sum(counts.values()) < req.count:
            return Reason(f"pci:{label}", f"no free device for {label} left on the host (need {req.count})")
    if topology is None:
        return Reason("pci", "PciPassthroughFilter: the PCI requests cannot be met together")
    pairs = list(zip(d.pci_requests, d.pci_labels, strict=True))
    short = [(r, lab) for r, lab in pairs if max(hs.pci_counts(r).values(), default=0) < r.count]
    for req, label in short + pairs:
        counts = hs.pci_counts(req)
        policy = req.numa_policy if "numa_policy" in req and req.numa_policy else "legacy"
        per_node = ", ".join(f"node{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: str(kv[0])))
        return Reason(f"pci-numa:{label}",
                      f"no free device for {label} on the NUMA node the guest fits on (hw:pci_numa_affinity_policy "
                      f"{policy}); free devices per node: {per_node or 'none'}")
    return Reason("pci", "PCI requests cannot be met")
