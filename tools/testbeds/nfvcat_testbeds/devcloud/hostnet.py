"""The dev cloud's host networking: each compute host's network namespace, and the wires between the hosts (the
underlay its VXLAN tunnels run on, one per physnet).

- **A namespace per host.** A host whose switch is not the dev cloud's main one (``computes.Compute.main_switch``)
  runs its Open vSwitch datapath (userspace, real netdevs) and its Open vSwitch agent in a network namespace of its
  own, ``nfvcat-<host>``, as a compute node has a kernel of its own: its switch's tap devices (``ovs-netdev``, its
  bridges, its VIFs, a real host's guests) cannot collide with another host's, and its routes are its own. The main
  switch's host stays in the machine's namespace.
- **The underlay.** A Linux bridge of the machine's namespace, ``nfvcat-ul`` (no address, not filtered by
  iptables), stands for the physical network between the hosts. Each host has a veth pair to it: the bridge's end
  is a bridge port; the host's end is a port of the host's ``br-phy`` Open vSwitch bridge, whose own interface
  holds the host's tunnel endpoint (the agent's ``local_ip``, ``169.254.199.<10 + position>/24``).
- **The physnets.** Each physnet of a host's switch (``ovs_physnets``, its bridge ``br-<physnet>``) is wired the
  same way to a Linux bridge of its own, ``nfvcat-<physnet>`` (``nfvcat-mgmt``, ``nfvcat-dpdk``): a VLAN or flat
  provider network reaches every host that has its physnet, as the cabling of a real site does.
- **Why so.** Userspace Open vSwitch tunnels natively: it encapsulates with the route and the ARP entry it finds in
  its own namespace, and the route must lead out through one of its own bridges. Two switches in one namespace see
  each other's endpoint as a local route and cannot tunnel to each other (measured: ``ovs/route/add`` refuses the
  route); each in a namespace of its own with a ``br-phy``, they do.
- **The agent beside its switch.** The agent checks at start that ``local_ip`` is an address of its own namespace,
  so a namespaced host's agent runs in the namespace (``nsenter --net``, keeping the machine's mount namespace: the
  OVSDB socket, configuration and logs are where they are). Its OpenFlow controller listens on the namespace's
  loopback. RabbitMQ listens on the machine's loopback only: a pair of socat relays carry 127.0.0.1:5672 of the
  namespace to it over a Unix socket (``relay_socket``).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from nfvcat.core.errors import EXIT_ENGINE, UserError
from nfvcat.core.waiting import until
from nfvcat_testbeds.lab import netns as netns_mod

UNDERLAY = "nfvcat-ul"
TUNNEL_PREFIXLEN = 24


def netns(name: str) -> str:
    """The network namespace of the host ``name``."""
    return f"nfvcat-{name}"


def in_netns(name: str) -> list[str]:
    """The argv prefix that runs a command in the host's namespace (``ip netns exec``: a mount namespace of its
    own too, with /sys of the network namespace)."""
    return ["ip", "netns", "exec", netns(name)]


def nsenter(name: str) -> list[str]:
    """The argv prefix that runs a command in the host's network namespace only (the machine's mounts)."""
    return ["nsenter", f"--net=/run/netns/{netns(name)}"]


def tunnel_address(position: int) -> str:
    """The tunnel endpoint of the host at ``position`` in the inventory (its ``local_ip``)."""
    return f"169.254.199.{10 + position}"


def segment(physnet: str | None) -> str:
    """The Linux bridge of the machine a host's link joins: the underlay (None), else the physnet's wire."""
    return UNDERLAY if physnet is None else f"nfvcat-{physnet.removeprefix('physnet_')}"[:15]


def link_names(position: int, index: int | None = None) -> tuple[str, str]:
    """A veth pair of the host at ``position``: (the machine's bridge's end, the host's end). ``index`` None: its
    underlay link (to br-phy); else the link of its ``index``-th physnet (to that physnet's bridge)."""
    stem = f"nfvu{position}" if index is None else f"nfvp{position}x{index}"
    return f"{stem}b", f"{stem}h"


def relay_socket(run: Path, host: str) -> Path:
    """The Unix socket the machine's side of ``host``'s AMQP relay listens on."""
    return run / f"amqp-{host}.sock"


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30, check=False)
    if check and res.returncode != 0:
        raise UserError(f"devcloud: ip {' '.join(args)}: {res.stderr.strip()}", EXIT_ENGINE)
    return res


def ensure_segments(physnets: list[str]) -> None:
    """The underlay bridge and one bridge per physnet (idempotent)."""
    for name in [UNDERLAY, *(segment(p) for p in physnets)]:
        if _ip("link", "show", name, check=False).returncode != 0:
            # bridged frames do not go through iptables (br_netfilter may be loaded, with a FORWARD policy of its
            # own); VLAN-tagged frames pass as they are (no vlan_filtering)
            _ip("link", "add", name, "type", "bridge", "nf_call_iptables", "0", "nf_call_ip6tables", "0")
        _ip("link", "set", name, "up")


def ensure_host(ns: str | None, position: int, physnets: list[str]) -> bool:
    """The host's namespace ``ns`` (None: the machine's, for the main switch's host), its underlay link and a link
    per physnet of its switch (idempotent). The host's ends wait, down, for its switch's bridges (``attach``,
    bootstrap.bridges).

    A running host always has its switch in its namespace. A namespace with no process in it was left by a dev
    cloud that was killed rather than brought down (any state directory): its devices (a DHCP server's veth, a
    test endpoint's) would pass for the new cloud's, so it is made anew. Returns True if such a namespace was
    removed."""
    where = ["-n", ns] if ns else []
    listed = netns_mod.namespaces()
    stale = ns is not None and ns in listed and not netns_mod.pids(ns)
    if ns and stale:
        _ip("netns", "del", ns)
    if ns and (stale or ns not in listed):
        _ip("netns", "add", ns)
    if ns:
        _ip(*where, "link", "set", "lo", "up")
    for index, physnet in [(None, None), *enumerate(physnets)]:
        bridge_end, host_end = link_names(position, index)
        if _ip("link", "show", bridge_end, check=False).returncode != 0:
            _ip("link", "add", bridge_end, "type", "veth", "peer", "name", host_end, *(["netns", ns] if ns else []))
        _ip("link", "set", bridge_end, "master", segment(physnet), "up")
        _ip(*where, "link", "set", host_end, "up")
    return stale


def attach(ns: str | None, position: int, phy_bridge: str) -> str:
    """The host's tunnel endpoint on its br-phy (once its switch made the bridge's interface); returns it."""
    where = ["-n", ns] if ns else []
    address = tunnel_address(position)
    # a switch restarted on its database makes the bridge's interface after ovs-vsctl returns (TimedOut: exit 3)
    until(lambda: _ip(*where, "link", "show", phy_bridge, check=False).returncode, lambda rc: rc == 0,
          timeout=30, what=f"devcloud: interface {phy_bridge} in {ns or 'the machine'}",
          state=lambda _: "absent", first=0.1, most=1.0)
    _ip(*where, "addr", "replace", f"{address}/{TUNNEL_PREFIXLEN}", "dev", phy_bridge)
    _ip(*where, "link", "set", phy_bridge, "up")
    return address


def remove_host(ns: str | None, position: int, physnets: list[str], phy_bridge: str) -> bool:
    """The host's links and namespace (once its switch stopped); True if something was there. In the machine's
    namespace, the interface of its br-phy too: a userspace switch's tap devices outlive it, and that one holds
    the tunnel endpoint's address and route."""
    gone = False
    for index in [None, *range(len(physnets))]:
        gone = _ip("link", "del", link_names(position, index)[0], check=False).returncode == 0 or gone
    if not ns:
        gone = _ip("link", "del", phy_bridge, check=False).returncode == 0 or gone
    if ns and ns in netns_mod.namespaces():
        _ip("netns", "del", ns, check=False)
        gone = True
    return gone


def remove_segments(physnets: list[str]) -> list[str]:
    """The underlay and physnet bridges; those that were there."""
    return [name for name in [UNDERLAY, *(segment(p) for p in physnets)]
            if _ip("link", "del", name, check=False).returncode == 0]
