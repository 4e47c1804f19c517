"""The dev cloud's host access (``check --host-access devcloud``): its own recorded state (its state directory;
Nova's database: ``instance_extra`` numa_topology and pci_requests, ``pci_devices``, ``compute_nodes``
numa_topology), which is what its simulated hypervisor would have given libvirt, and the Open vSwitch of each
of its compute hosts. These are the records Nova's API reads too, not a running guest: the verdicts say "from
Nova's records". It provides ``nfvcat.cloud.hostaccess``'s interface; ``nfvcat.cloud`` does not know it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from nfvcat.catalog import inventory
from nfvcat.cloud.hostaccess import GuestFacts, HostAccess, HostCell, HostFacts, HostPages, PciDevice
from nfvcat.core.errors import EXIT_ENGINE, UserError
from nfvcat_testbeds.devcloud import computes, guests
from nfvcat_testbeds.devcloud.lifecycle import inventory_of
from nfvcat_testbeds.devcloud.state import HOST, PORTS, State, default_dir


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
        self.source = "from Nova's records"  # what the simulated hypervisor would have given libvirt
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
        import pymysql  # only with --host-access devcloud: not at every check's start

        if self._db is None:
            try:
                self._db = pymysql.connect(host=HOST, port=PORTS["mariadb"], user="nfvcat", password=self.password,
                                           database="nova", connect_timeout=5)
            except pymysql.MySQLError as exc:
                raise UserError(f"--host-access devcloud: cannot read Nova's database: {exc}", EXIT_ENGINE) from None
        with self._db.cursor() as cur:
            cur.execute(sql, args)
            return list(cur.fetchall())

    def guest(self, server_id: str, host: str | None) -> GuestFacts | None:
        """The running guest, where ``host`` is the dev cloud's real host (a simulated one runs none)."""
        c = self.switches.computes.get(host or "")
        if c is None or not c.real:
            return None
        return guests.guest_facts(self.switches.state, c.name, server_id)

    def facts(self, server_id: str, host: str | None) -> HostFacts | None:
        rows = self.query("SELECT numa_topology, pci_requests FROM instance_extra WHERE instance_uuid=%s AND "
                          "deleted=0", server_id)
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
        # InstancePCIRequest: a Neutron port's request carries the port as requester_id
        port_of = {r.get("request_id"): r.get("requester_id") for r in json.loads(rows[0][1] or "[]")
                   if r.get("requester_id")}
        facts.pci = [PciDevice(str(address), None if node is None else int(node), str(parent) if parent else None,
                               port_of.get(request))
                     for address, node, parent, request in self.query(
                         "SELECT address, numa_node, parent_addr, request_id FROM pci_devices WHERE instance_uuid=%s "
                         "AND deleted=0 AND status='allocated' ORDER BY address", server_id)]
        return facts

    def cells(self, host: str) -> list[HostCell] | None:
        """The NUMA cells the host's nova-compute recorded (compute_nodes.numa_topology, what its driver
        reported: libvirt's capabilities on a real host)."""
        rows = self.query("SELECT numa_topology FROM compute_nodes WHERE host=%s AND deleted=0", host)
        if not rows or not rows[0][0]:
            return None
        out = []
        for cell in json.loads(rows[0][0]).get("nova_object.data", {}).get("cells") or []:
            c = cell.get("nova_object.data", {})
            pages = [pg.get("nova_object.data", {}) for pg in c.get("mempages") or []]
            out.append(HostCell(int(c["id"]), {int(x) for x in c.get("pcpuset") or []},
                                {int(x) for x in c.get("cpuset") or []},
                                [{int(x) for x in s} for s in c.get("siblings") or []],
                                memory_mb=int(c["memory"]) if c.get("memory") is not None else None,
                                pages=[HostPages(int(pg["size_kb"]), int(pg.get("total") or 0),
                                                 int(pg.get("used") or 0), int(pg.get("reserved") or 0))
                                       for pg in pages if int(pg.get("size_kb") or 4) > 4],
                                pinned={int(x) for x in c.get("pinned_cpus") or []},
                                socket=int(c["socket"]) if c.get("socket") is not None else None,
                                cpu_usage=int(c.get("cpu_usage") or 0), memory_usage=int(c.get("memory_usage") or 0)))
        return out


class DevcloudSwitches:
    """The Open vSwitch instances of the dev cloud's compute hosts (one per inventory host,
    nfvcat_testbeds.devcloud.computes), read with ovs-vsctl and ovs-ofctl on their run directories."""

    def __init__(self, root: Path) -> None:
        self.state = State(root)
        self.computes = {c.name: c for c in computes.site_layout(inventory.load(str(inventory_of(self.state))))}

    def knows(self, host: str) -> bool:
        return host in self.computes and (self.computes[host].ovs_run(self.state) / "db.sock").exists()

    def _run(self, host: str, argv: list[str]) -> str | None:
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


def open_devcloud() -> HostAccess:
    """``check --host-access devcloud`` (the ``nfvcat.host_access`` entry point ``devcloud``): the recorded
    state of the dev cloud in the default state directory."""
    return DevcloudState(default_dir())


def load_inventory(path: str | None) -> inventory.Inventory:
    """The given inventory file, else the one the dev cloud was started with, else the dev cloud's default (the
    test beds' own; the product's commands default to the reference inventory)."""
    return inventory.load(path or str(inventory_of(State(default_dir()))))
