"""What ``nfvcat check`` can only learn on the compute host, never through an API: the pCPUs of an instance's
emulator threads, the PCI devices it was given (each with its NUMA node and the Neutron port it was allocated
for, where the source says), the host's own NUMA cells and thread siblings, and (:class:`SwitchAccess`, the dev
cloud only) the OpenFlow flows and groups on a host's integration bridge.

The interface is :class:`HostAccess` (and :class:`SwitchAccess`); this module knows one source that any cloud
can give, a directory of libvirt domain XML files (``virsh dumpxml <domain> > DIR/<instance uuid>.xml`` on each
compute): ``<cputune>`` ``vcpupin``/``emulatorpin``, the ``<hostdev>`` PCI source addresses and those of
``<interface type='hostdev'>`` (a port's VF, known by the interface's MAC). The dev cloud
provides another (``check --host-access devcloud``: ``nfvcat_testbeds.devcloud.hostaccess``); code for any cloud
knows no dev cloud.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from nfvcat.core.errors import UserError


@dataclass
class PciDevice:
    """A PCI device given to an instance, as the host access's source records it."""
    address: str
    numa_node: int | None = None  # None: the source does not say (a domain XML names no node)
    parent: str | None = None  # a VF's PF
    port_id: str | None = None  # the Neutron port it was allocated for (Nova's PCI request: requester_id)
    mac: str | None = None  # the guest interface's MAC (libvirt: <interface type='hostdev'>)

    @property
    def for_port(self) -> bool:
        """Given for a Neutron port (else for the flavor's pci_passthrough:alias)."""
        return self.port_id is not None or self.mac is not None


@dataclass
class HostFacts:
    """One instance as its compute host has it."""
    pinning: dict[int, int] = field(default_factory=dict)  # vCPU -> pCPU
    emulator_pcpus: set[int] | None = None  # None: emulator threads float (not pinned to dedicated pCPUs)
    emulator_policy: str | None = None
    pci: list[PciDevice] = field(default_factory=list)  # PCI devices given to the instance


@dataclass
class HostPages:
    """Huge pages of one size in a host cell (Nova's NUMAPagesTopology)."""
    size_kb: int
    total: int
    used: int = 0
    reserved: int = 0


@dataclass
class HostCell:
    """A NUMA cell of a compute host as the host reports it (Nova's NUMACell)."""
    id: int
    dedicated: set[int]  # pcpuset: [compute] cpu_dedicated_set
    shared: set[int]  # cpuset: [compute] cpu_shared_set
    siblings: list[set[int]]  # the threads of each core
    memory_mb: int | None = None  # None: the source does not say
    pages: list[HostPages] = field(default_factory=list)  # huge pages (not the 4 KiB ones), per size
    pinned: set[int] = field(default_factory=set)  # pCPUs pinned guests hold now
    socket: int | None = None
    cpu_usage: int = 0  # Nova's record: floating vCPUs of guests in the cell
    memory_usage: int = 0  # MiB guests hold in the cell


class HostAccess(Protocol):
    name: str
    source: str  # what a verdict's detail says its facts come from ("from Nova's records")

    def facts(self, server_id: str, host: str | None) -> HostFacts | None:
        """None when this source does not know the instance."""

    def cells(self, host: str) -> list[HostCell] | None:
        """The compute host's NUMA cells, None when this source does not know them."""


@runtime_checkable
class SwitchAccess(Protocol):
    """A host access that can read a compute host's Open vSwitch."""
    name: str

    def knows(self, host: str) -> bool:
        """Whether this source reaches the switch of ``host``."""

    def ofport(self, host: str, port_id: str) -> int | None:
        """The OpenFlow port number of Neutron port ``port_id`` (external-ids:iface-id) on the host's switch."""

    def openflow(self, host: str, bridge: str, what: str) -> str | None:
        """``ovs-ofctl -O OpenFlow13 --no-names <what> <bridge>`` (dump-flows, dump-groups) on the host."""


def _cpus(text: str) -> set[int]:
    from nfvcat.catalog.inventory import parse_cpu_spec

    return parse_cpu_spec(text)


class LibvirtXml:
    """Domain XML files named <instance uuid>.xml (or <libvirt domain name>.xml) in one directory; a host's own
    topology from ``<host>.capabilities.xml`` (``virsh capabilities``: NUMA cells, thread siblings, huge pages per
    size and cell) with its CPU sets from ``<host>.nova.conf`` (``[compute] cpu_dedicated_set`` and
    ``cpu_shared_set``, or the legacy ``[DEFAULT] vcpu_pin_set``)."""

    def __init__(self, directory: Path) -> None:
        if not directory.is_dir():
            raise UserError(f"--host-access {directory}: not a directory of libvirt domain XML files")
        self.dir = directory
        self.name = f"libvirt XML in {directory}"
        self.source = "from the guest's libvirt domain XML"
        self.topology_source = "from the host's libvirt capabilities and nova.conf"

    def facts(self, server_id: str, host: str | None) -> HostFacts | None:
        path = self.dir / f"{server_id}.xml"
        if not path.is_file():
            for cand in self.dir.glob("*.xml"):
                try:
                    if (ET.parse(cand).findtext("uuid") or "").strip() == server_id:
                        path = cand
                        break
                except ET.ParseError:
                    continue
            else:
                return None
        try:
            root = ET.parse(path).getroot()
        except ET.ParseError as exc:
            raise UserError(f"{path}: not libvirt domain XML: {exc}") from None
        return domain_facts(root)

    def cells(self, host: str) -> list[HostCell] | None:
        """The host's cells from its capabilities and nova.conf; None when either file is missing (the CPU sets
        are nova.conf's: libvirt does not know them)."""
        caps, conf = self.dir / f"{host}.capabilities.xml", self.dir / f"{host}.nova.conf"
        if not (caps.is_file() and conf.is_file()):
            return None
        try:
            root = ET.fromstring(bounded_read(caps))
        except ET.ParseError as exc:
            raise UserError(f"{caps}: not libvirt capabilities XML: {exc}") from None
        dedicated, shared = nova_cpu_sets(bounded_read(conf), str(conf))
        return capabilities_cells(root, dedicated, shared, str(caps))


MAX_HOST_FILE = 8 << 20  # a capabilities XML or nova.conf larger than this is not one


def bounded_read(path: Path) -> str:
    """A regular file's text, at most MAX_HOST_FILE bytes (a FIFO or device is refused)."""
    if not path.is_file():
        raise UserError(f"{path}: not a regular file")
    with path.open("rb") as f:
        data = f.read(MAX_HOST_FILE + 1)
    if len(data) > MAX_HOST_FILE:
        raise UserError(f"{path}: larger than {MAX_HOST_FILE >> 20} MiB")
    return data.decode("utf-8", errors="replace")


def nova_cpu_sets(text: str, where: str) -> tuple[set[int] | None, set[int] | None]:
    """nova.conf's (cpu_dedicated_set, cpu_shared_set); with the legacy ``vcpu_pin_set`` both are that set (Nova's
    libvirt driver reports pcpuset = cpuset then). None: not set."""
    import configparser

    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text, source=where)
    except configparser.Error as exc:
        raise UserError(f"{where}: not an INI file: {str(exc).splitlines()[0]}") from None

    def get(section: str, key: str) -> set[int] | None:
        raw = parser.get(section, key, fallback="").strip() if parser.has_section(section) or section == "DEFAULT" \
            else ""
        if not raw:
            return None
        try:
            return _cpus(raw)
        except ValueError as exc:
            raise UserError(f"{where}: [{section}] {key}: {exc}") from None

    dedicated, shared = get("compute", "cpu_dedicated_set"), get("compute", "cpu_shared_set")
    legacy = get("DEFAULT", "vcpu_pin_set")
    if dedicated is None and legacy is not None:
        return legacy, legacy
    return dedicated, shared


def capabilities_cells(root: ET.Element, dedicated: set[int] | None, shared: set[int] | None,
                       where: str) -> list[HostCell]:
    """The NUMA cells of a libvirt capabilities document (``<host><topology><cells>``), each cell's CPUs split
    by nova.conf's sets as Nova's libvirt driver does (a CPU in neither set is the host's own); no set at all:
    every CPU shared, as Nova's driver then reports them."""
    out = []
    for cell in root.findall("./host/topology/cells/cell"):
        try:
            cid = int(cell.get("id", ""))
            cpus = {int(c.get("id", "")) for c in cell.findall("./cpus/cpu")}
            siblings: list[set[int]] = []
            for c in cell.findall("./cpus/cpu"):
                core = _cpus(c.get("siblings") or c.get("id") or "") & cpus
                if core and core not in siblings:
                    siblings.append(core)
            mem = cell.find("./memory")
            memory_mb = _kib(mem) // 1024 if mem is not None else None
            pages = [HostPages(_page_kib(pg), int((pg.text or "0").strip())) for pg in cell.findall("./pages")]
            sockets = {c.get("socket_id") for c in cell.findall("./cpus/cpu")}
        except ValueError as exc:
            raise UserError(f"{where}: cell {cell.get('id')}: {exc}") from None
        own_dedicated = cpus & dedicated if dedicated is not None else set()
        own_shared = cpus & shared if shared is not None else (set() if dedicated is not None else cpus)
        out.append(HostCell(cid, own_dedicated, own_shared, siblings, memory_mb,
                            [p for p in pages if p.size_kb > 4], socket=int(next(iter(sockets)) or 0)
                            if len(sockets) == 1 and None not in sockets else None))
    if not out:
        raise UserError(f"{where}: no <host><topology><cells><cell> (not `virsh capabilities` output)")
    return out


def _kib(el: ET.Element) -> int:
    unit = el.get("unit", "KiB").lower()
    return int((el.text or "0").strip()) * {"kib": 1, "k": 1, "mib": 1024, "m": 1024, "gib": 1 << 20,
                                               "g": 1 << 20, "b": 0}.get(unit, 1)


def _page_kib(el: ET.Element) -> int:
    size = int(el.get("size", "0"))
    return size * {"kib": 1, "k": 1, "mib": 1024, "m": 1024, "gib": 1 << 20, "g": 1 << 20}.get(
        el.get("unit", "KiB").lower(), 1)


def inventory_cells(cells: list[HostCell]) -> list[dict[str, Any]]:
    """A host's cells as ``nfvcat plan``'s inventory writes them (numa_cells), with what Nova's record says is
    used now (pinned pCPUs, huge pages in use)."""
    from nfvcat.catalog.inventory import cpu_spec

    out = []
    for c in cells:
        cpus = c.dedicated | c.shared
        cell: dict[str, Any] = {"id": c.id, "socket": c.socket, "cpu_shared_set": cpu_spec(c.shared),
                                "cpu_dedicated_set": cpu_spec(c.dedicated),
                                "siblings": [cpu_spec(s & cpus) for s in c.siblings if s & cpus],
                                "memory_mb": c.memory_mb or 0,
                                "hugepages": [{"size": f"{p.size_kb}K", "total": p.total, "reserved": p.reserved,
                                               "used": p.used} for p in c.pages if p.total]}
        used = {k: v for k, v in (("pinned_cpus", cpu_spec(c.pinned & c.dedicated)), ("cpu_usage", c.cpu_usage),
                                  ("memory_mb", c.memory_usage)) if v}
        if used:
            cell["used"] = used
        out.append(cell)
    return out


def domain_facts(root: ET.Element) -> HostFacts:
    """What a libvirt domain XML says of placement: ``<cputune>`` vcpupin/emulatorpin, the hostdev PCI devices."""
    facts = HostFacts()
    for pin in root.findall("./cputune/vcpupin"):
        cpus = _cpus(pin.get("cpuset", ""))
        if len(cpus) == 1:
            facts.pinning[int(pin.get("vcpu", "-1"))] = next(iter(cpus))
    emu = root.find("./cputune/emulatorpin")
    if emu is not None:
        facts.emulator_pcpus = _cpus(emu.get("cpuset", ""))
    for addr in root.findall("./devices/hostdev/source/address"):
        if (address := pci_address(addr)) is not None:
            facts.pci.append(PciDevice(address))
    for iface in root.findall("./devices/interface[@type='hostdev']"):
        source, mac = iface.find("./source/address"), iface.find("./mac")
        if source is not None and (address := pci_address(source)) is not None:
            facts.pci.append(PciDevice(address, mac=mac.get("address", "").lower() if mac is not None else ""))
    return facts


@dataclass
class GuestFacts:
    """A running guest as its compute host has it: its libvirt domain (placement, memory backing, NUMA memory)
    and its QEMU process (each thread's CPU affinity, the memory it maps on huge pages)."""
    domain: HostFacts
    page_size_kb: int | None  # <memoryBacking><hugepages><page size>, None: small pages
    memnodes: dict[int, set[int]]  # <numatune><memnode cellid> -> host NUMA nodes
    vcpu_threads: dict[int, set[int]]  # vCPU -> Cpus_allowed_list of its QEMU thread
    other_threads: dict[str, set[int]]  # every other QEMU thread ("name/tid") -> Cpus_allowed_list
    huge_mb: int  # memory the QEMU process maps on huge pages (smaps)


def guest_domain(root: ET.Element) -> tuple[HostFacts, int | None, dict[int, set[int]]]:
    """A domain XML's placement facts, huge page size (KiB) and memnode map."""
    page = root.find("./memoryBacking/hugepages/page")
    size = None
    if root.find("./memoryBacking/hugepages") is not None:
        size = int(page.get("size", "0")) if page is not None else 0
        if page is not None and page.get("unit", "KiB").lower() in ("m", "mib"):
            size *= 1024
    memnodes = {int(m.get("cellid", "-1")): _cpus(m.get("nodeset", "")) for m in root.findall("./numatune/memnode")}
    return domain_facts(root), size, memnodes


@runtime_checkable
class GuestAccess(Protocol):
    """A host access that can read a running guest (its libvirt domain and QEMU process) on its host."""
    name: str

    def guest(self, server_id: str, host: str | None) -> GuestFacts | None:
        """None when this source cannot see the guest (not on a host it reaches, or not running)."""


def pci_address(addr: ET.Element) -> str | None:
    """A libvirt <address domain bus slot function> as 0000:3b:02.1."""
    try:
        return (f"{int(addr.get('domain', '0'), 16):04x}:{int(addr.get('bus', '0'), 16):02x}:"
                f"{int(addr.get('slot', '0'), 16):02x}.{int(addr.get('function', '0'), 16)}")
    except ValueError:
        return None


def open_access(spec: str | None) -> HostAccess | None:
    """What ``check --host-access`` names: a source an installed plugin offers by name (``nfvcat.host_access``
    entry points: ``nfvcat-testbeds`` offers ``devcloud``), else a directory of libvirt domain XML, else None."""
    from nfvcat.core import plugins

    if not spec:
        return None
    factory = plugins.load(plugins.HOST_ACCESS, spec)
    if factory is not None:
        access: HostAccess = factory()
        return access
    if not Path(spec).is_dir():
        offered = plugins.names(plugins.HOST_ACCESS)
        raise UserError(f"--host-access {spec}: no such directory of libvirt domain XML"
                        + (f", nor a source an installed plugin offers ({', '.join(offered)})" if offered else ""))
    return LibvirtXml(Path(spec))


def reader(access: HostAccess | None) -> Callable[[str], tuple[str, list[dict[str, Any]]] | None] | None:
    """What ``inventory collect`` and ``preflight`` read of a host through ``access``: (source, its inventory
    cells), None where the access does not know the host."""
    if access is None:
        return None

    def read(host: str) -> tuple[str, list[dict[str, Any]]] | None:
        cells = access.cells(host)
        source = getattr(access, "topology_source", access.source)
        return None if cells is None else (f"read {source} ({access.name})", inventory_cells(cells))

    return read
