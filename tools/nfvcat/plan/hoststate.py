"""One host as the scheduler holds it: a Nova ``NUMATopology``, a scheduler-side ``PciDeviceStats``,
placement counters, and cheap per-cell summaries for prefiltering. Consumption goes through Nova's
``numa_usage_from_instance_numa`` and ``PciDeviceStats.apply_requests``, as ``HostState`` does."""

from __future__ import annotations

import copy
import json
import weakref
from dataclasses import dataclass, field
from typing import Any

from nfvcat.catalog.inventory import DEFAULT_FILTERS, DeviceSpec, HostSpec
from nfvcat.core.errors import UserError
from nfvcat.plan import pciplacement
from nfvcat.plan.novaenv import nova, nova_message

SMALL_PAGE_KB = 4
_POOL_META = ("count", "devices")


def pool_key(pool: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, str(v)) for k, v in pool.items() if k not in _POOL_META))


@dataclass
class CellSummary:
    id: int
    socket: int | None
    n_pcpus: int
    avail_pcpus: int
    n_cpus: int
    cpu_usage: int
    memory: int
    memory_usage: int
    pages: dict[int, tuple[int, int]]  # size_kb -> (free_kb, total_kb)
    smallest: int | None
    isolate_ok: bool  # _pack_instance_onto_cores refuses 'isolate' on SMT cells unless pcpuset == cpuset
    smt: bool  # more than one thread per core ('require' needs it)


@dataclass(frozen=True)
class Outcome:
    """What taking one fit left on a host: its NUMA topology, its PCI stats (None: no device asked) and the
    pools its devices came from, in order."""

    topology: Any
    pci: Any
    taken: tuple[tuple[tuple[str, str], ...], ...]


@dataclass
class HostState:
    spec: HostSpec
    topology: Any  # objects.NUMATopology
    pci: Any  # PciDeviceStats (scheduler side), empty pools when the host has no devices, as in Nova
    vcpu_total: float
    pcpu_total: int
    mem_total: float
    vcpu_used: int = 0
    pcpu_used: int = 0
    mem_used: int = 0
    flavor_vcpus_used: int = 0  # the compute node's vcpus_used: every instance's flavor vCPUs (CPUWeigher)
    free_devices: dict[tuple[tuple[str, str], ...], list[str]] = field(default_factory=dict)
    device_totals: dict[tuple[tuple[str, str], ...], int] = field(default_factory=dict)
    instances: list[str] = field(default_factory=list)
    enabled_filters: list[str] = field(default_factory=lambda: list(DEFAULT_FILTERS))
    version: int = 0  # bumped by every consume: a verdict for this host stays valid while it is unchanged
    template: int = 0  # hosts with the same static state (template_key) have the same number
    pci_shared: bool = False  # pci is shared with hosts of the same pools until this host takes a device
    _signature: tuple[Any, ...] | None = None
    _cells: list[CellSummary] | None = None
    _pci_counts: dict[str, dict[int | None, int]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def index(self) -> int:
        return self.spec.index

    def cells(self) -> list[CellSummary]:
        if self._cells is None:
            self._cells = [_summary(c) for c in self.topology.cells]
        return self._cells

    def pci_free(self) -> int:
        return sum(p["count"] for p in self.pci.pools) if self.pci else 0

    def pci_counts(self, request: Any) -> dict[int | None, int]:
        """Free devices matching a request's spec, per NUMA node (Nova's own spec and PF filters)."""
        key = request.request_id
        counts = self._pci_counts.get(key)
        if counts is None:
            counts = {}
            if self.pci:
                pools = self.pci._filter_pools_for_spec(self.pci.pools, request)
                pools = self.pci._filter_pools_for_unrequested_pfs(pools, request)
                pools = self.pci._filter_pools_for_unrequested_remote_managed_devices(pools, request)
                for p in pools:
                    counts[p.get("numa_node")] = counts.get(p.get("numa_node"), 0) + p["count"]
            self._pci_counts[key] = counts
        return counts

    def consume(self, fitted: Any, pci_requests: list[Any], vcpus: int, pcpus: int, mem: int,
                flavor_vcpus: int = 0, same: Outcome | None = None,
                mapping: dict[str, list[str]] | None = None) -> tuple[list[dict[str, Any]], Outcome]:
        """Take what one instance uses: the PCI devices it got (address, pool tags), and the outcome, which
        a host of the same signature taking the same fit can take as ``same`` instead of asking Nova's
        usage accounting and apply_requests again (both never change the objects an outcome holds)."""
        n = nova()
        if same is not None:
            self.topology = same.topology
        elif fitted is not None:
            self.topology = n.hardware.numa_usage_from_instance_numa(self.topology, fitted)
        taken: list[tuple[tuple[str, str], ...]] = []
        if same is not None:
            taken = list(same.taken)
            if same.pci is not None:
                self.pci, self.pci_shared = same.pci, True
        elif pci_requests and self.pci is not None:
            if self.pci_shared:  # copy on write: apply_requests changes the pools' counts
                self.pci = copy.copy(self.pci)
                self.pci.pools = copy.deepcopy(self.pci.pools)
            before = {pool_key(p): p["count"] for p in self.pci.pools}
            self.pci.apply_requests(pci_requests, mapping, fitted.cells if fitted is not None else None)
            _POOL_STATES.pop(id(self.pci), None)  # changed in place (a host of its own, not shared)
            self.pci_shared = True  # from now on the outcome's, shared with hosts taking the same fit
            after = {pool_key(p): p["count"] for p in self.pci.pools}
            taken = [key for key, count in before.items() for _ in range(count - after.get(key, 0))]
        devices = []
        for key in taken:
            free = self.free_devices.get(key) or []
            devices.append({**dict(key), "device": free.pop(0) if free else None})
        outcome = Outcome(self.topology, self.pci if pci_requests else None, tuple(taken))
        self.vcpu_used += vcpus
        self.pcpu_used += pcpus
        self.mem_used += mem
        self.flavor_vcpus_used += flavor_vcpus
        self._cells = None
        self._pci_counts = {}
        self._signature = None
        self.version += 1
        return devices, outcome

    def signature(self) -> tuple[Any, ...]:
        """Everything the filters, Nova's fit and the weigher read from this host: two hosts with the same
        signature get the same verdict, the same fitted topology (pCPU ids included) and the same weight.

        The static part (``template``: the spec's cells with their pCPU numbering, thread siblings, memory
        and page totals, vSwitch NUMA nodes; allocation ratios; the role, traits, capabilities, aggregate
        metadata and physnets the static filters read) is fixed at build; Nova's usage accounting copies
        those cell fields unchanged (STATIC_CELL_FIELDS), so the free state is the DYNAMIC_CELL_FIELDS
        of each cell, the PCI pools with their counts, the placement counters, and what Nova's weighers
        read besides (the flavors' vCPUs, the number of instances)."""
        sig = self._signature
        if sig is None:
            cells = _free_state(self.topology)
            pools = _pool_state(self.pci) if self.pci else None
            sig = self._signature = (self.template, cells, pools, self.vcpu_used, self.pcpu_used, self.mem_used,
                                     self.flavor_vcpus_used, len(self.instances))
        return sig


_FREE_STATES: dict[int, tuple[weakref.ref[Any], tuple[Any, ...]]] = {}  # id(topology) -> (the object, its state)


def _free_state(topology: Any) -> tuple[Any, ...]:
    """The DYNAMIC_CELL_FIELDS of each cell, once per topology object (hosts of a group share one)."""
    key = id(topology)
    known = _FREE_STATES.get(key)
    if known is not None and known[0]() is topology:
        return known[1]
    state = tuple((c.cpu_usage, c.memory_usage, frozenset(c.pinned_cpus),
                   tuple((p.size_kb, p.total, p.used, p.reserved) for p in c.mempages or ()))
                  for c in topology.cells)
    _FREE_STATES[key] = (weakref.ref(topology, lambda _ref: _FREE_STATES.pop(key, None)), state)
    return state


_POOL_STATES: dict[int, tuple[weakref.ref[Any], tuple[Any, ...]]] = {}  # id(PciDeviceStats) -> (it, its state)


def _pool_state(pci: Any) -> tuple[Any, ...]:
    """The pools with their counts, once per PciDeviceStats object (hosts share one until they take a device;
    apply_requests, the only change, forgets it)."""
    key = id(pci)
    known = _POOL_STATES.get(key)
    if known is not None and known[0]() is pci:
        return known[1]
    state = tuple((pool_key(p), p["count"]) for p in pci.pools)
    _POOL_STATES[key] = (weakref.ref(pci, lambda _ref: _POOL_STATES.pop(key, None)), state)
    return state


# NUMACell fields: those numa_usage_from_instance_numa copies unchanged, and those usage changes
STATIC_CELL_FIELDS = frozenset({"id", "socket", "cpuset", "pcpuset", "siblings", "memory", "network_metadata"})
DYNAMIC_CELL_FIELDS = frozenset({"cpu_usage", "memory_usage", "pinned_cpus", "mempages"})


def check_signature_fields() -> None:
    """The signature is only complete if it knows every NUMACell field this Nova has."""
    have = set(nova().objects.NUMACell.fields)
    if have != STATIC_CELL_FIELDS | DYNAMIC_CELL_FIELDS:
        raise UserError(f"this Nova's NUMACell has fields {sorted(have)}; the planner's host signature knows "
                        f"{sorted(STATIC_CELL_FIELDS | DYNAMIC_CELL_FIELDS)}")


def template_key(spec: HostSpec, enabled_filters: list[str]) -> tuple[Any, ...]:
    """The static part of a host's signature, from its spec (see HostState.signature)."""
    cells = tuple((c.id, c.socket, frozenset(c.dedicated), frozenset(c.shared),
                   tuple(map(frozenset, c.siblings)), c.memory_mb,
                   tuple((p.size_kb, p.total, p.reserved, p.used) for p in c.hugepages), frozenset(c.pinned),
                   c.cpu_usage, c.memory_usage, c.small_pages_used_mb) for c in spec.cells)
    return (cells, tuple(sorted((k, tuple(v)) for k, v in spec.physnet_numa_nodes.items())),
            tuple(spec.tunneled_numa_nodes), spec.role, spec.cpu_allocation_ratio, spec.ram_allocation_ratio,
            spec.reserved_host_memory_mb, spec.used_vcpus, spec.used_memory_mb, tuple(spec.ovs_physnets),
            spec.tunneled, json.dumps(spec.capabilities, sort_keys=True, default=str),
            json.dumps(spec.aggregate_metadata, sort_keys=True, default=str), tuple(sorted(spec.traits)),
            tuple(enabled_filters))


def _summary(cell: Any) -> CellSummary:
    pages = {p.size_kb: (p.free_kb, p.total_kb) for p in cell.mempages} if cell.mempages else {}
    return CellSummary(id=cell.id, socket=cell.socket, n_pcpus=len(cell.pcpuset), avail_pcpus=cell.avail_pcpus,
                       n_cpus=len(cell.cpuset), cpu_usage=cell.cpu_usage, memory=cell.memory,
                       memory_usage=cell.memory_usage, pages=pages, smallest=min(pages) if pages else None,
                       isolate_ok=max(map(len, cell.siblings), default=1) <= 1 or cell.pcpuset == cell.cpuset,
                       smt=max(map(len, cell.siblings), default=1) > 1)


def numa_topology(spec: HostSpec) -> Any:
    o = nova().objects
    cells = []
    for c in spec.cells:
        huge_mb = sum(p.size_kb * p.total for p in c.hugepages) // 1024
        pages = [o.NUMAPagesTopology(size_kb=SMALL_PAGE_KB, total=(c.memory_mb - huge_mb) * 1024 // SMALL_PAGE_KB,
                                     used=c.small_pages_used_mb * 1024 // SMALL_PAGE_KB, reserved=0)]
        pages += [o.NUMAPagesTopology(size_kb=p.size_kb, total=p.total, used=p.used, reserved=p.reserved)
                  for p in sorted(c.hugepages, key=lambda p: p.size_kb)]
        physnets = {name for name, nodes in spec.physnet_numa_nodes.items() if c.id in nodes}
        cells.append(o.NUMACell(
            id=c.id, socket=c.socket, cpuset=set(c.shared), pcpuset=set(c.dedicated), memory=c.memory_mb,
            cpu_usage=c.cpu_usage, memory_usage=c.memory_usage, pinned_cpus=set(c.pinned),
            siblings=[set(s) for s in c.siblings], mempages=pages,
            network_metadata=o.NetworkMetadata(physnets=physnets, tunneled=c.id in spec.tunneled_numa_nodes)))
    return o.NUMATopology(cells=cells)


def derived_device_spec(dev: DeviceSpec) -> dict[str, Any] | None:
    """The [pci] device_spec entry exposing a device: its VFs (regex on their generated addresses, so no sysfs
    look-up), or the PF itself with ``passthrough: pf``; tagged with the PF's physnet."""
    return _derived_device_spec(dev)


def _derived_device_spec(dev: DeviceSpec) -> dict[str, Any] | None:
    dom, bus, slot_fn = dev.address.split(":")
    if dev.passthrough == "none":
        return None
    if dev.passthrough == "vfs" and dev.vfs and dev.vfs.count:
        slots = sorted({a.split(":")[2].split(".")[0] for a in dev.vf_addresses()})
        spec: dict[str, Any] = {"vendor_id": dev.vfs.vendor_id, "product_id": dev.vfs.product_id,
                                "address": {"domain": f"^{dom}$", "bus": f"^{bus}$",
                                            "slot": "^(" + "|".join(slots) + ")$", "function": "^[0-7]$"}}
    else:
        slot, fn = slot_fn.split(".")
        spec = {"vendor_id": dev.vendor_id, "product_id": dev.product_id,
                "address": {"domain": f"^{dom}$", "bus": f"^{bus}$", "slot": f"^{slot}$", "function": f"^{fn}$"}}
    if dev.physnet:
        spec["physical_network"] = dev.physnet
    return spec


_POOLS_CACHE: dict[str, tuple[list[dict[str, Any]], dict[tuple[tuple[str, str], ...], list[str]]]] = {}


_TEMPLATES: dict[tuple[Any, ...], int] = {}  # template key -> its number
_TOPOLOGIES: dict[int, Any] = {}  # template number -> NUMATopology, never changed (usage makes a new one)
_SCHEDULER_STATS: dict[str, Any] = {}  # pools key -> scheduler-side PciDeviceStats shared until a host writes
_DEVICE_SPECS: dict[str, tuple[list[str], str]] = {}  # devices -> ([pci] device_spec entries, pools key)


def _pci_stats(spec: HostSpec, topology: Any, share: bool = False,
               placement: bool = False) -> tuple[Any, dict[tuple[tuple[str, str], ...], list[str]]]:
    n = nova()
    o = n.objects
    given = json.dumps(spec.device_spec, sort_keys=True) + repr(spec.devices) + ("+rp" if placement else "")
    known = _DEVICE_SPECS.get(given)  # the derived device spec is the devices' (hosts with count: N)
    if known is None:
        if spec.device_spec is not None:
            dev_spec = [json.dumps(s, sort_keys=True) for s in spec.device_spec]
        else:
            dev_spec = [json.dumps(s, sort_keys=True) for s in map(_derived_device_spec, spec.devices) if s]
        known = _DEVICE_SPECS[given] = (dev_spec, json.dumps([dev_spec, repr(spec.devices), placement]))
    dev_spec, key = known
    if key not in _POOLS_CACHE:  # hosts with the same devices (count: N) get the same pools
        _POOLS_CACHE[key] = _pools(spec, topology, dev_spec, placement)
    pools, free = _POOLS_CACHE[key]
    shared_key = key + repr([(c.id, c.socket) for c in topology.cells])
    if share and shared_key in _SCHEDULER_STATS:
        return _SCHEDULER_STATS[shared_key], {k: list(v) for k, v in free.items()}
    # The scheduler's view: pools without device objects. Its NUMA topology is only read for cell ids and
    # sockets (socket affinity policy), so it gets the static part, which keeps the deep copy in
    # support_requests cheap.
    slim = o.NUMATopology(cells=[o.NUMACell(id=c.id, socket=c.socket) for c in topology.cells])
    scheduler_side = n.pci_stats.PciDeviceStats(slim, stats=n.pci_device_pool.from_pci_stats(pools),
                                                dev_filter=n.whitelist.Whitelist([]))
    if share:
        _SCHEDULER_STATS[shared_key] = scheduler_side
    return scheduler_side, {k: list(v) for k, v in free.items()}


def _pools(spec: HostSpec, topology: Any, dev_spec: list[str],
           placement: bool) -> tuple[list[dict[str, Any]], dict[tuple[tuple[str, str], ...], list[str]]]:
    """The compute node's side: PciDevice objects through a PciDeviceStats with the [pci] device_spec; with
    ``placement`` (PCI in Placement) each pool is its resource provider's (pciplacement)."""
    n = nova()
    o, types = n.objects, n.fields.PciDeviceType
    try:
        compute_side = n.pci_stats.PciDeviceStats(topology, dev_filter=n.whitelist.Whitelist(dev_spec))
    except n.exception.NovaException as exc:
        raise UserError(f"host {spec.name}: [pci] device_spec rejected by Nova: {nova_message(exc)}") from None
    for d in spec.devices:
        pf = o.PciDevice(address=d.address, vendor_id=d.vendor_id, product_id=d.product_id,
                         dev_type=types.SRIOV_PF if d.vfs else types.STANDARD, numa_node=d.numa_node,
                         parent_addr=None, extra_info={}, status="available")
        if not d.used and not (d.vfs and d.vfs.used):
            compute_side.add_device(pf)
        if d.vfs:
            for i, addr in enumerate(d.vf_addresses()):
                if i < d.vfs.used:
                    continue
                compute_side.add_device(o.PciDevice(
                    address=addr, vendor_id=d.vfs.vendor_id, product_id=d.vfs.product_id, dev_type=types.SRIOV_VF,
                    numa_node=d.numa_node, parent_addr=d.address, extra_info={}, status="available"))
    if placement:
        pciplacement.tag_pools(compute_side.pools)
    free = {pool_key(p): sorted(dev.address for dev in p["devices"]) for p in compute_side.pools}
    # what to_device_pools_obj() sends to the scheduler, without deep-copying the device objects
    pools = [{k: v for k, v in p.items() if k != "devices"} for p in compute_side.pools]
    return pools, free


def build(spec: HostSpec, enabled_filters: list[str] | None = None, share: bool = False,
          pci_in_placement: bool = False) -> HostState:
    """One host; with ``share``, hosts of the same template share one NUMATopology object (Nova's usage
    accounting never changes it, it builds a new one) and one PciDeviceStats until they take a device.
    ``pci_in_placement``: its PCI pools carry their resource provider (pciplacement)."""
    enabled = list(DEFAULT_FILTERS if enabled_filters is None else enabled_filters)
    template = _TEMPLATES.setdefault(template_key(spec, enabled), len(_TEMPLATES))
    topology = _TOPOLOGIES.get(template) if share else None
    if topology is None:
        topology = numa_topology(spec)
        if share:
            _TOPOLOGIES[template] = topology
    pci, free = _pci_stats(spec, topology, share, pci_in_placement)
    shared = sum(len(c.shared) for c in spec.cells)
    return HostState(
        spec=spec, topology=topology, pci=pci, free_devices=free, device_totals={k: len(v) for k, v in free.items()},
        vcpu_total=shared * spec.cpu_allocation_ratio, pcpu_total=sum(len(c.dedicated) for c in spec.cells),
        # Placement's capacity: (total - reserved) x allocation_ratio
        mem_total=(sum(c.memory_mb for c in spec.cells) - spec.reserved_host_memory_mb) * spec.ram_allocation_ratio,
        vcpu_used=spec.used_vcpus + sum(c.cpu_usage for c in spec.cells),
        pcpu_used=sum(len(c.pinned) for c in spec.cells),
        mem_used=spec.used_memory_mb + sum(c.memory_usage for c in spec.cells),
        flavor_vcpus_used=spec.used_vcpus + sum(c.cpu_usage + len(c.pinned) for c in spec.cells),
        enabled_filters=enabled, template=template, pci_shared=share and pci is not None)
