"""``nfvcat check``: is each VNF of a deployed chain bound and placed as its flavor and ports demand? (The
whole check of a stack, with the SFC and redundancy checks: :mod:`nfvcat.cloud.check`.)

Per server (GET /servers/{id}/topology, microversion 2.78): guest NUMA cells; every vCPU the policy pins
(all for ``dedicated``, those of ``hw:cpu_dedicated_mask`` for ``mixed``, none for ``shared``) pinned, each
on a pCPU of its own, inside the host node's cpu_dedicated_set (inventory); page size. The pCPUs it shares
with the host's other instances, its emulator threads and its thread policy: :mod:`nfvcat.cloud.cpu_sharing`.
The image it boots, catalog or local rebuild, from its Glance provenance: :mod:`nfvcat.cloud.image_provenance`.
PCI devices of the flavor and SR-IOV ports' VFs, from Placement, Neutron and Nova's records:
:mod:`nfvcat.cloud.pci_records`. Per port: bound, on the server's host, vif_type as the vnic type and physnet
kind require (vhost-user only with huge-page guest memory), physnet and VLAN.

What no API shows (emulator threads' pCPUs, Nova's PCI device records, the compute host's own topology) is
"needs host access" unless a host access (:mod:`nfvcat.cloud.hostaccess`) is given. Admin-only fields that
are hidden give "needs admin". Nothing it cannot see passes.
"""

from __future__ import annotations

from typing import Any

from nfvcat.catalog import inventory as inventory_mod
from nfvcat.catalog import units
from nfvcat.cloud import cpu_sharing, image_provenance, pci_records
from nfvcat.cloud.check_context import TOPOLOGY_MICROVERSION, CheckContext, extra_specs
from nfvcat.cloud.connect import call
from nfvcat.cloud.verdicts import ADMIN, FAIL, PASS, UNKNOWN

VIF_BY_VNIC = {"direct": {"hw_veb"}, "direct-physical": {"hostdev_physical"}, "macvtap": {"hw_veb"}}
VIF_BY_PHYSNET_KIND = {"ovs-dpdk": {"vhostuser"}, "ovs": {"ovs", "vhostuser"}}


class Checker(CheckContext):
    def server(self, vnf: str, sid: str) -> None:
        srv = call(self.conn.compute, "GET", f"/servers/{sid}", f"server {sid}",
                   microversion=TOPOLOGY_MICROVERSION)["server"]
        name = srv.get("name", sid)
        self.add(vnf, name, "server ACTIVE", PASS if srv["status"] == "ACTIVE" else FAIL, srv["status"])
        self.add(vnf, name, *image_provenance.verdict(self.images, srv))
        host = srv.get("OS-EXT-SRV-ATTR:host")
        specs = extra_specs(srv)
        topo = self.topology(sid, name)
        host_nodes = self._topology(vnf, name, sid, host, specs, topo)
        ports = call(self.conn.network, "GET", f"/ports?device_id={sid}", f"ports of {name}")["ports"]
        for port in sorted(ports, key=lambda p: p.get("name") or p["id"]):
            self._port(vnf, port, sid, host, specs, host_nodes, topo)
        if specs.get("pci_passthrough:alias"):
            pci_records.flavor_devices(self, vnf, name, sid, host, specs, host_nodes)

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
        all_vcpus = sorted(v for n in nodes for v in n.get("vcpu_set") or [])
        pins_all: dict[int, int] = {}
        cell_pins: list[tuple[int, dict[int, int]]] = []
        for i, n in enumerate(nodes):
            pins = {int(k): int(v) for k, v in (n.get("cpu_pinning") or {}).items()}
            pins_all.update(pins)
            cell_pins.append((int(n["host_node"]), pins))
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
            maps = self.cpu_maps(host)
            if not maps:
                listed = "the inventory gives it no NUMA cells" if host in self.hosts else "not in the inventory"
                self.add(vnf, name, "CPU pinning", UNKNOWN, f"{label}: no source shows host {host}'s CPU sets ({listed}"
                         + ("" if self.access else "; check --host-access: the host's own") + ")")
                continue
            for m in maps:
                dedicated = m.dedicated.get(int(n["host_node"]))
                if dedicated is None:
                    self.add(vnf, name, "CPU pinning", FAIL, f"{label}: the host has no node {n['host_node']} "
                             f"({m.source})")
                    continue
                outside = sorted(set(pins.values()) - dedicated)
                self.add(vnf, name, "CPU pinning", FAIL if outside else PASS,
                         f"{label}: pCPUs {sorted(pins.values())}" +
                         (f", {outside} not in the node's cpu_dedicated_set" if outside else
                          " in the node's cpu_dedicated_set") + f" ({m.source})")
        if pins_all:
            doubled = {p: sorted(v for v, q in pins_all.items() if q == p) for p in set(pins_all.values())}
            doubled = {p: vs for p, vs in doubled.items() if len(vs) > 1}
            self.add(vnf, name, "pCPUs distinct", FAIL if doubled else PASS,
                     "; ".join(f"vCPUs {vs} on pCPU {p}" for p, vs in sorted(doubled.items())) or
                     f"{len(pins_all)} vCPUs on {len(pins_all)} pCPUs")
            cpu_sharing.exclusive(self, vnf, name, sid, host, specs, pins_all)
            cpu_sharing.thread_policy(self, vnf, name, sid, host, specs, pins_all, cell_pins)
        self._pages(vnf, name, specs, topo)
        cpu_sharing.emulator(self, vnf, name, sid, host, specs, pins_all, host_nodes)
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
            pci_records.port_vf(self, vnf, port, sid, host, specs, host_nodes)


def dedicated_vcpus(specs: dict[str, str], vcpus: list[int]) -> set[int]:
    """The vCPUs hw:cpu_dedicated_mask pins ('^0-1': all but 0 and 1; '2-5': those)."""
    mask = specs.get("hw:cpu_dedicated_mask", "")
    if not mask:
        return set()
    if mask.strip().startswith("^"):
        return set(vcpus) - inventory_mod.parse_cpu_spec(mask.replace("^", ""))
    return inventory_mod.parse_cpu_spec(mask) & set(vcpus)
