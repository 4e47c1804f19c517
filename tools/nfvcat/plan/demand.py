"""A VNF as the scheduler would get it: Nova's flavor and image objects, the instance NUMA topology from
``numa_get_constraints``, PCI requests from the flavor's alias and from SR-IOV ports, placement resources."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nfvcat.plan.novaenv import nova, nova_message
from nfvcat.plan.request import Vnf

PAGE_NAMES = {-1: "small", -2: "large", -3: "any"}


@dataclass
class CellNeed:
    pcpus: int
    cpus: int
    memory: int
    pagesize: int | None  # None, a size in KiB, or Nova's -1 small / -2 large / -3 any
    dedicated: bool
    isolate: bool = False  # hw:cpu_thread_policy=isolate
    require: bool = False  # hw:cpu_thread_policy=require


@dataclass
class Demand:
    vnf: Vnf
    flavor: Any = None
    image: Any = None
    topology: Any = None  # InstanceNUMATopology or None
    topology_primitive: Any = None  # the same, serialised: numa_fit mutates its input, so each fit gets a copy
    pci_requests: list[Any] = field(default_factory=list)
    pci_labels: list[str] = field(default_factory=list)  # per request: "alias qat" / "port direct physnet sriov1"
    network_metadata: Any = None
    vcpus: int = 0  # placement VCPU
    pcpus: int = 0  # placement PCPU
    memory_mb: int = 0
    cells: list[CellNeed] = field(default_factory=list)
    emulator_isolate: bool = False
    thread_policy: str | None = None
    invalid: str | None = None  # Nova rejects the flavor/image: nowhere fits
    ovs_physnets: set[str] = field(default_factory=set)
    needs_tunnel: bool = False
    vhostuser: bool = False
    static_cache: dict[int, tuple[str, str] | None] = field(default_factory=dict)
    failed_at: dict[int, int] = field(default_factory=dict)  # host index -> host version when it failed

    @property
    def name(self) -> str:
        return self.vnf.name


def build(vnf: Vnf) -> Demand:
    n = nova()
    o, hw = n.objects, n.hardware
    fl = vnf.flavor
    d = Demand(vnf=vnf, memory_mb=fl.ram)
    d.flavor = o.Flavor(name=fl.name, flavorid=fl.name, vcpus=fl.vcpus, memory_mb=fl.ram, root_gb=fl.disk,
                        ephemeral_gb=0, swap=0, extra_specs=dict(fl.extra_specs))
    try:
        d.image = o.ImageMeta.from_dict({"properties": dict(vnf.image_properties)})
        d.topology = hw.numa_get_constraints(d.flavor, d.image)
        policy = hw.get_pci_numa_policy_constraint(d.flavor, d.image)
        d.pci_requests = list(n.pci_request.get_pci_requests_from_flavor(d.flavor, affinity_policy=policy).requests)
    except (n.exception.NovaException, ValueError) as exc:
        d.invalid = f"Nova rejects flavor '{fl.name}': {nova_message(exc)}"
        return d
    d.pci_labels = [f"alias {r.alias_name}" for r in d.pci_requests]
    physnets: set[str] = set()
    for port in vnf.ports:
        if port.physnet:
            physnets.add(port.physnet)
        if port.vnic_type in n.network_model.VNIC_TYPES_SRIOV:
            if not port.physnet:
                d.invalid = f"{port.vnic_type} port without a physnet: Nova cannot build its PCI request"
                return d
            spec = {n.pci_request.PCI_NET_TAG: port.physnet,
                    n.pci_request.PCI_REMOTE_MANAGED_TAG: str(port.vnic_type == "remote-managed")}
            dev_type = n.pci_request.DEVICE_TYPE_FOR_VNIC_TYPE.get(port.vnic_type)
            if dev_type:
                spec[n.pci_request.PCI_DEVICE_TYPE_TAG] = dev_type
            req = o.InstancePCIRequest(count=1, spec=[spec], request_id=n.uuidutils.generate_uuid())
            if policy:
                req.numa_policy = policy
            d.pci_requests.append(req)
            d.pci_labels.append(f"port {port.vnic_type} physnet {port.physnet}")
        elif port.physnet:
            d.ovs_physnets.add(port.physnet)
            d.vhostuser = True
        else:
            d.needs_tunnel = True
            d.vhostuser = True
    if vnf.ports:
        d.network_metadata = o.NetworkMetadata(physnets=physnets, tunneled=d.needs_tunnel)
    _resources(d)
    return d


def _resources(d: Demand) -> None:
    fields = nova().fields
    topo = d.topology
    if topo is None:
        d.vcpus = d.flavor.vcpus
        return
    d.topology_primitive = topo.obj_to_primitive()
    d.emulator_isolate = bool(topo.emulator_threads_isolated)
    for c in topo.cells:
        dedicated = c.cpu_policy in (fields.CPUAllocationPolicy.DEDICATED, fields.CPUAllocationPolicy.MIXED)
        pcpus = len(c.pcpuset) if dedicated else 0
        d.cells.append(CellNeed(pcpus=pcpus, cpus=len(c.cpuset), memory=c.memory,
                                pagesize=c.pagesize if "pagesize" in c and c.pagesize else None,
                                dedicated=dedicated,
                                isolate=dedicated and c.cpu_thread_policy == fields.CPUThreadAllocationPolicy.ISOLATE,
                                require=dedicated and c.cpu_thread_policy == fields.CPUThreadAllocationPolicy.REQUIRE))
        d.thread_policy = c.cpu_thread_policy if "cpu_thread_policy" in c else None
        d.pcpus += pcpus
        d.vcpus += len(c.cpuset)
    if d.emulator_isolate:
        d.pcpus += 1


def page_label(size: int | None) -> str:
    if size is None:
        return "-"
    if size < 0:
        return PAGE_NAMES.get(size, str(size))
    if size >= 1024 * 1024:
        return f"{size // (1024 * 1024)}G"
    if size >= 1024:
        return f"{size // 1024}M"
    return f"{size}K"
