"""What ``nfvcat check`` can only learn on the compute host, never through an API: the pCPUs of an instance's
emulator threads, the PCI devices Nova allocated for its SR-IOV ports, and (:class:`SwitchAccess`, the dev cloud
only) the OpenFlow flows and groups on a host's integration bridge.

The interface is :class:`HostAccess` (and :class:`SwitchAccess`); this module knows one source that any cloud
can give, a directory of libvirt domain XML files (``virsh dumpxml <domain> > DIR/<instance uuid>.xml`` on each
compute): ``<cputune>`` ``vcpupin``/``emulatorpin`` and the ``<hostdev>`` PCI source addresses. The dev cloud
provides another (``check --host-access devcloud``: ``nfvcat.lab.devcloud.hostaccess``); code for any cloud
knows no dev cloud.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from nfvcat.core.errors import UserError


@dataclass
class HostFacts:
    """One instance as its compute host has it."""
    pinning: dict[int, int] = field(default_factory=dict)  # vCPU -> pCPU
    emulator_pcpus: set[int] | None = None  # None: emulator threads float (not pinned to dedicated pCPUs)
    emulator_policy: str | None = None
    pci: list[str] = field(default_factory=list)  # PCI addresses given to the instance


class HostAccess(Protocol):
    name: str

    def facts(self, server_id: str, host: str | None) -> HostFacts | None:
        """None when this source does not know the instance."""


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
    """Domain XML files named <instance uuid>.xml (or <libvirt domain name>.xml) in one directory."""

    def __init__(self, directory: Path) -> None:
        if not directory.is_dir():
            raise UserError(f"--host-access {directory}: not a directory of libvirt domain XML files")
        self.dir = directory
        self.name = f"libvirt XML in {directory}"

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
        facts = HostFacts()
        for pin in root.findall("./cputune/vcpupin"):
            cpus = _cpus(pin.get("cpuset", ""))
            if len(cpus) == 1:
                facts.pinning[int(pin.get("vcpu", "-1"))] = next(iter(cpus))
        emu = root.find("./cputune/emulatorpin")
        if emu is not None:
            facts.emulator_pcpus = _cpus(emu.get("cpuset", ""))
        for addr in root.findall("./devices/hostdev/source/address"):
            try:
                facts.pci.append(f"{int(addr.get('domain', '0'), 16):04x}:{int(addr.get('bus', '0'), 16):02x}:"
                                 f"{int(addr.get('slot', '0'), 16):02x}.{int(addr.get('function', '0'), 16)}")
            except ValueError:
                continue
        for iface in root.findall("./devices/interface[@type='hostdev']/source/address"):
            facts.pci.append(f"{int(iface.get('domain', '0'), 16):04x}:{int(iface.get('bus', '0'), 16):02x}:"
                             f"{int(iface.get('slot', '0'), 16):02x}.{int(iface.get('function', '0'), 16)}")
        return facts


def open_access(spec: str | None, providers: dict[str, Callable[[], HostAccess]] | None = None) -> HostAccess | None:
    """What ``check --host-access`` names: a source a provider offers by name (the dev cloud offers
    ``devcloud``; see ``nfvcat.lab.devcloud.hostaccess``), else a directory of libvirt domain XML, else None."""
    if not spec:
        return None
    if providers and spec in providers:
        return providers[spec]()
    return LibvirtXml(Path(spec))
