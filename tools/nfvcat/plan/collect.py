"""An inventory from a running cloud, as far as the APIs tell (admin credentials needed; the calls:
:mod:`nfvcat.cloud.cloudfacts`).

What the APIs give: hypervisors (cpu_info with sockets/cores/threads), placement inventories (VCPU, PCPU,
MEMORY_MB with allocation ratios and reserved amounts) and traits, Neutron agents (OVS bridge_mappings and
datapath_type, tunnel types; SR-IOV agent device_mappings and VF counts). What they do not give: the NUMA
layout (cells are estimated one per socket, CPUs and memory split evenly, CPU numbers synthetic), huge pages,
PCI addresses and NUMA nodes of NICs (devices get synthetic addresses and ``numa_node: null``). With host access
(``measured``: a host's own cells, from libvirt's capabilities and nova.conf or Nova's compute_nodes record), a
host's NUMA cells, thread siblings, huge pages and pinned pCPUs are the host's, not estimated. The output says
in comments which hosts were estimated and what; edit those before trusting a plan made with it.
"""

from __future__ import annotations

import json
from typing import Any

from nfvcat.core.errors import UserError

OVS_AGENT = "Open vSwitch agent"
SRIOV_AGENT = "NIC Switch agent"
ESTIMATED = """# - NUMA cells: one per socket from cpu_info; PCPU/VCPU counts and memory split evenly;
#   CPU numbers synthetic
# - huge pages: not visible through the APIs (none listed)
"""
DEVICES = """# - SR-IOV NICs: one PF per device_mappings interface, synthetic PCI address, VFs from the agent's count,
#   numa_node unknown (null)
"""
# a host's cells as its host access read them: (source, inventory numa_cells)
Measured = dict[str, tuple[str, list[dict[str, Any]]]]


def header(data: dict[str, Any], measured: Measured | None = None) -> str:
    """What the collected inventory says of itself: which hosts' cells were read from the host, which estimated."""
    measured = measured or {}
    names = [h["name"] for h in data["hosts"]]
    estimated = [n for n in names if n not in measured]
    out = "# Collected by `nfvcat inventory collect`.\n"
    for n in names:
        if n in measured:
            out += f"# - host {n}: NUMA cells, thread siblings, huge pages and pinned pCPUs {measured[n][0]}\n"
    if estimated:
        out += f"# ESTIMATED, edit before use: host(s) {', '.join(estimated)}\n" + ESTIMATED
    if any(h.get("pci_devices") for h in data["hosts"]):
        out += DEVICES
    return out


def _cpu_topology(cpu_info: Any) -> tuple[int, int]:
    if isinstance(cpu_info, str):
        try:
            cpu_info = json.loads(cpu_info)
        except ValueError:
            cpu_info = {}
    topo = (cpu_info or {}).get("topology") or {}
    return max(1, int(topo.get("sockets") or 1)), max(1, int(topo.get("threads") or 1))


def _cells(sockets: int, threads: int, pcpus: int, vcpus: int, memory_mb: int) -> list[dict[str, Any]]:
    cells, next_cpu = [], 0
    for i in range(sockets):
        n_p = pcpus // sockets + (1 if i < pcpus % sockets else 0)
        n_s = vcpus // sockets + (1 if i < vcpus % sockets else 0)
        shared = list(range(next_cpu, next_cpu + n_s))
        dedicated = list(range(next_cpu + n_s, next_cpu + n_s + n_p))
        next_cpu += n_s + n_p
        cell: dict[str, Any] = {"id": i, "socket": i, "cpu_shared_set": _spec(shared),
                                "cpu_dedicated_set": _spec(dedicated), "memory_mb": max(1, memory_mb // sockets)}
        if threads > 1:
            cpus = shared + dedicated
            cell["siblings"] = [_spec(cpus[j:j + threads]) for j in range(0, len(cpus), threads)]
        cells.append(cell)
    return cells


def _spec(cpus: list[int]) -> str:
    return f"{cpus[0]}-{cpus[-1]}" if len(cpus) > 1 else (str(cpus[0]) if cpus else "")


def build(hypervisors: list[dict[str, Any]], placement: dict[str, dict[str, Any]],
          agents: list[dict[str, Any]], measured: Measured | None = None) -> dict[str, Any]:
    """hypervisors: {name, host, cpu_info, vcpus, memory_mb}; placement: name -> {inventories, traits};
    agents: {host, agent_type, configurations}; measured: host -> (source, numa_cells) read on the host."""
    hosts = []
    for hv in sorted(hypervisors, key=lambda h: h["name"]):
        rp = placement.get(hv["name"], {})
        inv = rp.get("inventories", {})
        vcpu, pcpu, mem = inv.get("VCPU", {}), inv.get("PCPU", {}), inv.get("MEMORY_MB", {})
        sockets, threads = _cpu_topology(hv.get("cpu_info"))
        n_p = int(pcpu.get("total", 0))
        n_s = int(vcpu.get("total", 0)) or (0 if n_p else int(hv.get("vcpus") or 1))
        host: dict[str, Any] = {
            "name": hv.get("host") or hv["name"], "role": "compute",
            "cpu_allocation_ratio": float(vcpu.get("allocation_ratio", 1.0) or 1.0),
            "ram_allocation_ratio": float(mem.get("allocation_ratio", 1.0) or 1.0),
            "reserved_host_memory_mb": int(mem.get("reserved", 0)),
            "traits": sorted(rp.get("traits", [])),
            "numa_cells": _cells(sockets, threads, n_p, n_s, int(mem.get("total") or hv.get("memory_mb") or 1)),
        }
        if host["name"] in (measured or {}):
            host["numa_cells"] = (measured or {})[host["name"]][1]
        devices: list[dict[str, Any]] = []
        for agent in agents:
            if agent.get("host") != host["name"]:
                continue
            conf = agent.get("configurations") or {}
            if agent.get("agent_type") == OVS_AGENT:
                host["ovs_physnets"] = sorted((conf.get("bridge_mappings") or {}).keys())
                host["tunneled"] = bool(conf.get("tunnel_types"))
                if conf.get("datapath_type") == "netdev":
                    host["role"] = "ovs-dpdk"
            elif agent.get("agent_type") == SRIOV_AGENT:
                host["role"] = "sriov"
                ifaces = [(net, i) for net, names in sorted((conf.get("device_mappings") or {}).items())
                          for i in names]
                total = int(conf.get("devices") or 0)
                for k, (net, iface) in enumerate(ifaces):
                    count = min(64, total // len(ifaces) + (1 if k < total % len(ifaces) else 0))
                    devices.append({"address": f"0000:{0x10 + k:02x}:00.0", "vendor_id": "ffff",
                                    "product_id": "ffff", "numa_node": None, "device": iface, "physnet": net,
                                    "vfs": {"count": count, "product_id": "fffe"}})
        if devices:
            host["pci_devices"] = devices
        hosts.append(host)
    if not hosts:
        raise UserError("the cloud lists no hypervisors")
    estimated = [h["name"] for h in hosts if h["name"] not in (measured or {})]
    return {"kind": "nfvcat/inventory", "version": 1,
            "description": "collected" + (f" (estimated NUMA layout: {len(estimated)} of {len(hosts)} hosts)"
                                          if estimated else " (NUMA layout read on every host)"),
            "hosts": hosts}
