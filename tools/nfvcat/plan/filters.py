"""Host filters, in the order Nova's scheduler applies their equivalents, plus a cheap prefilter.

``static_reason`` (host role and capabilities, traits, aggregate extra specs, port binding) and
``resource_reason`` (placement inventories VCPU, PCPU, MEMORY_MB) are exact. ``may_fit`` is only a
necessary condition drawn from per-cell summaries (free PCPUs, free pages per size, free devices per NUMA
node): a host it rejects cannot pass ``numa_fit_instance_to_host``, so skipping the exact fit there changes
no result. ``exact_fit`` is Nova's NUMATopologyFilter and PciPassthroughFilter logic.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from nfvcat.plan import pciplacement
from nfvcat.plan.demand import Demand
from nfvcat.plan.hoststate import HostState
from nfvcat.plan.novaenv import nova
from nfvcat.plan.pciplacement import Candidates

LARGE, ANY, SMALL = -2, -3, -1


def _lookup(data: dict[str, Any], path: list[str]) -> Any:
    cur: Any = data
    for part in path:
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def static_reason(d: Demand, hs: HostState) -> str | None:
    """Role, ComputeCapabilitiesFilter, required/forbidden traits, AggregateInstanceExtraSpecsFilter and
    Neutron port binding: the parts that do not change as the host fills up."""
    found = static_check(d, hs)
    return found[1] if found else None


def static_check(d: Demand, hs: HostState) -> tuple[str, str] | None:
    """(code, message) of the first static filter the host fails, or None."""
    if hs.index not in d.static_cache:
        d.static_cache[hs.index] = _static(d, hs)
    return d.static_cache[hs.index]


def _static(d: Demand, hs: HostState) -> tuple[str, str] | None:
    host = hs.spec
    want = d.vnf.flavor.host.get("role")
    roles = [want] if isinstance(want, str) else list(want or [])
    if roles and host.role not in roles:
        return "role", f"host role is {host.role}, flavor requires {' or '.join(roles)}"
    n = nova()
    ops = n.extra_specs_ops
    enabled = hs.enabled_filters
    for key, value in d.flavor.extra_specs.items():
        scope, _, rest = key.partition(":")
        if scope == "capabilities" and rest and "ComputeCapabilitiesFilter" in enabled:
            have = _lookup(host.capabilities, rest.split(":"))
            if have is None or not ops.match(str(have), value):
                return "capabilities", f"ComputeCapabilitiesFilter: {key}='{value}' does not match host value {have!r}"
        elif scope.startswith("trait") and rest:
            if value == "required" and rest not in host.traits:
                return "traits", f"placement: required trait {rest} missing"
            if value == "forbidden" and rest in host.traits:
                return "traits", f"placement: forbidden trait {rest} present"
    if "AggregateInstanceExtraSpecsFilter" in enabled:
        state = SimpleNamespace(aggregates=[SimpleNamespace(metadata=host.aggregate_metadata)])
        if not n.AggregateInstanceExtraSpecsFilter().host_passes(state, SimpleNamespace(flavor=d.flavor)):
            wanted = {k: v for k, v in d.flavor.extra_specs.items()
                      if k.startswith("aggregate_instance_extra_specs:") or ":" not in k}
            return "aggregate", (f"AggregateInstanceExtraSpecsFilter: {wanted} not matched by the host's aggregate "
                                 f"metadata {host.aggregate_metadata}")
    for physnet in sorted(d.ovs_physnets):
        if physnet not in host.ovs_physnets:
            return "port-binding", f"port binding: physnet '{physnet}' is not in the host's OVS bridge_mappings"
    if d.needs_tunnel and not host.tunneled:
        return "port-binding", "port binding: the host has no tunnel endpoint for an overlay port"
    if host.role == "ovs-dpdk" and d.vhostuser and not any(c.pagesize for c in d.cells):
        return "vhost-user", "vhost-user ports on an OVS-DPDK host need guest memory on huge pages (hw:mem_page_size)"
    if host.hypervisor == "libvirt" and not host.cells:
        return NEEDS_HOST_ACCESS, ("needs host access: the inventory gives this host no NUMA cells, CPU sets, memory "
                                   "or pages (hypervisor libvirt: the machine's own, as libvirt reports them to "
                                   "Nova), so whether it fits is unknown")
    return None


NEEDS_HOST_ACCESS = "needs-host-access"  # a reason code: the plan's answer for that host is unknown, not negative


def resource_reason(d: Demand, hs: HostState) -> str | None:
    """Placement: the host's VCPU, PCPU and MEMORY_MB inventories (allocation ratios applied)."""
    if d.pcpus and hs.pcpu_used + d.pcpus > hs.pcpu_total:
        return f"placement: not enough PCPU, need {d.pcpus}, {max(0, hs.pcpu_total - hs.pcpu_used)} free " \
               f"of {hs.pcpu_total} (cpu_dedicated_set)"
    if d.vcpus and hs.vcpu_used + d.vcpus > hs.vcpu_total:
        return f"placement: not enough VCPU, need {d.vcpus}, {max(0, int(hs.vcpu_total) - hs.vcpu_used)} free " \
               f"of {int(hs.vcpu_total)} (cpu_shared_set x cpu_allocation_ratio)"
    if hs.mem_used + d.memory_mb > hs.mem_total:
        return f"placement: not enough MEMORY_MB, need {d.memory_mb}, {max(0, int(hs.mem_total) - hs.mem_used)} free"
    return None


def _page_ok(cell: Any, need_kb: int, size: int | None, use_free: bool) -> bool:
    total = cell.pages.get(size) if size is not None else None
    if total is None or size is None:
        return False
    avail = total[0] if use_free else total[1]
    return need_kb <= avail and need_kb % size == 0


def cell_may_fit(need: Any, cell: Any, hs: HostState, reserved: int) -> bool:
    """Necessary conditions of _numa_fit_instance_cell, from the cell summary."""
    mem_kb = need.memory * 1024
    if need.pagesize:
        sizes = sorted(cell.pages, reverse=True)
        if need.pagesize == SMALL:
            sizes = sizes[-1:]
        elif need.pagesize == LARGE:
            sizes = sizes[:-1]
        elif need.pagesize != ANY:
            sizes = [need.pagesize]
        if not any(_page_ok(cell, mem_kb, s, True) for s in sizes):
            return False
    elif cell.pages:
        if not _page_ok(cell, mem_kb, cell.smallest, need.dedicated):
            return False
    elif (cell.memory - cell.memory_usage if need.dedicated else cell.memory) < need.memory:
        return False
    if need.dedicated and need.pcpus + reserved > min(cell.n_pcpus, cell.avail_pcpus):
        return False
    if (need.isolate and not cell.isolate_ok) or (need.require and not cell.smt):
        return False
    if need.cpus > cell.n_cpus:
        return False
    if not need.cpus:
        return True
    return (cell.cpu_usage + need.cpus <= cell.n_cpus * hs.spec.cpu_allocation_ratio
            and cell.memory_usage + need.memory <= cell.memory * hs.spec.ram_allocation_ratio)


def _allowed_nodes(policy: str | None, cell: Any, cells: list[Any]) -> set[int | None] | None:
    if policy == "required":
        return {cell.id}
    if policy in (None, "legacy"):
        return {cell.id, None}
    if policy == "socket":
        return {cell.id} | {c.id for c in cells if c.socket is not None and c.socket == cell.socket}
    return None  # preferred: anywhere


def may_fit(d: Demand, hs: HostState) -> bool:
    """A necessary condition for Nova's fit: never False where numa_fit_instance_to_host would succeed."""
    requests = d.pci_requests
    if requests:
        if hs.pci is None:
            return False
        for r in requests:
            if sum(hs.pci_counts(r).values()) < r.count:
                return False
    if not d.cells:
        return True
    cells = hs.cells()
    if len(cells) < len(d.cells):
        return False
    for i, need in enumerate(d.cells):
        reserved = 1 if d.emulator_isolate and i == 0 else 0
        fitting = [c for c in cells if cell_may_fit(need, c, hs, reserved)]
        if not fitting:
            return False
        if len(d.cells) == 1 and requests and not any(
                all(_pci_near(r, c, cells, hs) for r in requests) for c in fitting):
            return False
    return True


def _pci_near(request: Any, cell: Any, cells: list[Any], hs: HostState) -> bool:
    policy = request.numa_policy if "numa_policy" in request else None
    allowed = _allowed_nodes(policy, cell, cells)
    if allowed is None:
        return True
    counts = hs.pci_counts(request)
    return sum(v for k, v in counts.items() if k in allowed) >= request.count


def cpu_policy_ok(d: Demand, hs: HostState) -> bool:
    """NUMATopologyFilter's own check: thread policy 'require' needs a host with SMT siblings."""
    filt = nova().NUMATopologyFilter()
    props = d.image.properties
    image_props = {k: props.get(k) for k in ("hw_cpu_policy", "hw_cpu_thread_policy") if k in props}
    return bool(filt._satisfies_cpu_policy(SimpleNamespace(numa_topology=hs.topology), d.flavor.extra_specs,
                                           image_props))


def limits(d: Demand, hs: HostState) -> Any:
    o = nova().objects
    lim = o.NUMATopologyLimits(cpu_allocation_ratio=hs.spec.cpu_allocation_ratio,
                               ram_allocation_ratio=hs.spec.ram_allocation_ratio)
    if d.network_metadata is not None:
        lim.network_metadata = d.network_metadata
    return lim


def exact_fit(d: Demand, hs: HostState, topology: Any = None, requests: Any = "same",
              candidates: Candidates | None = None) -> tuple[bool, Any]:
    """Nova's verdict: (fits, the fitted InstanceNUMATopology or None). With ``candidates`` (PCI in
    Placement), the fit of the first allocation candidate Nova's filters keep (``placement_fit``)."""
    requests = d.pci_requests if requests == "same" else requests
    if candidates is not None and pciplacement.groups(requests):
        ok, fitted, _mapping = placement_fit(d, hs, candidates, requests)
        return ok, fitted
    return _fit(d, hs, topology, requests, None)


def _fit(d: Demand, hs: HostState, topology: Any, requests: Any, mapping: Any) -> tuple[bool, Any]:
    n = nova()
    if topology is None and d.topology is not None:  # a fresh copy, 2x cheaper than obj_clone()
        topology = n.objects.InstanceNUMATopology.obj_from_primitive(d.topology_primitive)
    elif topology is not None:
        topology = topology.obj_clone()
    if topology is not None:
        fitted = n.hardware.numa_fit_instance_to_host(hs.topology, topology, mapping, limits=limits(d, hs),
                                                      pci_requests=requests or None, pci_stats=hs.pci)
        if fitted is None:
            return False, None
        return True, fitted
    if requests and (hs.pci is None or not hs.pci.support_requests(requests, mapping)):
        return False, None
    return True, None


def placement_fit(d: Demand, hs: HostState, candidates: Candidates,
                  requests: Any = "same") -> tuple[bool, Any, dict[str, list[str]] | None]:
    """NUMATopologyFilter and PciPassthroughFilter over the host's allocation candidates, then the scheduler's
    claim of the first one left: (fits, fitted topology, that candidate's provider mapping)."""
    requests = d.pci_requests if requests == "same" else requests
    for mapping in candidates.mappings(requests, hs):
        ok, fitted = _fit(d, hs, None, requests, mapping)
        if ok:
            return True, fitted, mapping
    return False, None, None


def other_cells(d: Demand, hs: HostState, candidates: Candidates, chosen: list[int]) -> list[list[int]]:
    """The NUMA cells of the host's other fitting allocation candidates, where Placement's order (unknown
    offline) decides between them and ``chosen``."""
    if candidates.known:
        return []
    out: list[list[int]] = []
    for mapping in candidates.mappings(d.pci_requests, hs):
        ok, fitted = _fit(d, hs, None, d.pci_requests, mapping)
        cells = [c.id for c in fitted.cells] if ok and fitted is not None else None
        if cells is not None and cells != chosen and cells not in out:
            out.append(cells)
    return out
