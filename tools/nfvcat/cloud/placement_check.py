"""``nfvcat check``: is each VNF of a deployed chain bound and placed as its flavor and ports demand?

Per port: bound, on the server's host, vif_type as the vnic type and physnet kind require, physnet and VLAN
of the network. Per server (GET /servers/{id}/topology, microversion 2.78): guest NUMA cells, host node,
pinning into the host node's dedicated CPUs, page size; SR-IOV VFs on the NUMA node (or socket) of the
guest when the PCI NUMA policy requires it, from the inventory's PF-to-NUMA map. Admin-only fields that
are hidden give a "needs admin" verdict.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nfvcat import catalog
from nfvcat.catalog import site as site_profile
from nfvcat.catalog import units
from nfvcat.cloud.connect import call
from nfvcat.plan import inventory as inventory_mod

TOPOLOGY_MICROVERSION = "2.78"
PASS, FAIL, ADMIN, UNKNOWN = "pass", "FAIL", "needs admin", "unknown"
VIF_BY_VNIC = {"direct": {"hw_veb"}, "direct-physical": {"hostdev_physical"}, "macvtap": {"hw_veb"}}
VIF_BY_PHYSNET_KIND = {"ovs-dpdk": {"vhostuser"}, "ovs": {"ovs", "vhostuser"}}


@dataclass
class Verdict:
    vnf: str
    subject: str
    check: str
    status: str
    detail: str

    def as_dict(self) -> dict[str, str]:
        return {"vnf": self.vnf, "subject": self.subject, "check": self.check, "status": self.status,
                "detail": self.detail}


def servers_of(conn: Any, stack_name: str) -> list[tuple[str, str]]:
    """(VNF name, server id) for every OS::Nova::Server of the stack and its nested stacks."""
    body = call(conn.orchestration, "GET", f"/stacks/{stack_name}/resources?nested_depth=5",
                f"stack {stack_name} resources", ok=(200, 404))
    if body is None:
        from nfvcat.errors import UserError

        raise UserError(f"no stack {stack_name}", 1)
    out = []
    for r in body.get("resources", []):
        if r.get("resource_type") == "OS::Nova::Server" and r.get("physical_resource_id"):
            parent = r.get("parent_resource") or r["resource_name"]
            out.append((str(parent), str(r["physical_resource_id"])))
    return sorted(out)


class Checker:
    def __init__(self, conn: Any, inv: inventory_mod.Inventory | None) -> None:
        self.conn = conn
        self.hosts = {h.name: h for h in (inv.hosts if inv else [])}
        self.site = site_profile.of_catalog(catalog.find_root()).physnets
        self.verdicts: list[Verdict] = []
        self._nets: dict[str, dict[str, Any]] = {}

    def add(self, vnf: str, subject: str, check: str, status: str, detail: str = "") -> None:
        self.verdicts.append(Verdict(vnf, subject, check, status, detail))

    def network(self, nid: str) -> dict[str, Any]:
        if nid not in self._nets:
            self._nets[nid] = call(self.conn.network, "GET", f"/networks/{nid}", "network")["network"]
        return self._nets[nid]

    def server(self, vnf: str, sid: str) -> None:
        srv = call(self.conn.compute, "GET", f"/servers/{sid}", f"server {sid}",
                   microversion=TOPOLOGY_MICROVERSION)["server"]
        name = srv.get("name", sid)
        self.add(vnf, name, "server ACTIVE", PASS if srv["status"] == "ACTIVE" else FAIL, srv["status"])
        host = srv.get("OS-EXT-SRV-ATTR:host")
        specs = {str(k): str(v) for k, v in ((srv.get("flavor") or {}).get("extra_specs") or {}).items()}
        topo = call(self.conn.compute, "GET", f"/servers/{sid}/topology", f"server {name} topology",
                    microversion=TOPOLOGY_MICROVERSION, ok=(200, 403, 404)) or {}
        host_nodes = self._topology(vnf, name, host, specs, topo)
        ports = call(self.conn.network, "GET", f"/ports?device_id={sid}", f"ports of {name}")["ports"]
        for port in sorted(ports, key=lambda p: p.get("name") or p["id"]):
            self._port(vnf, port, host, specs, host_nodes)
        if specs.get("pci_passthrough:alias"):
            self.add(vnf, name, "PCI alias devices", UNKNOWN,
                     f"{specs['pci_passthrough:alias']}: the compute API does not show non-network PCI devices")

    def _topology(self, vnf: str, name: str, host: str | None, specs: dict[str, str],
                  topo: dict[str, Any]) -> list[int] | None:
        nodes = topo.get("nodes") or []
        dedicated = specs.get("hw:cpu_policy") in ("dedicated", "mixed")
        wants_numa = dedicated or "hw:mem_page_size" in specs or "hw:numa_nodes" in specs
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
        for n in nodes:
            pins = {int(k): int(v) for k, v in (n.get("cpu_pinning") or {}).items()}
            label = f"cell {nodes.index(n)} -> host node {n['host_node']}"
            if specs.get("hw:cpu_policy") == "dedicated":
                missing = sorted(set(n.get("vcpu_set") or []) - set(pins))
                if missing:
                    self.add(vnf, name, "CPU pinning", FAIL, f"{label}: vCPUs {missing} not pinned")
                    continue
                cell = cells.get(int(n["host_node"]))
                if cell is None:
                    self.add(vnf, name, "CPU pinning", UNKNOWN, f"{label}: host {host} not in the inventory")
                    continue
                outside = sorted(set(pins.values()) - cell.dedicated)
                self.add(vnf, name, "CPU pinning", FAIL if outside else PASS,
                         f"{label}: pCPUs {sorted(pins.values())}" +
                         (f", {outside} not in the node's cpu_dedicated_set" if outside else ""))
            elif pins:
                self.add(vnf, name, "CPU pinning", PASS,
                         f"{label}: {len(pins)} pinned (policy {specs.get('hw:cpu_policy')})")
        want_page = specs.get("hw:mem_page_size")
        if want_page:
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
        return host_nodes

    def _port(self, vnf: str, port: dict[str, Any], host: str | None, specs: dict[str, str],
              host_nodes: list[int] | None) -> None:
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
            self._pci_numa(vnf, pname, host, specs, host_nodes, str(profile.get("pci_slot") or ""))

    def _pci_numa(self, vnf: str, pname: str, host: str | None, specs: dict[str, str], host_nodes: list[int] | None,
                  slot: str) -> None:
        policy = specs.get("hw:pci_numa_affinity_policy", "legacy")
        if not slot:
            self.add(vnf, pname, "VF NUMA affinity", FAIL, "no pci_slot in binding:profile")
            return
        spec = self.hosts.get(host or "")
        numa = None
        if spec:
            for d in spec.devices:
                if slot == d.address or slot in d.vf_addresses():
                    numa = d.numa_node
        if host_nodes is None:
            self.add(vnf, pname, "VF NUMA affinity", ADMIN if host is None else UNKNOWN,
                     f"VF {slot}: the guest's host NUMA nodes are not known")
            return
        if numa is None:
            self.add(vnf, pname, "VF NUMA affinity", UNKNOWN, f"VF {slot} not in the inventory of {host}")
            return
        if policy == "socket":
            sockets = {c.socket for c in spec.cells if c.id in host_nodes} if spec else set()
            dev_socket = next((c.socket for c in spec.cells if c.id == numa), None) if spec else None
            ok = dev_socket in sockets
            guest = sorted(s for s in sockets if s is not None)
            self.add(vnf, pname, "VF NUMA affinity", PASS if ok else FAIL,
                     f"VF {slot} on node {numa} (socket {dev_socket}), guest on sockets {guest} (policy socket)")
            return
        ok = numa in host_nodes
        if policy == "preferred" and not ok:
            self.add(vnf, pname, "VF NUMA affinity", PASS, f"VF {slot} on node {numa}, guest on {host_nodes} "
                                                          "(policy preferred: allowed)")
            return
        self.add(vnf, pname, "VF NUMA affinity", PASS if ok else FAIL,
                 f"VF {slot} on node {numa}, guest on nodes {host_nodes} (policy {policy})")


def load_inventory(path: str | None) -> inventory_mod.Inventory:
    """The inventory to check against: the one given, else the dev cloud's."""
    if not path:
        path = str(Path(__file__).resolve().parent.parent / "devcloud" / "inventory.yaml")
    return inventory_mod.load(path)


def passed(verdicts: list[Verdict]) -> bool:
    return bool(verdicts) and all(v.status == PASS for v in verdicts)


def report(verdicts: list[Verdict], stack: str, fmt: str) -> str:
    """The check report as ``nfvcat check`` and ``nfvcat instantiate`` print it (``fmt`` text or json)."""
    if fmt == "json":
        return json.dumps({"stack": stack, "ok": passed(verdicts), "verdicts": [v.as_dict() for v in verdicts]},
                          indent=2)
    bad = sum(v.status != PASS for v in verdicts)
    summary = (f"{stack}: all {len(verdicts)} checks pass" if passed(verdicts)
               else f"{stack}: {bad} of {len(verdicts)} not passed")
    return f"{text_table(verdicts)}\n{summary}"


def check_stack(conn: Any, stack_name: str, inv: inventory_mod.Inventory | None) -> list[Verdict]:
    checker = Checker(conn, inv)
    for vnf, sid in servers_of(conn, stack_name):
        checker.server(vnf, sid)
    return checker.verdicts


def text_table(verdicts: list[Verdict]) -> str:
    rows = [("VNF", "SUBJECT", "CHECK", "VERDICT", "DETAIL")] + [
        (v.vnf, v.subject, v.check, v.status, v.detail) for v in verdicts]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join("  ".join(c.ljust(widths[i]) if i < 4 else c for i, c in enumerate(r)).rstrip() for r in rows)
