"""The metadata service for the real host's guests, the way ML2/OVS provides it: a guest asks 169.254.169.254; the
DHCP agent's namespace for the guest's network answers (dnsmasq hands out the lease and, on a subnet without a
gateway, a host route to 169.254.169.254; haproxy listens there because of ``enable_isolated_metadata``); haproxy
forwards the request over a Unix socket to the metadata agent, which looks up the port through Neutron's RPC and
asks Nova's metadata API (``nova.wsgi.metadata`` on 127.0.0.1, see services.apis), signing the instance id with the
shared secret.

- neutron-dhcp-agent runs in the real host's network namespace (``nsenter --net``, keeping the machine's mount
  namespace, so everyone sees the ``qdhcp-<network>`` namespaces it makes). Its interface driver plugs a veth
  (``ovs_use_veth``: an internal port of a userspace datapath would be a tap owned by ovs-vswitchd) whose
  ``tap...`` end is a port of the host's own br-int, so dnsmasq is on the guests' datapath.
- RabbitMQ listens on the machine's loopback only: the host's AMQP relay carries 127.0.0.1:5672 of its namespace
  to it (hostnet, services.amqp_relay).
- neutron-metadata-agent runs beside the host's other agents and listens on a Unix socket
  (``metadata_proxy_socket``), which the DHCP agent's haproxy connects to.
- Only the networks of ``realhost.NETWORKS`` marked for DHCP get a DHCP server: Neutron's automatic scheduling
  is off (configs.neutron), and ``up`` gives those networks to the real host's DHCP agent (:func:`schedule`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nfvcat.core.errors import EXIT_ENGINE, UserError
from nfvcat.core.waiting import TimedOut, until
from nfvcat_testbeds.devcloud import computes, configs, procs
from nfvcat_testbeds.devcloud.state import HOST, PORTS, State
from nfvcat_testbeds.lab import netns

AGENT_TYPE = "DHCP agent"
NETNS_PREFIX = "qdhcp-"  # Neutron's name for a network's DHCP namespace


def proxy_socket(state: State, host: str) -> Path:
    """The metadata agent's socket (haproxy in a DHCP namespace connects to it)."""
    return state.run / f"metadata-{host}.sock"


def dhcp_state(state: State, host: str) -> Path:
    """The DHCP agent's state_path: ``dhcp/<network id>/`` holds each network's dnsmasq files."""
    return state.lib / "neutron" / f"dhcp-{host}"


def shared_secret(state: State) -> str:
    """The secret Neutron's metadata agent signs instance ids with and Nova's metadata API checks."""
    return state.secrets()["metadata"]


def dhcp_agent_conf(state: State, c: computes.Compute) -> Path:
    agent_ini, privsep = computes.agent_base(state, c)
    run = c.ovs_run(state)
    return configs.write(state.etc / "neutron" / f"dhcp_agent-{c.name}.ini", {
        **agent_ini,
        "DEFAULT": {**agent_ini["DEFAULT"], "state_path": str(dhcp_state(state, c.name)),
                    "interface_driver": "openvswitch", "ovs_use_veth": True,
                    "enable_isolated_metadata": True, "metadata_proxy_socket": str(proxy_socket(state, c.name)),
                    "num_sync_threads": 1},
        "ovs": {"integration_bridge": c.integration_bridge, "ovsdb_connection": f"unix:{run / 'db.sock'}",
                "datapath_type": "netdev"},
        **privsep,
    })


def metadata_agent_conf(state: State, c: computes.Compute) -> Path:
    agent_ini, _ = computes.agent_base(state, c)
    return configs.write(state.etc / "neutron" / f"metadata_agent-{c.name}.ini", {
        "DEFAULT": {**agent_ini["DEFAULT"], "nova_metadata_host": HOST, "nova_metadata_port": PORTS["nova_metadata"],
                    "metadata_proxy_shared_secret": shared_secret(state),
                    "metadata_proxy_socket": str(proxy_socket(state, c.name)), "metadata_workers": 1},
        "agent": agent_ini["agent"],
        "oslo_concurrency": agent_ini["oslo_concurrency"],
    })


def namespaces(state: State, host: str) -> list[str]:
    """The DHCP namespaces the host's agent made (one per network it served, from its state directory) that
    still exist."""
    confs = dhcp_state(state, host) / "dhcp"
    if not confs.is_dir():
        return []
    listed = netns.namespaces()
    return [f"{NETNS_PREFIX}{d.name}" for d in sorted(confs.iterdir())
            if d.is_dir() and f"{NETNS_PREFIX}{d.name}" in listed]


def cleanup(state: State, host: str) -> list[str]:
    """After the DHCP agent stopped: remove the namespaces it made and what runs in them (dnsmasq and haproxy
    daemonize, out of the agent's process group). Returns the namespaces removed."""
    gone = namespaces(state, host)
    for ns in gone:
        netns.remove(ns)
    return gone


def remove_orphans() -> list[str]:
    """DHCP namespaces whose server lost its port: no device but the loopback (the veth's other end went with the
    namespace of a host whose dev cloud was killed rather than brought down, in any state directory). Call only
    while no DHCP agent of the dev cloud runs (one may be making a namespace). Returns those removed."""
    gone = [ns for ns in netns.namespaces() if ns.startswith(NETNS_PREFIX) and netns.links(ns) == ["lo"]]
    for ns in gone:
        netns.remove(ns)
    return gone


def schedule(conn: Any, state: State, host: str, networks: list[str], timeout: float = 180) -> dict[str, str]:
    """Each of ``networks`` hosted by ``host``'s DHCP agent (added where it is not); network name -> agent id.
    Waits for the agent to report alive."""
    def agent() -> Any:
        return next((a for a in conn.network.agents(host=host, agent_type=AGENT_TYPE) if a.is_alive), None)

    try:
        found = until(agent, lambda a: a is not None, timeout=timeout, what=f"the DHCP agent of {host}",
                      state=lambda a: "not alive", first=1.0, most=5.0)
    except TimedOut as exc:
        log = state.log / f"neutron-dhcp-agent@{host}.log"
        raise UserError(f"devcloud: {exc}; last lines of {log}:\n{procs.tail(log)}", EXIT_ENGINE) from None
    out = {}
    for name in networks:
        net = conn.network.find_network(name, ignore_missing=False)
        if found.id not in {a.id for a in conn.network.network_hosting_dhcp_agents(net)}:
            conn.network.add_dhcp_agent_to_network(found, net)
        out[name] = found.id
    return out
