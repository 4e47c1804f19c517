"""What ``nfvcat check`` can only learn on the compute host, never through an API: the pCPUs of an instance's
emulator threads, the PCI devices Nova allocated for its SR-IOV ports, and (:class:`SwitchAccess`, the dev cloud
only) the OpenFlow flows and groups on a host's integration bridge.

Two sources (``check --host-access``):
- ``devcloud``: the dev cloud's own recorded state (its state directory; Nova's database: ``instance_extra``
  numa_topology, ``pci_devices``), which is what its simulated hypervisor would have given libvirt;
- a directory of libvirt domain XML files (``virsh dumpxml <domain> > DIR/<instance uuid>.xml`` on each compute):
  ``<cputune>`` ``vcpupin``/``emulatorpin`` and the ``<hostdev>`` PCI source addresses.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from nfvcat.errors import EXIT_ENGINE, UserError


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
    from nfvcat.plan.inventory import parse_cpu_spec

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


class DevcloudState:
    """The dev cloud's recorded state: Nova's cell database (the dev cloud's MariaDB, credentials in its state
    directory)."""

    def __init__(self, root: Path) -> None:
        secrets = root / "secrets.json"
        if not secrets.is_file():
            raise UserError(f"--host-access devcloud: no dev cloud state in {root} (run `nfvcat devcloud up`)",
                            EXIT_ENGINE)
        self.password = str(json.loads(secrets.read_text())["db"])
        self.name = f"dev cloud state in {root}"
        self._db: Any = None
        self.root = root
        self._switches: DevcloudSwitches | None = None

    @property
    def switches(self) -> DevcloudSwitches:
        if self._switches is None:
            self._switches = DevcloudSwitches(self.root)
        return self._switches

    def knows(self, host: str) -> bool:
        return self.switches.knows(host)

    def ofport(self, host: str, port_id: str) -> int | None:
        return self.switches.ofport(host, port_id)

    def openflow(self, host: str, bridge: str, what: str) -> str | None:
        return self.switches.openflow(host, bridge, what)

    def query(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        import pymysql

        from nfvcat.devcloud.state import HOST, PORTS

        if self._db is None:
            try:
                self._db = pymysql.connect(host=HOST, port=PORTS["mariadb"], user="nfvcat", password=self.password,
                                           database="nova", connect_timeout=5)
            except pymysql.MySQLError as exc:
                raise UserError(f"--host-access devcloud: cannot read Nova's database: {exc}", EXIT_ENGINE) from None
        with self._db.cursor() as cur:
            cur.execute(sql, args)
            return list(cur.fetchall())

    def facts(self, server_id: str, host: str | None) -> HostFacts | None:
        rows = self.query("SELECT numa_topology FROM instance_extra WHERE instance_uuid=%s AND deleted=0", server_id)
        if not rows:
            return None
        facts = HostFacts()
        topo = json.loads(rows[0][0]) if rows[0][0] else None
        if topo:
            data = topo.get("nova_object.data", {})
            facts.emulator_policy = data.get("emulator_threads_policy")
            reserved: set[int] = set()
            for cell in data.get("cells") or []:
                c = cell.get("nova_object.data", {})
                facts.pinning.update({int(k): int(v) for k, v in (c.get("cpu_pinning_raw") or {}).items()})
                reserved |= {int(x) for x in c.get("cpuset_reserved") or []}
            # Nova's libvirt driver pins the emulator threads to cpuset_reserved under policy isolate; under
            # share they float on [compute] cpu_shared_set (not dedicated pCPUs)
            facts.emulator_pcpus = reserved if reserved or facts.emulator_policy == "isolate" else None
        facts.pci = [str(r[0]) for r in self.query(
            "SELECT address FROM pci_devices WHERE instance_uuid=%s AND deleted=0 AND status='allocated' "
            "ORDER BY address", server_id)]
        return facts


class DevcloudSwitches:
    """The Open vSwitch instances of the dev cloud's compute hosts (one per inventory host, nfvcat.devcloud.computes),
    read with ovs-vsctl and ovs-ofctl on their run directories."""

    def __init__(self, root: Path) -> None:
        from nfvcat.cloud.placement_check import load_inventory
        from nfvcat.devcloud import computes
        from nfvcat.devcloud.state import State

        self.state = State(root)
        self.computes = {c.name: c for c in computes.site_layout(load_inventory(None))}

    def knows(self, host: str) -> bool:
        return host in self.computes and (self.computes[host].ovs_run(self.state) / "db.sock").exists()

    def _run(self, host: str, argv: list[str]) -> str | None:
        import os
        import subprocess

        from nfvcat.devcloud import computes

        if not self.knows(host):
            return None
        env = {**os.environ, **computes.ovs_env(self.state, self.computes[host])}
        try:
            res = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise UserError(f"--host-access devcloud: {argv[0]} on {host}: {exc}", EXIT_ENGINE) from None
        if res.returncode != 0:
            raise UserError(f"--host-access devcloud: {' '.join(argv[:4])} on {host}: {res.stderr.strip()[:300]}",
                            EXIT_ENGINE)
        return res.stdout

    def ofport(self, host: str, port_id: str) -> int | None:
        out = self._run(host, ["ovs-vsctl", "--timeout=10", "--bare", "--columns=ofport", "find", "Interface",
                               f"external_ids:iface-id={port_id}"])
        numbers = [int(x) for x in (out or "").split() if x.lstrip("-").isdigit() and int(x) > 0]
        return numbers[0] if numbers else None

    def openflow(self, host: str, bridge: str, what: str) -> str | None:
        return self._run(host, ["ovs-ofctl", "-O", "OpenFlow13", "--no-names", what, bridge])


def open_access(spec: str | None) -> HostAccess | None:
    """``devcloud`` (the dev cloud's state directory), a directory of libvirt domain XML, or None."""
    if not spec:
        return None
    if spec == "devcloud":
        from nfvcat.devcloud.state import default_dir

        return DevcloudState(default_dir())
    return LibvirtXml(Path(spec))
