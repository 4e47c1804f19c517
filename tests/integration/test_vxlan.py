"""VXLAN across the dev cloud's hosts: each host tunnels from an endpoint of its own over the underlay
(:mod:`nfvcat.lab.devcloud.hostnet`), so a project network reaches every host.

A VXLAN network (Neutron's tenant type: no provider attributes given) gets one test endpoint per host: a Neutron port
bound to that host, plugged into that host's br-int as os-vif plugs a VIF (:mod:`nfvcat.lab.devcloud.endpoints`),
wired by that host's Open vSwitch agent. Then:
- every endpoint pings every other one;
- the frames between two hosts cross the underlay as VXLAN, outer addresses the two hosts' tunnel endpoints, the VNI
  the network's segmentation id (captured on the underlay bridge's port of each host);
- a datagram that fills the network's MTU (1450: 1500 less VXLAN's 50 bytes) crosses unfragmented (don't fragment
  set), so the underlay carries a full-size tunnel packet;
- a TCP stream (iperf3, 2 s) crosses to the real host's endpoint in full-size segments (MSS 1398: the MTU less
  IP, TCP and the timestamp option).
Everything it creates (endpoints, their namespaces, the network) goes at the end, pass or fail."""

from __future__ import annotations

import contextlib
import itertools
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

NETWORK = "nfvcat-test-vxlan"
CIDR = "10.214.0.0/24"
VXLAN_OVERHEAD = 50  # outer Ethernet 14 + IP 20 + UDP 8 + VXLAN 8: Neutron's vxlan MTU is the physical one less this
ICMP_HEADERS = 28  # IP 20 + ICMP 8


@pytest.fixture(scope="module")
def hosts(devcloud: None) -> Any:
    from nfvcat.catalog import inventory
    from nfvcat.lab.devcloud import computes
    from nfvcat.lab.devcloud.lifecycle import inventory_of
    from nfvcat.lab.devcloud.state import State, default_dir

    state = State(default_dir())
    return state, computes.site_layout(inventory.load(str(inventory_of(state))))


def capture(host: Any, count: int, log: Path) -> subprocess.Popen[bytes]:
    """tcpdump of VXLAN on the underlay bridge's port of ``host`` (the frames its br-phy sends and receives)."""
    from nfvcat.lab.devcloud import hostnet

    port = hostnet.link_names(host.position)[0]
    out = log.open("wb")
    proc = subprocess.Popen(["tcpdump", "-i", port, "-nn", "-l", "-c", str(count), "udp", "port", "4789"],
                            stdout=out, stderr=subprocess.DEVNULL)
    out.close()
    return proc


def test_a_vxlan_network_reaches_across_every_host(conn: Any, hosts: Any, tmp_path: Path) -> None:
    from nfvcat.lab.campaign import traffic
    from nfvcat.lab.devcloud import computes, endpoints
    from nfvcat.lab.netns import Lab

    state, layout = hosts
    assert len({c.tunnel_ip for c in layout}) == len(layout) >= 2
    for old in conn.network.networks(name=NETWORK):  # a run killed before its clean-up
        for port in conn.network.ports(network_id=old.id):
            conn.network.delete_port(port, ignore_missing=True)
        conn.network.delete_network(old, ignore_missing=True)
    net = conn.network.create_network(name=NETWORK)
    lab = Lab(tag="vxlan")
    plugged: list[tuple[Any, Any]] = []
    try:
        conn.network.create_subnet(network_id=net.id, name=NETWORK, ip_version=4, cidr=CIDR, gateway_ip=None,
                                   is_dhcp_enabled=False)
        net = conn.network.get_network(net.id)
        assert net.provider_network_type == "vxlan", net
        physical_mtu = 1500
        assert net.mtu == physical_mtu - VXLAN_OVERHEAD, net.mtu
        t0 = time.monotonic()
        for i, c in enumerate(layout):
            plugged.append((c, endpoints.plug(conn, lab, state, c, NETWORK, f"h{i}")))
        sys.stderr.write(f"[vxlan] {len(plugged)} endpoints on {', '.join(c.name for c, _ in plugged)} wired in "
                         f"{time.monotonic() - t0:.1f} s; VNI {net.provider_segmentation_id}\n")

        # the tunnels: captured on each host's underlay port while the first host's endpoint pings the others
        (first, src), *others = plugged
        captures = [(c, capture(c, 2, tmp_path / f"{c.name}.pcap.txt")) for c, _ in plugged]
        time.sleep(1.0)  # tcpdump attached
        for _, dst in others:
            lab.sh(src.ns, f"ping -c 1 -W 5 {dst.ip}", timeout=30)
        for _, proc in captures:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        for c, _ in captures:
            seen = (tmp_path / f"{c.name}.pcap.txt").read_text()
            peers = [first] if c is not first else [o for o, _ in others]
            assert any(c.tunnel_ip in line and any(p.tunnel_ip in line for p in peers) and
                       f"vni {net.provider_segmentation_id}" in line for line in seen.splitlines()), (c.name, seen)

        # every pair, both ways
        for (a, ea), (b, eb) in itertools.permutations(plugged, 2):
            res = lab.sh(ea.ns, f"ping -c 3 -i 0.3 -W 3 {eb.ip}", check=False, timeout=30)
            assert res.returncode == 0, (a.name, b.name, res.stdout, res.stderr)

        # a datagram that fills the network's MTU, don't fragment: a full-size VXLAN packet on the underlay
        payload = net.mtu - ICMP_HEADERS
        for _, dst in others:
            res = lab.sh(src.ns, f"ping -c 2 -W 3 -M do -s {payload} {dst.ip}", check=False, timeout=30)
            assert res.returncode == 0, (dst.ip, payload, res.stdout, res.stderr)

        # TCP across the tunnel, full-size segments (the MSS the network's MTU gives) to the real host's endpoint
        (_, dst), = [(c, ep) for c, ep in others if c.real] or others[-1:]
        stream = traffic.tcp_stream(lab, traffic.Endpoints(src.ns, src.ifname, src.ip, dst.ns, dst.ifname, dst.ip,
                                                           dst.mac), 2)
        sys.stderr.write(f"[vxlan] TCP {src.ip} -> {dst.ip}: {stream.mbps:.1f} Mbit/s, MSS {stream.mss}, "
                         f"{stream.retransmits} segments sent again\n")
        # the MSS iperf3 reads back (TCP_MAXSEG) is the MTU less IP and TCP headers (40) and Linux's timestamp
        # option (12): full-size segments, the path's MTU is the network's
        assert stream.mbps > 0 and stream.mss == net.mtu - 40 - 12, stream
    finally:
        for c, ep in plugged:
            endpoints.unplug(conn, state, c, ep)
        lab.close()
        for port in conn.network.ports(network_id=net.id):
            conn.network.delete_port(port, ignore_missing=True)
        conn.network.delete_network(net.id, ignore_missing=True)
    assert conn.network.find_network(NETWORK) is None
    assert list(conn.network.ports(device_owner=endpoints.DEVICE_OWNER)) == []
    for c, ep in plugged:
        ports = subprocess.run(["ovs-vsctl", "--timeout=10", "list-ports", c.integration_bridge], capture_output=True,
                               text=True, check=True, env={**os.environ, **computes.ovs_env(state, c)}).stdout.split()
        assert ep.tap not in ports, c.name
