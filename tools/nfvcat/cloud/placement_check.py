"""``nfvcat check``: is each VNF of a deployed chain bound and placed as its flavor and ports demand? (And,
for a stack with a server group, is it redundant: :mod:`nfvcat.cloud.redundancy_check`.)

Per server (GET /servers/{id}/topology, microversion 2.78): guest NUMA cells; every vCPU the policy pins
(all for ``dedicated``, those of ``hw:cpu_dedicated_mask`` for ``mixed``, none for ``shared``) pinned, each
on a pCPU of its own, inside the host node's cpu_dedicated_set (inventory), and on no pCPU another instance of
the host is pinned to (admin: every server of the host and its topology); page size. Flavor PCI devices
(``pci_passthrough:alias``) from the server's Placement allocations, the device's resource provider
(``<host>_<PF address>``) mapped to its NUMA node by the inventory, against the PCI NUMA policy.
Per port: bound, on the server's host, vif_type as the vnic type and physnet kind require (vhost-user only
with huge-page guest memory), physnet and VLAN; SR-IOV VFs (Neutron's pci_slot) on the NUMA node or socket
the policy requires.

No API shows the emulator threads' pCPUs, nor the VF Nova allocated for a Neutron port: those verdicts are
"needs host access" unless a host access (:mod:`nfvcat.cloud.hostaccess`) is given. Admin-only fields that
are hidden give "needs admin". Nothing it cannot see passes.
"""

from __future__ import annotations

from typing import Any

from nfvcat import catalog
from nfvcat.catalog import inventory as inventory_mod
from nfvcat.catalog import site as site_profile
from nfvcat.catalog import units
from nfvcat.cloud.connect import call
from nfvcat.cloud.hostaccess import HostAccess, HostFacts
from nfvcat.cloud.verdicts import ADMIN, FAIL, HOST_ACCESS, PASS, UNKNOWN, Verdict

TOPOLOGY_MICROVERSION = "2.78"
VIF_BY_VNIC = {"direct": {"hw_veb"}, "direct-physical": {"hostdev_physical"}, "macvtap": {"hw_veb"}}
VIF_BY_PHYSNET_KIND = {"ovs-dpdk": {"vhostuser"}, "ovs": {"ovs", "vhostuser"}}


class Checker:
    def __init__(self, conn: Any, inv: inventory_mod.Inventory | None, access: HostAccess | None = None) -> None:
        self.conn = conn
        self.hosts = {h.name: h for h in (inv.hosts if inv else [])}
        self.site = site_profile.of_catalog(catalog.find_root()).physnets
        self.access = access
        self.verdicts: list[Verdict] = []
        self._nets: dict[str, dict[str, Any]] = {}
        self._host_pins: dict[str, dict[str, dict[int, int]] | None] = {}
        self._facts: dict[str, HostFacts | None] = {}
        self._rp_names: dict[str, str | None] = {}

    def add(self, vnf: str, subject: str, check: str, status: str, detail: str = "") -> None:
        self.verdicts.append(Verdict(vnf, subject, check, status, detail))

    def network(self, nid: str) -> dict[str, Any]:
        if nid not in self._nets:
            self._nets[nid] = call(self.conn.network, "GET", f"/networks/{nid}", "network")["network"]
        return self._nets[nid]

    def facts(self, sid: str, host: str | None) -> HostFacts | None:
        if self.access is None:
            return None
        if sid not in self._facts:
            self._facts[sid] = self.access.facts(sid, host)
        return self._facts[sid]

    def host_facts(self, vnf: str, subject: str, check: str, sid: str, host: str | None,
                   unseen: str) -> HostFacts | None:
        """The host's facts of a server, or None after a "needs host access" verdict saying why."""
        facts = self.facts(sid, host)
        if facts is None:
            self.add(vnf, subject, check, HOST_ACCESS, f"{unseen} (check --host-access)" if self.access is None
                     else f"{self.access.name} does not know server {sid}")
        return facts

    def server(self, vnf: str, sid: str) -> None:
        srv = call(self.conn.compute, "GET", f"/servers/{sid}", f"server {sid}",
                   microversion=TOPOLOGY_MICROVERSION)["server"]
        name = srv.get("name", sid)
        self.add(vnf, name, "server ACTIVE", PASS if srv["status"] == "ACTIVE" else FAIL, srv["status"])
        host = srv.get("OS-EXT-SRV-ATTR:host")
        specs = {str(k): str(v) for k, v in ((srv.get("flavor") or {}).get("extra_specs") or {}).items()}
        topo = self.topology(sid, name)
        host_nodes = self._topology(vnf, name, sid, host, specs, topo)
        ports = call(self.conn.network, "GET", f"/ports?device_id={sid}", f"ports of {name}")["ports"]
        for port in sorted(ports, key=lambda p: p.get("name") or p["id"]):
            self._port(vnf, port, sid, host, specs, host_nodes, topo)
        if specs.get("pci_passthrough:alias"):
            self._pci_alias(vnf, name, sid, host, specs, host_nodes)

    def topology(self, sid: str, what: str) -> dict[str, Any]:
        return call(self.conn.compute, "GET", f"/servers/{sid}/topology", f"server {what} topology",
                    microversion=TOPOLOGY_MICROVERSION, ok=(200, 403, 404)) or {}

    # -- CPUs and memory -------------------------------------------------------------------------------------

    def _topology(self, vnf: str, name: str, sid: str, host: str | None, specs: dict[str, str],
                  topo: dict[str, Any]) -> list[int] | None:
        nodes = topo.get("nodes") or []
        policy = specs.get("hw:cpu_policy", "shared")
        wants_numa = policy in ("dedicated", "mixed") or "hw:mem_page_size" in specs or "hw:numa_nodes" in specs
        if not nodes:
            if wants_numa:
                self.add(vnf, name, "NUMA topology", FAIL, "the flavor asks for one, the server has none")
            return None
        want_nodes = int(specs.get("hw:numa_nodes", "1"))
        self.add(vnf, name, "guest NUMA cells", PASS if len(nodes) == want_nodes else FAIL,
                 f"{len(nodes)} (flavor: {want_nodes})")
        if any("host_node" not in n for n in nodes):
            self.add(vnf, name, "host NUMA node / pinning", ADMIN, "host_node and cpu_pinning are admin-only")
            return None
        host_nodes = [int(n["host_node"]) for n in nodes]
        spec = self.hosts.get(host or "")
        cells = {c.id: c for c in spec.cells} if spec else {}
        all_vcpus = sorted(v for n in nodes for v in n.get("vcpu_set") or [])
        pins_all: dict[int, int] = {}
        for i, n in enumerate(nodes):
            pins = {int(k): int(v) for k, v in (n.get("cpu_pinning") or {}).items()}
            pins_all.update(pins)
            label = f"cell {i} -> host node {n['host_node']}"
            vcpus = set(n.get("vcpu_set") or [])
            if policy == "shared":
                if pins:
                    self.add(vnf, name, "CPU pinning", FAIL, f"{label}: policy shared, but vCPUs {sorted(pins)} pinned")
                continue
            want_pinned = vcpus if policy == "dedicated" else vcpus & dedicated_vcpus(specs, all_vcpus)
            if policy == "mixed":
                extra = sorted(set(pins) - want_pinned)
                missing_m = sorted(want_pinned - set(pins))
                self.add(vnf, name, "mixed dedicated mask", FAIL if extra or missing_m else PASS,
                         f"{label}: pinned vCPUs {sorted(pins)}, shared {sorted(vcpus - set(pins))} "
                         f"(hw:cpu_dedicated_mask {specs.get('hw:cpu_dedicated_mask', '')!r})" +
                         (f"; {extra} pinned but shared by the mask" if extra else "") +
                         (f"; {missing_m} dedicated by the mask but not pinned" if missing_m else ""))
            missing = sorted(want_pinned - set(pins))
            if missing and policy == "dedicated":
                self.add(vnf, name, "CPU pinning", FAIL, f"{label}: vCPUs {missing} not pinned")
                continue
            cell = cells.get(int(n["host_node"]))
            if cell is None:
                self.add(vnf, name, "CPU pinning", UNKNOWN, f"{label}: host {host} (node {n['host_node']}) not in "
                         "the inventory")
                continue
            outside = sorted(set(pins.values()) - cell.dedicated)
            self.add(vnf, name, "CPU pinning", FAIL if outside else PASS,
                     f"{label}: pCPUs {sorted(pins.values())}" +
                     (f", {outside} not in the node's cpu_dedicated_set" if outside else
                      " in the node's cpu_dedicated_set"))
        if pins_all:
            doubled = {p: sorted(v for v, q in pins_all.items() if q == p) for p in set(pins_all.values())}
            doubled = {p: vs for p, vs in doubled.items() if len(vs) > 1}
            self.add(vnf, name, "pCPUs distinct", FAIL if doubled else PASS,
                     "; ".join(f"vCPUs {vs} on pCPU {p}" for p, vs in sorted(doubled.items())) or
                     f"{len(pins_all)} vCPUs on {len(pins_all)} pCPUs")
            self._exclusive(vnf, name, sid, host, pins_all)
        self._pages(vnf, name, specs, topo)
        self._emulator(vnf, name, sid, host, specs, pins_all, host_nodes)
        return host_nodes

    def _pages(self, vnf: str, name: str, specs: dict[str, str], topo: dict[str, Any]) -> None:
        want_page = specs.get("hw:mem_page_size")
        if not want_page:
            return
        got = int(topo.get("pagesize_kb") or 0) or None
        if want_page == "large":
            ok = got is not None and got > 4
        elif want_page == "small":
            ok = got in (None, 4)
        elif want_page == "any":
            ok = True
        else:
            try:
                ok = got is not None and got == units.page_size_kib(want_page)
            except units.SizeError:
                ok = False
        self.add(vnf, name, "page size", PASS if ok else FAIL, f"{got} KiB (flavor: {want_page})")

    def host_pins(self, host: str) -> dict[str, dict[int, int]] | None:
        """server id -> pins of every instance on the host (admin: servers filtered by host), None if hidden."""
        if host not in self._host_pins:
            body = call(self.conn.compute, "GET", f"/servers/detail?all_tenants=1&host={host}",
                        f"servers on {host}", microversion=TOPOLOGY_MICROVERSION, ok=(200, 403))
            if body is None or "servers" not in body:
                self._host_pins[host] = None
                return None
            out: dict[str, dict[int, int]] = {}
            for other in body["servers"]:
                if other.get("OS-EXT-SRV-ATTR:host") not in (None, host):
                    continue  # a cloud that ignores the host filter
                t = self.topology(str(other["id"]), str(other.get("name") or other["id"]))
                out[str(other["id"])] = {int(k): int(v) for n in t.get("nodes") or []
                                         for k, v in (n.get("cpu_pinning") or {}).items()}
            self._host_pins[host] = out
        return self._host_pins[host]

    def _exclusive(self, vnf: str, name: str, sid: str, host: str | None, pins: dict[int, int]) -> None:
        if host is None:
            self.add(vnf, name, "pCPUs not shared with other instances", ADMIN, "the server's host is admin-only")
            return
        others = self.host_pins(host)
        if others is None:
            self.add(vnf, name, "pCPUs not shared with other instances", ADMIN,
                     f"listing the servers of {host} is admin-only")
            return
        mine = set(pins.values())
        clash = {oid: sorted(mine & set(p.values())) for oid, p in others.items() if oid != sid}
        clash = {k: v for k, v in clash.items() if v}
        self.add(vnf, name, "pCPUs not shared with other instances", FAIL if clash else PASS,
                 "; ".join(f"pCPUs {v} also pinned by server {k}" for k, v in sorted(clash.items())) or
                 f"{len(others) - (1 if sid in others else 0)} other instance(s) on {host}, none on {sorted(mine)}")

    def _emulator(self, vnf: str, name: str, sid: str, host: str | None, specs: dict[str, str],
                  pins: dict[int, int], host_nodes: list[int]) -> None:
        policy = specs.get("hw:emulator_threads_policy")
        if not policy:
            return
        facts = self.host_facts(vnf, name, "emulator threads", sid, host,
                                f"policy {policy}: no API shows the emulator threads' pCPUs")
        if facts is None:
            return
        spec = self.hosts.get(host or "")
        if policy == "share":
            shared = {c for cell in spec.cells for c in cell.shared} if spec else set()
            ok = facts.emulator_pcpus is None and bool(shared)
            self.add(vnf, name, "emulator threads", PASS if ok else FAIL,
                     f"policy share: on the host's cpu_shared_set {sorted(shared)}" if ok else
                     f"policy share: emulator pCPUs {sorted(facts.emulator_pcpus or [])}, host shared set "
                     f"{sorted(shared)}")
            return
        emu = sorted(facts.emulator_pcpus or [])
        problems = []
        if not emu:
            problems.append("no pCPU reserved for them")
        dedicated = {c for cell in spec.cells if cell.id in host_nodes for c in cell.dedicated} if spec else None
        if dedicated is not None and set(emu) - dedicated:
            problems.append(f"{sorted(set(emu) - dedicated)} outside the node's cpu_dedicated_set")
        overlap = sorted(set(emu) & set(pins.values()))
        if overlap:
            problems.append(f"{overlap} also a vCPU's pCPU")
        others = self.host_pins(host) if host else None
        for oid, opins in sorted((others or {}).items()):
            if oid != sid and set(emu) & set(opins.values()):
                problems.append(f"{sorted(set(emu) & set(opins.values()))} pinned by server {oid}")
        self.add(vnf, name, "emulator threads", FAIL if problems else PASS,
                 f"policy isolate: pCPUs {emu} ({self.access.name if self.access else ''})" +
                 (": " + "; ".join(problems) if problems else ""))

    # -- PCI devices of the flavor (pci_passthrough:alias), through Placement -----------------------------

    def rp_name(self, rp: str) -> str | None:
        if rp not in self._rp_names:
            body = call(self.conn.placement, "GET", f"/resource_providers/{rp}", f"resource provider {rp}",
                        ok=(200, 403, 404))
            self._rp_names[rp] = (body or {}).get("name")
        return self._rp_names[rp]

    def _pci_alias(self, vnf: str, name: str, sid: str, host: str | None, specs: dict[str, str],
                   host_nodes: list[int] | None) -> None:
        wanted = sum(int(part.partition(":")[2] or 1) for part in specs["pci_passthrough:alias"].split(","))
        body = call(self.conn.placement, "GET", f"/allocations/{sid}", f"placement allocations of {name}",
                    ok=(200, 403))
        if body is None or "allocations" not in body:
            self.add(vnf, name, "PCI devices (Placement)", ADMIN, "Placement allocations are admin-only")
            return
        devices: list[tuple[str, str, int]] = []  # (provider name, resource class, amount)
        for rp, alloc in (body.get("allocations") or {}).items():
            for rc, amount in (alloc.get("resources") or {}).items():
                if rc.startswith("CUSTOM_PCI_") or rc.startswith("PGPU") or rc.startswith("CUSTOM_"):
                    devices.append((self.rp_name(rp) or rp, rc, int(amount)))
        if not devices:
            if self.access is not None:
                facts = self.facts(sid, host)
                if facts is not None:
                    self._pci_from_host(vnf, name, host, specs, host_nodes, facts, wanted)
                    return
            self.add(vnf, name, "PCI devices (Placement)", UNKNOWN,
                     f"{specs['pci_passthrough:alias']}: no PCI device in the server's Placement allocations (the "
                     "cloud does not report PCI devices in Placement: [pci] report_in_placement)")
            return
        got = sum(a for _, _, a in devices)
        prefix = f"{host}_" if host else ""
        foreign = [n for n, _, _ in devices if prefix and not n.startswith(prefix)]
        self.add(vnf, name, "PCI devices (Placement)", FAIL if got != wanted or foreign else PASS,
                 f"{specs['pci_passthrough:alias']}: " + ", ".join(f"{a} x {rc} from {n}" for n, rc, a in devices) +
                 (f"; providers {foreign} not on {host}" if foreign else ""))
        nodes = []
        for rp_name, _, _ in devices:
            addr = rp_name.split("_", 1)[1].lower() if "_" in rp_name else ""
            nodes.append((addr, self._device_node(host, addr)))
        self._pci_numa(vnf, name, host, specs, host_nodes, nodes, "PCI NUMA affinity")

    def _pci_from_host(self, vnf: str, name: str, host: str | None, specs: dict[str, str],
                       host_nodes: list[int] | None, facts: HostFacts, wanted: int) -> None:
        ours = [a for a in facts.pci if not self._is_port_vf(host, a)]
        self.add(vnf, name, "PCI devices (host)", PASS if len(ours) >= wanted else FAIL,
                 f"{specs['pci_passthrough:alias']}: {ours} ({self.access.name if self.access else ''})")
        self._pci_numa(vnf, name, host, specs, host_nodes, [(a, self._device_node(host, a)) for a in ours],
                       "PCI NUMA affinity")

    def _is_port_vf(self, host: str | None, address: str) -> bool:
        spec = self.hosts.get(host or "")
        return spec is not None and any(bool(d.physnet) and address in d.vf_addresses() for d in spec.devices)

    def _device_node(self, host: str | None, address: str) -> int | None:
        """The NUMA node of a device (a PF, or a VF by its PF) in the host's inventory."""
        spec = self.hosts.get(host or "")
        for d in spec.devices if spec else []:
            if address == d.address or address in d.vf_addresses():
                return d.numa_node
        return None

    def _pci_numa(self, vnf: str, subject: str, host: str | None, specs: dict[str, str],
                  host_nodes: list[int] | None, devices: list[tuple[str, int | None]], check: str) -> None:
        policy = specs.get("hw:pci_numa_affinity_policy", "legacy")
        spec = self.hosts.get(host or "")
        for addr, numa in devices:
            if host_nodes is None:
                self.add(vnf, subject, check, ADMIN if host is None else UNKNOWN,
                         f"{addr}: the guest's host NUMA nodes are not known")
                continue
            if numa is None:
                self.add(vnf, subject, check, UNKNOWN, f"{addr} not in the inventory of {host}")
                continue
            if policy == "socket":
                sockets = {c.socket for c in spec.cells if c.id in host_nodes} if spec else set()
                dev_socket = next((c.socket for c in spec.cells if c.id == numa), None) if spec else None
                guest = sorted(s for s in sockets if s is not None)
                self.add(vnf, subject, check, PASS if dev_socket in sockets else FAIL,
                         f"{addr} on node {numa} (socket {dev_socket}), guest on sockets {guest} (policy socket)")
                continue
            ok = numa in host_nodes
            if policy == "preferred" and not ok:
                self.add(vnf, subject, check, PASS, f"{addr} on node {numa}, guest on {host_nodes} "
                                                    "(policy preferred: allowed)")
                continue
            self.add(vnf, subject, check, PASS if ok else FAIL,
                     f"{addr} on node {numa}, guest on nodes {host_nodes} (policy {policy})")

    # -- ports ---------------------------------------------------------------------------------------------

    def _port(self, vnf: str, port: dict[str, Any], sid: str, host: str | None, specs: dict[str, str],
              host_nodes: list[int] | None, topo: dict[str, Any]) -> None:
        pname = port.get("name") or port["id"]
        if "binding:vif_type" not in port:
            self.add(vnf, pname, "port binding", ADMIN, "binding:* fields are admin-only")
            return
        vif = port["binding:vif_type"]
        vnic = port.get("binding:vnic_type", "normal")
        bound = vif not in ("binding_failed", "unbound", "", None)
        self.add(vnf, pname, "bound", PASS if bound else FAIL, f"vif_type {vif}")
        if not bound:
            return
        if host is None:
            self.add(vnf, pname, "on the server's host", ADMIN, "the server's host is admin-only")
        else:
            bhost = port.get("binding:host_id")
            self.add(vnf, pname, "on the server's host", PASS if bhost == host else FAIL, f"{bhost} (server: {host})")
        net = self.network(port["network_id"])
        physnet = net.get("provider:physical_network")
        if "provider:network_type" not in net:
            self.add(vnf, pname, "physnet / VLAN", ADMIN, "provider:* fields are admin-only")
        kind = str((self.site.get(physnet or "") or {}).get("type", ""))
        expected = VIF_BY_VNIC.get(vnic) or VIF_BY_PHYSNET_KIND.get(kind) or {"ovs", "vhostuser"}
        self.add(vnf, pname, "vif_type", PASS if vif in expected else FAIL,
                 f"{vif} (vnic {vnic}{', ' + kind + ' physnet' if kind else ''}: {'/'.join(sorted(expected))})")
        if vif == "vhostuser":
            page = int(topo.get("pagesize_kb") or 0) if topo.get("nodes") else 0
            self.add(vnf, pname, "vhost-user guest memory", PASS if page > 4 else FAIL,
                     f"guest pages {page or 'none (no NUMA topology)'} KiB: vhost-user needs the guest's memory on "
                     "shared huge pages" if page <= 4 else f"guest on {page} KiB pages")
        profile = port.get("binding:profile") or {}
        details = port.get("binding:vif_details") or {}
        if "provider:network_type" in net and net["provider:network_type"] == "vlan":
            seg = int(net.get("provider:segmentation_id") or 0)
            problems = []
            if vnic in VIF_BY_VNIC and profile.get("physical_network") not in (None, physnet):
                problems.append(f"VF of physnet {profile.get('physical_network')}")
            if "vlan" in details and str(details["vlan"]) != str(seg):
                problems.append(f"bound on VLAN {details['vlan']}")
            ranges = (self.site.get(physnet or "") or {}).get("vlan_ranges") or []
            in_range = any(int(r.split(":")[0]) <= seg <= int(r.split(":")[1]) for r in ranges) if ranges else True
            if not in_range:
                problems.append(f"VLAN {seg} outside the site's range {ranges} of {physnet}")
            self.add(vnf, pname, "physnet / VLAN", FAIL if problems else PASS,
                     f"{physnet} VLAN {seg}" + (": " + "; ".join(problems) if problems else ""))
        if vnic in VIF_BY_VNIC:
            slot = str(profile.get("pci_slot") or "")
            if not slot:
                self.add(vnf, pname, "VF NUMA affinity", FAIL, "no pci_slot in binding:profile")
                return
            self._pci_numa(vnf, pname, host, specs, host_nodes, [(f"VF {slot}", self._device_node(host, slot))],
                           "VF NUMA affinity")
            self._vf_allocation(vnf, pname, sid, host, slot)

    def _vf_allocation(self, vnf: str, pname: str, sid: str, host: str | None, slot: str) -> None:
        """Neutron's pci_slot against the device Nova allocated to the instance (no API shows Nova's side for
        Neutron's VFs: Placement does not track devices of a physnet)."""
        facts = self.host_facts(vnf, pname, "VF = Nova's allocation", sid, host,
                                f"Neutron says {slot}; Nova's PCI allocation for Neutron ports is in no API")
        if facts is None:
            return
        ok = slot in facts.pci
        self.add(vnf, pname, "VF = Nova's allocation", PASS if ok else FAIL,
                 f"Neutron {slot}, Nova {sorted(a for a in facts.pci if self._is_port_vf(host, a))}")


def dedicated_vcpus(specs: dict[str, str], vcpus: list[int]) -> set[int]:
    """The vCPUs hw:cpu_dedicated_mask pins ('^0-1': all but 0 and 1; '2-5': those)."""
    from nfvcat.catalog.inventory import parse_cpu_spec

    mask = specs.get("hw:cpu_dedicated_mask", "")
    if not mask:
        return set()
    if mask.strip().startswith("^"):
        return set(vcpus) - parse_cpu_spec(mask.replace("^", ""))
    return parse_cpu_spec(mask) & set(vcpus)


