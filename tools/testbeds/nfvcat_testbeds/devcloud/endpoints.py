"""Test endpoints in the dev cloud: Neutron ports on a chain's networks, each realised as a network namespace
plugged into a host's integration bridge (the real host's, for a chain's) the way os-vif plugs a VIF (a veth
whose host end is an OVS port with ``external-ids`` iface-id, attached-mac, iface-status), so the Open vSwitch
agent wires it (local VLAN) and applies its port security (openvswitch firewall: anti-spoofing, security
groups) as it does for a VM.

The namespace is a :class:`nfvcat_testbeds.lab.netns.Lab`'s, so the lab's traffic tools (trafgen, the sink's counter,
ping, iperf3) run in it unchanged. ``unplug`` removes the OVS port, the veth and the Neutron port.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import Any

from nfvcat.core.errors import EXIT_ENGINE, UserError
from nfvcat.core.waiting import until
from nfvcat_testbeds.devcloud import computes
from nfvcat_testbeds.devcloud.state import State
from nfvcat_testbeds.lab.netns import Lab

DEVICE_OWNER = "nfvcat:test-endpoint"


@dataclass
class Endpoint:
    ns: str
    ifname: str
    ip: str
    mac: str
    prefixlen: int
    port_id: str
    tap: str  # the host end, an OVS port of the host's br-int


def real_host(state: State) -> computes.Compute:
    """The dev cloud's real compute host (the first ``hypervisor: libvirt`` host of its inventory)."""
    from nfvcat.catalog import inventory
    from nfvcat_testbeds.devcloud.lifecycle import inventory_of

    for c in computes.site_layout(inventory.load(str(inventory_of(state)))):
        if c.real:
            return c
    raise UserError("devcloud: no real compute host in the dev cloud's inventory (hypervisor: libvirt)", EXIT_ENGINE)


def _run(argv: list[str], env: dict[str, str] | None = None) -> str:
    import os

    res = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False,
                         env={**os.environ, **(env or {})})
    if res.returncode != 0:
        raise UserError(f"devcloud endpoint: {' '.join(argv[:6])}: {res.stderr.strip()[-300:]}", EXIT_ENGINE)
    return res.stdout


def plug(conn: Any, lab: Lab, state: State, host: computes.Compute, network: str, short: str,
         timeout: float = 60) -> Endpoint:
    """A Neutron port on ``network`` bound to ``host``, its namespace ``short`` of ``lab`` wired to the host's
    br-int; returns once Neutron reports the port ACTIVE (the agent wired it)."""
    net = conn.network.find_network(network)
    if net is None:
        raise UserError(f"devcloud endpoint: no network {network}", EXIT_ENGINE)
    port = conn.network.create_port(network_id=net.id, name=f"nfvcat-endpoint-{short}", device_owner=DEVICE_OWNER,
                                    device_id=f"nfvcat-endpoint-{short}", binding_host_id=host.name)
    ip = port.fixed_ips[0]["ip_address"]
    subnet = conn.network.get_subnet(port.fixed_ips[0]["subnet_id"])
    prefixlen = int(subnet.cidr.split("/")[1])
    tap, peer = f"tap{port.id[:11]}", f"nfe{port.id[:11]}"
    ns = lab.ns(short)
    hostns = host.in_netns()
    _run([*hostns, "ip", "link", "add", tap, "mtu", str(net.mtu), "type", "veth", "peer", "name", peer])
    _run([*hostns, "ip", "link", "set", peer, "netns", ns])
    _run([*hostns, "ip", "link", "set", tap, "up"])
    # no transmit checksum offload: the userspace datapath forwards the frame as the veth hands it over, TCP
    # checksum left to the NIC that is not there, and the guest drops it (measured: ICMP passed, TCP did not)
    lab.sh(ns, f"ip link set {peer} name eth0 address {port.mac_address} mtu {net.mtu} && "
               f"ip addr add {ip}/{prefixlen} dev eth0 && ethtool -K eth0 tx off >/dev/null && ip link set eth0 up")
    _run(["ovs-vsctl", "--timeout=10", "--may-exist", "add-port", host.integration_bridge, tap, "--", "set",
          "Interface", tap, f"external-ids:iface-id={port.id}", "external-ids:iface-status=active",
          f"external-ids:attached-mac={port.mac_address}", f"external-ids:vm-uuid=nfvcat-endpoint-{short}"],
         computes.ovs_env(state, host))
    until(lambda: str(conn.network.get_port(port.id).status), lambda status: status == "ACTIVE", timeout=timeout,
          what=f"devcloud endpoint {short}: port {port.id} (wired by the OVS agent of {host.name})", most=2.0)
    return Endpoint(ns, "eth0", ip, port.mac_address, prefixlen, port.id, tap)


def unplug(conn: Any, state: State, host: computes.Compute, ep: Endpoint) -> None:
    """The OVS port, the veth (its other end goes with the lab's namespace) and the Neutron port."""
    subprocess.run(["ovs-vsctl", "--timeout=10", "--if-exists", "del-port", host.integration_bridge, ep.tap],
                   capture_output=True, timeout=60, check=False, env=_env(state, host))
    subprocess.run([*host.in_netns(), "ip", "link", "del", ep.tap], capture_output=True, timeout=60,
                   check=False)
    conn.network.delete_port(ep.port_id, ignore_missing=True)


def _env(state: State, host: computes.Compute) -> dict[str, str]:
    import os

    return {**os.environ, **computes.ovs_env(state, host)}


def leftovers(conn: Any, state: State, host: computes.Compute) -> list[str]:
    """What a test could leave behind: endpoint ports in Neutron, OVS ports of taps on the real host (with no
    server left, none should remain but the DHCP server's: ``tap`` + its port's id, as Neutron names it)."""
    ports = [f"port {p.id}" for p in conn.network.ports(device_owner=DEVICE_OWNER)]
    dhcp = {f"tap{p.id}"[:14] for p in conn.network.ports(device_owner="network:dhcp")}
    out = subprocess.run(["ovs-vsctl", "--timeout=10", "list-ports", host.integration_bridge], capture_output=True,
                         text=True, timeout=60, check=False, env=_env(state, host)).stdout.split()
    return ports + [f"ovs port {name}" for name in out if name.startswith("tap") and name not in dhcp]
