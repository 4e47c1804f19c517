"""Networks across the dev cloud's hosts (:mod:`nfvcat_testbeds.devcloud.hostnet`): each host tunnels VXLAN from an
endpoint of its own over the underlay, and each physnet of the hosts' switches is one wire between them, so a
project (VXLAN) network and a provider (VLAN) network each reach every host that can have their ports.

For each kind, a network gets one test endpoint per host: a Neutron port bound to that host, plugged into that
host's br-int as os-vif plugs a VIF (:mod:`nfvcat_testbeds.devcloud.endpoints`), wired by that host's Open vSwitch
agent. Then:
- every endpoint pings every other one;
- the echo requests and replies between two hosts are on the wire between them as the network says: VXLAN between
  the hosts' tunnel endpoints with the network's VNI, or 802.1Q-tagged with the network's VLAN id (captured on the
  machine's end of each host's link);
- a datagram that fills the network's MTU (VXLAN 1450: 1500 less its 50 bytes; VLAN 1500) crosses with don't
  fragment set;
- a TCP stream (iperf3, 2 s) crosses to the real host's endpoint in full-size segments (the MSS iperf3 reads back:
  the MTU less IP, TCP and the timestamp option).
Everything it creates (endpoints, their namespaces, the network) goes at the end, pass or fail."""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

PHYSICAL_MTU = 1500
VXLAN_OVERHEAD = 50  # outer Ethernet 14 + IP 20 + UDP 8 + VXLAN 8: Neutron's vxlan MTU is the physical one less this
ICMP_HEADERS = 28  # IP 20 + ICMP 8
TCP_HEADERS = 40 + 12  # IP 20 + TCP 20, and the timestamp option Linux sends
PHYSNET = "physnet_mgmt"  # the one physnet every dev cloud host's switch has
KINDS = {  # network kind -> (what create_network gets besides the name, CIDR)
    "vxlan": ({}, "10.214.0.0/24"),
    "vlan": ({"provider_network_type": "vlan", "provider_physical_network": PHYSNET}, "10.215.0.0/24"),
}


@pytest.fixture(scope="module")
def hosts(devcloud: None) -> Any:
    from nfvcat.catalog import inventory
    from nfvcat_testbeds.devcloud import computes
    from nfvcat_testbeds.devcloud.lifecycle import inventory_of
    from nfvcat_testbeds.devcloud.state import State, default_dir

    state = State(default_dir())
    return state, computes.site_layout(inventory.load(str(inventory_of(state))))


def wire(host: Any, kind: str, segment: int) -> tuple[str, list[str]]:
    """The machine's end of ``host``'s link that carries ``kind`` and the tcpdump filter of the network's frames."""
    from nfvcat_testbeds.devcloud import hostnet

    if kind == "vxlan":
        return hostnet.link_names(host.position)[0], ["udp", "port", "4789"]
    return hostnet.link_names(host.position, host.spec.ovs_physnets.index(PHYSNET))[0], ["vlan", str(segment)]


def capture(host: Any, kind: str, segment: int, log: Path) -> subprocess.Popen[bytes]:
    port, bpf = wire(host, kind, segment)
    out = log.open("wb")
    proc = subprocess.Popen(["tcpdump", "-i", port, "-e", "-nn", "-l", *bpf], stdout=out, stderr=subprocess.DEVNULL)
    out.close()
    return proc


def frames(text: str) -> list[str]:
    """tcpdump's output, one string per frame (an encapsulated frame may go on over more lines)."""
    return [f for f in re.split(r"\n(?=\d\d:\d\d:\d\d\.)", text) if f.strip()]


def on_the_wire(frame: str, kind: str, net: Any, host: Any, peers: list[Any], ips: dict[str, str]) -> bool:
    """Whether a frame is an echo request or reply of the ping between ``host``'s endpoint and a peer's, carried
    as ``kind`` carries ``net``: VXLAN between their tunnel endpoints with its VNI, or tagged with its VLAN id."""
    if "ICMP echo" not in frame or ips[host.name] not in frame or not any(ips[p.name] in frame for p in peers):
        return False
    if kind == "vxlan":
        return (host.tunnel_ip in frame and any(p.tunnel_ip in frame for p in peers)
                and f"vni {net.provider_segmentation_id}" in frame)
    return f"vlan {net.provider_segmentation_id}," in frame


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_network_reaches_across_every_host(conn: Any, hosts: Any, tmp_path: Path, kind: str) -> None:
    from nfvcat_testbeds.devcloud import computes, endpoints
    from nfvcat_testbeds.lab.netns import Lab
    from nfvcat_testbeds.targets import traffic

    state, layout = hosts
    layout = [c for c in layout if kind == "vxlan" or PHYSNET in c.spec.ovs_physnets]
    assert len({c.tunnel_ip for c in layout}) == len(layout) >= 2
    name = f"nfvcat-test-{kind}"
    for old in conn.network.networks(name=name):  # a run killed before its clean-up
        for port in conn.network.ports(network_id=old.id):
            conn.network.delete_port(port, ignore_missing=True)
        conn.network.delete_network(old, ignore_missing=True)
    attrs, cidr = KINDS[kind]
    net = conn.network.create_network(name=name, **attrs)
    lab = Lab(tag=kind)
    plugged: list[tuple[Any, Any]] = []
    try:
        conn.network.create_subnet(network_id=net.id, name=name, ip_version=4, cidr=cidr, gateway_ip=None,
                                   is_dhcp_enabled=False)
        net = conn.network.get_network(net.id)
        assert net.provider_network_type == kind, net
        assert net.mtu == PHYSICAL_MTU - (VXLAN_OVERHEAD if kind == "vxlan" else 0), net.mtu
        t0 = time.monotonic()
        for i, c in enumerate(layout):
            plugged.append((c, endpoints.plug(conn, lab, state, c, name, f"h{i}")))
        sys.stderr.write(f"[{kind}] {len(plugged)} endpoints on {', '.join(c.name for c, _ in plugged)} wired in "
                         f"{time.monotonic() - t0:.1f} s; segment {net.provider_segmentation_id}\n")
        ips = {c.name: ep.ip for c, ep in plugged}

        # the wire: captured on each host's link while the first host's endpoint pings the others
        (first, src), *others = plugged
        segment = net.provider_segmentation_id
        captures = [(c, capture(c, kind, segment, tmp_path / f"{c.name}.txt")) for c, _ in plugged]
        try:
            time.sleep(1.0)  # tcpdump attached
            for _, dst in others:
                lab.sh(src.ns, f"ping -c 1 -W 5 {dst.ip}", timeout=30)
            time.sleep(0.5)
        finally:
            for _, proc in captures:
                proc.terminate()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=5)
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        for c, _ in captures:
            seen = (tmp_path / f"{c.name}.txt").read_text()
            peers = [first] if c is not first else [o for o, _ in others]
            assert any(on_the_wire(frame, kind, net, c, peers, ips) for frame in frames(seen)), (c.name, seen[-3000:])

        # every pair, both ways
        for (a, ea), (b, eb) in itertools.permutations(plugged, 2):
            res = lab.sh(ea.ns, f"ping -c 3 -i 0.3 -W 3 {eb.ip}", check=False, timeout=30)
            assert res.returncode == 0, (a.name, b.name, res.stdout, res.stderr)

        # a datagram that fills the network's MTU, don't fragment: a full-size frame on the wire
        payload = net.mtu - ICMP_HEADERS
        for _, dst in others:
            res = lab.sh(src.ns, f"ping -c 2 -W 3 -M do -s {payload} {dst.ip}", check=False, timeout=30)
            assert res.returncode == 0, (dst.ip, payload, res.stdout, res.stderr)

        # TCP in full-size segments to the real host's endpoint
        (_, dst), = [(c, ep) for c, ep in others if c.real] or others[-1:]
        stream = traffic.tcp_stream(lab, traffic.Endpoints(src.ns, src.ifname, src.ip, dst.ns, dst.ifname, dst.ip,
                                                           dst.mac), 2)
        sys.stderr.write(f"[{kind}] TCP {src.ip} -> {dst.ip}: {stream.mbps:.1f} Mbit/s, MSS {stream.mss}, "
                         f"{stream.retransmits} segments sent again\n")
        assert stream.mbps > 0 and stream.mss == net.mtu - TCP_HEADERS, stream
    finally:
        for c, ep in plugged:
            endpoints.unplug(conn, state, c, ep)
        lab.close()
        for port in conn.network.ports(network_id=net.id):
            conn.network.delete_port(port, ignore_missing=True)
        conn.network.delete_network(net.id, ignore_missing=True)
    assert conn.network.find_network(name) is None
    assert list(conn.network.ports(device_owner=endpoints.DEVICE_OWNER)) == []
    for c, ep in plugged:
        ports = subprocess.run(["ovs-vsctl", "--timeout=10", "list-ports", c.integration_bridge], capture_output=True,
                               text=True, check=True, env={**os.environ, **computes.ovs_env(state, c)}).stdout.split()
        assert ep.tap not in ports, c.name


def test_up_makes_anew_a_host_namespace_a_killed_dev_cloud_left(devcloud: None) -> None:
    """A host namespace with no process in it (its dev cloud was killed, not brought down) still holds the
    devices of that cloud, say a DHCP server's veth: ``ensure_host`` (what ``up`` calls) makes it anew, without
    them. One that runs something (a live host) keeps its devices. Then a DHCP namespace whose veth went with it
    (only its loopback left) is an orphan that ``remove_orphans`` removes; one with a device stays."""
    from nfvcat_testbeds.devcloud import hostnet, metadata
    from nfvcat_testbeds.lab import netns

    ns, position, dhcp = "nfvcat-stale-test", 90, f"{metadata.NETNS_PREFIX}stale-test"
    orphan = f"{metadata.NETNS_PREFIX}orphan-test"

    def links(where: str) -> list[str]:
        found = netns.links(where)
        assert found is not None, where
        return found

    def ip(*args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True)

    sleeper = None
    try:
        for where in (ns, dhcp, orphan):
            ip("netns", "add", where)
        # what a killed cloud leaves: the DHCP agent's veth, its tap end in the host, its ns- end in qdhcp-
        ip("-n", ns, "link", "add", "tapdeadbeef-00", "type", "veth", "peer", "name", "ns-deadbeef-00", "netns", dhcp)
        assert hostnet.ensure_host(ns, position, []) is True
        assert "tapdeadbeef-00" not in links(ns) and hostnet.link_names(position)[1] in links(ns)
        assert links(dhcp) == ["lo"]  # the veth went with the host's end

        # a live host (something runs in it) keeps what it has
        ip("-n", ns, "link", "add", "tapalive-00", "type", "veth", "peer", "name", "tapalive-01")
        sleeper = subprocess.Popen(["ip", "netns", "exec", ns, "sleep", "300"])
        deadline = time.monotonic() + 10
        while not netns.pids(ns) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert hostnet.ensure_host(ns, position, []) is False and "tapalive-00" in links(ns)

        ip("-n", orphan, "link", "add", "ns-live-00", "type", "veth", "peer", "name", "ns-live-01")  # with a device
        removed = metadata.remove_orphans()
        assert dhcp in removed and orphan not in removed, removed
        listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
        assert dhcp not in listed and orphan in listed
    finally:
        if sleeper is not None:
            sleeper.kill()
            sleeper.wait()
        hostnet.remove_host(ns, position, [], "br-phy-unused")
        for where in (dhcp, orphan):
            subprocess.run(["ip", "netns", "del", where], capture_output=True, check=False)
