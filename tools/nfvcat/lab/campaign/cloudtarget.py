"""The cloud's own data plane as a campaign target (TDF ``general.dataplane: cloud``): two test endpoints, Neutron
ports on the chain's left and right networks realised as namespaces on the dev cloud's real host
(:mod:`nfvcat.lab.devcloud.endpoints`), routed through the VNF Heat deployed. Ping and TCP (iperf3) through it,
then the same RFC 2544 search as in the lab (:func:`nfvcat.lab.campaign.labtarget.measure`).

Under TCG the figures are small: they prove the path (OVS, the openvswitch firewall, the guest's virtio and
forwarding), not the speed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nfvcat.catalog.tdf import AclSpec, QosSpec
from nfvcat.cloud.verdicts import FAIL, PASS, Verdict
from nfvcat.lab import sockets
from nfvcat.lab.campaign import cloudacl, cloudqos
from nfvcat.lab.campaign import traffic as tr
from nfvcat.lab.devcloud import endpoints
from nfvcat.lab.devcloud.state import State, default_dir
from nfvcat.lab.netns import Lab


def stack_facts(conn: Any, stack: str) -> dict[str, str]:
    """The chain's left/right networks (its parameters) and the vRouter's addresses there (its outputs)."""
    body = conn.orchestration.get(f"/stacks/{stack}").json()["stack"]
    params = body.get("parameters") or {}
    outputs = {o["output_key"]: o.get("output_value") for o in body.get("outputs") or []}
    facts = {"left_network": params.get("left_network"), "right_network": params.get("right_network"),
             "left_ip": outputs.get("vrouter_left_ip"), "right_ip": outputs.get("vrouter_right_ip")}
    missing = sorted(k for k, v in facts.items() if not v)
    if missing:
        raise RuntimeError(f"stack {stack}: no {', '.join(missing)} (a chain with left/right networks and the "
                           "vRouter's vrouter_left_ip/vrouter_right_ip outputs)")
    return {k: str(v) for k, v in facts.items()}


@dataclass
class CloudDataplane:
    conn: Any
    stack: str
    lab: Lab
    workdir: Path
    state: State = field(default_factory=lambda: State(default_dir()))
    plugged: list[endpoints.Endpoint] = field(default_factory=list)
    endpoints: tr.Endpoints | None = None
    tcp_mbps: float = 0.0
    vnf_ports: list[Any] = field(default_factory=list)  # the VNF's left and right ports (Neutron)

    def plug(self) -> str:
        facts = stack_facts(self.conn, self.stack)
        host = endpoints.real_host(self.state)
        src = endpoints.plug(self.conn, self.lab, self.state, host, facts["left_network"], "src")
        self.plugged.append(src)
        dst = endpoints.plug(self.conn, self.lab, self.state, host, facts["right_network"], "dst")
        self.plugged.append(dst)
        self.lab.sh(src.ns, f"ip route replace {_net(dst)} via {facts['left_ip']}")
        self.lab.sh(dst.ns, f"ip route replace {_net(src)} via {facts['right_ip']}")
        for side in ("left", "right"):
            port = next(iter(self.conn.network.ports(fixed_ips=f"ip_address={facts[f'{side}_ip']}")), None)
            if port is None:
                raise RuntimeError(f"no Neutron port holds the vRouter's {side} address {facts[f'{side}_ip']}")
            self.vnf_ports.append(port)
        self.endpoints = tr.Endpoints(src.ns, src.ifname, src.ip, dst.ns, dst.ifname, dst.ip,
                                      self.vnf_ports[0].mac_address)
        return (f"endpoints {src.ip} on {facts['left_network']} and {dst.ip} on {facts['right_network']}, "
                f"ports ACTIVE on {host.name}'s br-int (port security on)")

    def check(self) -> list[Verdict]:
        """Reachability (ping) and a TCP stream (iperf3, 3 s) from the left endpoint to the right one."""
        assert self.endpoints is not None
        ep = self.endpoints
        out = []
        ping = self.lab.sh(ep.src_ns, f"ping -c 5 -i 0.2 -W 2 {ep.dst_ip}", check=False)
        ok = " 0% packet loss" in ping.stdout
        summary = next((line for line in ping.stdout.splitlines() if "packet loss" in line), ping.stderr.strip())
        out.append(Verdict("chain", f"{ep.src_ip} -> {ep.dst_ip}", "reachability (cloud)", PASS if ok else FAIL,
                           summary))
        stream = tr.tcp_stream(self.lab, ep, 3)
        mbps = stream.mbps
        detail = f"{mbps:.1f} Mbit/s received in 3 s" if mbps > 0 else f"no TCP stream: {stream.error}"
        out.append(Verdict("chain", f"{ep.src_ip} -> {ep.dst_ip}", "TCP (cloud)", PASS if mbps > 0 else FAIL, detail))
        self.tcp_mbps = mbps
        return out

    def acl(self, spec: AclSpec, say: Callable[[str], None]) -> dict[str, Any]:
        """The ACL probes (:mod:`nfvcat.lab.campaign.cloudacl`) with the rules Heat deployed, both ways."""
        assert self.endpoints is not None
        src, dst = self.plugged[0], self.plugged[1]
        specs = [f"{proto}/{port}" for proto, ports in cloudacl.PORTS.items() for port in ports]
        listeners = {ep.ns: sockets.Listener(self.lab, ep.ns, self.workdir / f"{ep.ns}.log", specs)
                     for ep in (src, dst)}
        left_mac, right_mac = (p.mac_address for p in self.vnf_ports)
        sides = {}
        for name, a, b, mac in (("left", src, dst, left_mac), ("right", dst, src, right_mac)):
            sides[name] = cloudacl.Side(name, a.ns, a.ifname, a.ip, a.mac, a.port_id, mac, b.ip, listeners[b.ns],
                                        tr.Endpoints(a.ns, a.ifname, a.ip, b.ns, b.ifname, b.ip, mac))
        rules = cloudacl.deployed_rules(self.conn, self.stack)
        return cloudacl.AclProbes(self.conn, self.lab, self.workdir, sides, spec, say).run(rules)

    def qos(self, spec: QosSpec, root: Path, say: Callable[[str], None]) -> dict[str, Any]:
        """The catalog's QoS policies on the VNF's data ports (:mod:`nfvcat.lab.campaign.cloudqos`)."""
        assert self.endpoints is not None
        host = endpoints.real_host(self.state)
        return cloudqos.QosProbes(self.conn, self.lab, self.endpoints, [p.id for p in self.vnf_ports], self.state,
                                  host, root, spec, say).run()

    def unplug(self) -> str:
        host = endpoints.real_host(self.state)
        n = len(self.plugged)
        for ep in reversed(self.plugged):
            endpoints.unplug(self.conn, self.state, host, ep)
        self.plugged.clear()
        self.lab.close()
        return f"{n} endpoint(s) unplugged, their Neutron ports deleted"


def _net(ep: endpoints.Endpoint) -> str:
    import ipaddress

    return str(ipaddress.ip_interface(f"{ep.ip}/{ep.prefixlen}").network)
