"""PCI devices of a server (``nfvcat check``), each from the records that hold it.

The flavor's devices (``pci_passthrough:alias``): Placement's allocation (a provider per PF,
``<host>_<PF ADDRESS>``) and Nova's PCI device records (host access: no API shows them), which must name the
same PFs; a disagreement between the two is its own verdict, not an affinity failure. A Neutron SR-IOV port's VF:
Neutron's ``binding:profile`` pci_slot against the device Nova allocated for that port's own PCI request
(its requester is the port). A device's NUMA node is the one Nova recorded for the device the guest was given;
the inventory's only where no source shows Nova's record, and the detail says so.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from nfvcat.cloud.check_context import CheckContext
from nfvcat.cloud.connect import call
from nfvcat.cloud.hostaccess import HostFacts, PciDevice
from nfvcat.cloud.verdicts import ADMIN, FAIL, PASS, UNKNOWN

AGREE = "Placement and Nova's PCI records"


def inventory_node(ctx: CheckContext, host: str | None, address: str) -> int | None:
    """The NUMA node of a device (a PF, or a VF by its PF) in the host's inventory."""
    spec = ctx.hosts.get(host or "")
    for d in spec.devices if spec else []:
        if address == d.address or address in d.vf_addresses():
            return d.numa_node
    return None


def node_of(ctx: CheckContext, host: str | None, dev: PciDevice) -> tuple[int | None, str]:
    """The device's NUMA node and where it was read."""
    if dev.numa_node is not None:
        return dev.numa_node, ctx.source
    return inventory_node(ctx, host, dev.address), "node from the inventory: the source names none"


def inventory_agrees(ctx: CheckContext, vnf: str, subject: str, host: str | None, devices: list[PciDevice]) -> None:
    """The NUMA node a source recorded for each device against the inventory's (which ``nfvcat plan`` takes)."""
    known = [(d, inventory_node(ctx, host, d.address)) for d in devices if d.numa_node is not None]
    known = [(d, node) for d, node in known if node is not None]
    if not known:
        return
    wrong = [f"{d.address}: node {d.numa_node} {ctx.source}, node {node} in the inventory" for d, node in known
             if node != d.numa_node]
    ctx.add(vnf, subject, "PCI NUMA node in the inventory", FAIL if wrong else PASS,
            "; ".join(wrong) or f"{[d.address for d, _ in known]}: the same node in the inventory as {ctx.source}")


def placement_devices(ctx: CheckContext, sid: str, name: str) -> list[tuple[str, str, int]] | None:
    """(provider name, resource class, amount) of each PCI device in the server's Placement allocations, None
    when they are admin-only."""
    body = call(ctx.conn.placement, "GET", f"/allocations/{sid}", f"placement allocations of {name}",
                ok=(200, 403))
    if body is None or "allocations" not in body:
        return None
    return [(ctx.rp_name(rp) or rp, rc, int(amount)) for rp, alloc in (body.get("allocations") or {}).items()
            for rc, amount in (alloc.get("resources") or {}).items()
            if rc.startswith("CUSTOM_PCI_") or rc.startswith("PGPU") or rc.startswith("CUSTOM_")]


def provider_pf(rp_name: str) -> str:
    """The PF address of a PCI resource provider (Nova names it <hypervisor hostname>_<PF ADDRESS>)."""
    return rp_name.rsplit("_", 1)[1].lower() if "_" in rp_name else ""


def flavor_devices(ctx: CheckContext, vnf: str, name: str, sid: str, host: str | None, specs: dict[str, str],
                   host_nodes: list[int] | None) -> None:
    alias = specs["pci_passthrough:alias"]
    wanted = sum(int(part.partition(":")[2] or 1) for part in alias.split(","))
    placed = placement_devices(ctx, sid, name)
    if placed is None:
        ctx.add(vnf, name, "PCI devices (Placement)", ADMIN, "Placement allocations are admin-only")
    elif placed:
        got = sum(a for _, _, a in placed)
        prefix = f"{host}_" if host else ""
        foreign = [n for n, _, _ in placed if prefix and not n.startswith(prefix)]
        ctx.add(vnf, name, "PCI devices (Placement)", FAIL if got != wanted or foreign else PASS,
                f"{alias}: " + ", ".join(f"{a} x {rc} from {n}" for n, rc, a in placed) +
                (f"; providers {foreign} not on {host}" if foreign else ""))
    facts = ctx.facts(sid, host)
    if placed and facts is None:
        ctx.host_facts(vnf, name, AGREE, sid, host, "no API shows Nova's PCI device records")
    if facts is None:
        if placed == []:
            ctx.add(vnf, name, "PCI devices (Placement)", UNKNOWN,
                    f"{alias}: no PCI device in the server's Placement allocations (the cloud does not report PCI "
                    "devices in Placement: [pci] report_in_placement)")
        elif placed:
            pfs = [provider_pf(n) for n, _, _ in placed]
            pci_numa(ctx, vnf, name, host, specs, host_nodes, "PCI NUMA affinity",
                     [(pf, inventory_node(ctx, host, pf), "Placement's provider, node from the inventory")
                      for pf in pfs])
        return
    ours = [d for d in facts.pci if not d.for_port]
    ctx.add(vnf, name, "PCI devices (host)", PASS if len(ours) == wanted else FAIL,
            f"{alias}: {[d.address for d in ours]} ({ctx.source})")
    if placed:
        _agree(ctx, vnf, name, placed, ours)
    pci_numa(ctx, vnf, name, host, specs, host_nodes, "PCI NUMA affinity",
             [(d.address, *node_of(ctx, host, d)) for d in ours])
    inventory_agrees(ctx, vnf, name, host, ours)


def _agree(ctx: CheckContext, vnf: str, name: str, placed: list[tuple[str, str, int]],
           ours: list[PciDevice]) -> None:
    """Placement's providers against the PFs of the devices Nova recorded, one device for one."""
    in_placement = Counter({provider_pf(n): 0 for n, _, _ in placed})
    for n, _, amount in placed:
        in_placement[provider_pf(n)] += amount
    in_nova = Counter((d.parent or d.address).lower() for d in ours)
    same = +in_placement == +in_nova
    ctx.add(vnf, name, AGREE, PASS if same else FAIL,
            ("agree" if same else "disagree") + ": Placement " +
            ", ".join(f"{a} x {rc} from {n}" for n, rc, a in placed) + "; Nova " +
            (", ".join(f"{d.address} (PF {d.parent or d.address})" for d in ours) or "none") + f" ({ctx.source})")


def port_vf(ctx: CheckContext, vnf: str, port: dict[str, Any], sid: str, host: str | None,
            specs: dict[str, str], host_nodes: list[int] | None) -> None:
    """An SR-IOV port's VF: Neutron's pci_slot is the device Nova allocated for this port's request; its
    NUMA node against the guest's."""
    pname = port.get("name") or port["id"]
    slot = str((port.get("binding:profile") or {}).get("pci_slot") or "")
    if not slot:
        ctx.add(vnf, pname, "VF NUMA affinity", FAIL, "no pci_slot in binding:profile")
        return
    facts = ctx.host_facts(vnf, pname, "VF = Nova's allocation", sid, host,
                           f"Neutron says {slot}; Nova's PCI allocation for Neutron ports is in no API")
    dev = _allocation(ctx, vnf, pname, port, slot, facts) if facts is not None else None
    if dev is None:
        pci_numa(ctx, vnf, pname, host, specs, host_nodes, "VF NUMA affinity",
                 [(f"VF {slot}", inventory_node(ctx, host, slot), "Neutron's pci_slot, node from the inventory")])
    else:
        pci_numa(ctx, vnf, pname, host, specs, host_nodes, "VF NUMA affinity",
                 [(f"VF {dev.address}", *node_of(ctx, host, dev))])
        inventory_agrees(ctx, vnf, pname, host, [dev])


def _allocation(ctx: CheckContext, vnf: str, pname: str, port: dict[str, Any], slot: str,
                facts: HostFacts) -> PciDevice | None:
    """The verdict on Neutron's slot against Nova's device for this port; that device, if known."""
    mac = str(port.get("mac_address") or "").lower()
    mine = [d for d in facts.pci if d.port_id == port["id"] or (mac and d.mac == mac)]
    check = "VF = Nova's allocation"
    if len(mine) == 1:
        ok = mine[0].address == slot
        ctx.add(vnf, pname, check, PASS if ok else FAIL,
                f"Neutron {slot}, Nova {mine[0].address} for this port ({ctx.source})" +
                ("" if ok else f"; {slot} is " + next((f"Nova's device for port {d.port_id or d.mac}" for d in
                                                        facts.pci if d.address == slot), "not the instance's")))
        return mine[0]
    if mine:
        ctx.add(vnf, pname, check, FAIL, f"Neutron {slot}, Nova {[d.address for d in mine]} for this one port "
                f"({ctx.source})")
        return None
    known = any(d.for_port for d in facts.pci)
    given = slot in {d.address for d in facts.pci}
    ctx.add(vnf, pname, check, FAIL if known or not given else UNKNOWN,
            f"Neutron {slot}; " + ("Nova allocated no device for this port" if known else
                                   f"the instance's devices {[d.address for d in facts.pci]}" +
                                   (", none marked with the port it was allocated for" if given else "")) +
            f" ({ctx.source})")
    return None


def pci_numa(ctx: CheckContext, vnf: str, subject: str, host: str | None, specs: dict[str, str],
             host_nodes: list[int] | None, check: str, devices: list[tuple[str, int | None, str]]) -> None:
    """Each device's NUMA node (and where it was read) against the guest's, as the PCI NUMA policy asks."""
    policy = specs.get("hw:pci_numa_affinity_policy", "legacy")
    spec = ctx.hosts.get(host or "")
    for addr, numa, where in devices:
        if host_nodes is None:
            ctx.add(vnf, subject, check, ADMIN if host is None else UNKNOWN,
                    f"{addr}: the guest's host NUMA nodes are not known")
            continue
        if numa is None:
            ctx.add(vnf, subject, check, UNKNOWN, f"{addr}: no NUMA node ({where}; not in the inventory of {host})")
            continue
        if policy == "socket":
            sockets = {c.socket for c in spec.cells if c.id in host_nodes} if spec else set()
            dev_socket = next((c.socket for c in spec.cells if c.id == numa), None) if spec else None
            guest = sorted(s for s in sockets if s is not None)
            ctx.add(vnf, subject, check, PASS if dev_socket in sockets else FAIL,
                    f"{addr} on node {numa} (socket {dev_socket}), guest on sockets {guest} (policy socket; {where})")
            continue
        ok = numa in host_nodes
        if policy == "preferred" and not ok:
            ctx.add(vnf, subject, check, PASS, f"{addr} on node {numa}, guest on {host_nodes} "
                                               f"(policy preferred: allowed; {where})")
            continue
        ctx.add(vnf, subject, check, PASS if ok else FAIL,
                f"{addr} on node {numa}, guest on nodes {host_nodes} (policy {policy}; {where})")
