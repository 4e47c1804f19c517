"""The cloud's own data plane as a campaign target (TDF ``general.dataplane: cloud``): two test endpoints, Neutron
ports on the chain's left and right networks realised as namespaces on the dev cloud's real host
(:mod:`nfvcat_testbeds.devcloud.endpoints`), routed through the VNF Heat deployed. Ping and TCP (iperf3) through it,
then the same RFC 2544 search as in the lab (:func:`nfvcat_testbeds.targets.lab.measure`).

Under TCG the figures are small: they prove the path (OVS, the openvswitch firewall, the guest's virtio and
forwarding), not the speed.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nfvcat import catalog
from nfvcat.campaign import controlplane as cp
from nfvcat.campaign import targets
from nfvcat.campaign.results import PASS as STEP_PASS  # a campaign step's (the ACL and QoS classes' too)
from nfvcat.catalog.tdf import AclSpec, QosSpec
from nfvcat.cloud.verdicts import FAIL, PASS, Verdict
from nfvcat_testbeds.devcloud import endpoints
from nfvcat_testbeds.devcloud.state import State, default_dir
from nfvcat_testbeds.lab import sockets
from nfvcat_testbeds.lab.netns import Lab
from nfvcat_testbeds.targets import cloudacl, cloudqos
from nfvcat_testbeds.targets import traffic as tr
from nfvcat_testbeds.targets.lab import measure_step


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
        """The ACL probes (:mod:`nfvcat_testbeds.targets.cloudacl`) with the rules Heat deployed, both ways."""
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
        """The catalog's QoS policies on the VNF's data ports (:mod:`nfvcat_testbeds.targets.cloudqos`)."""
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


class CloudSteps:
    """The ``cloud`` campaign target (entry point ``nfvcat.campaign_targets``): the data plane through the chain
    the dev cloud deployed (TDF ``general.dataplane: cloud``): endpoints, ping and TCP, the RFC 2544 search at a
    constant rate, the ACL probes and the QoS policies, then the endpoints unplugged."""

    def __init__(self, ctx: targets.Context) -> None:
        assert ctx.cloud is not None
        self.ctx = ctx
        self.workdir = Path(tempfile.mkdtemp(prefix=f"nfvcat-test-{ctx.test.name}-"))
        self.dp = CloudDataplane(None, ctx.cloud.stack_name, Lab(tag=f"{os.getpid()}-c{ctx.index}"), self.workdir)
        ctx.record.dataplane = "cloud"
        dataplane = ctx.test.dataplane
        self.plans = [
            targets.Plan("endpoints", f"cloud: test endpoints on {ctx.test.chain}'s left and right networks",
                         self.plug),
            targets.Plan("cloud-check", "cloud: ping and TCP through the deployed chain", self.check),
            # frames at a constant rate: the guest's rate limits and queues see what RFC 2544 means
            targets.Plan("dataplane", "data plane through the cloud: RFC 2544 throughput and latency",
                         lambda: measure_step(ctx, self.dp.lab, self.dp.endpoints, self.workdir, pacing="gap"))]
        if dataplane is not None and dataplane.acl is not None:
            self.plans.append(targets.Plan("acl", "cloud: the VNF's ACL as deployed, probed class by class", self.acl))
        if dataplane is not None and dataplane.qos is not None:
            self.plans.append(targets.Plan("qos", "cloud: the catalog's QoS policies on the VNF's ports", self.qos))
        self.plans.append(targets.Plan("unplug", "cloud: unplug the test endpoints", self.unplug,
                                       cleanup_of="endpoints"))

    def plug(self) -> str:
        cloud = self.ctx.cloud
        assert cloud is not None
        self.dp.conn = cloud.conn or cloud.connect()
        return self.dp.plug()

    def check(self) -> str:
        rows = cp.verdict_rows(self.dp.check(), "cloud check")
        self.ctx.record.placement += rows
        self.ctx.record.details.setdefault("figures", {})["tcp_mbps"] = round(self.dp.tcp_mbps, 3)
        return cp.judge_checks(rows, None)

    def acl(self) -> str:
        dataplane = self.ctx.test.dataplane
        assert dataplane is not None and dataplane.acl is not None
        found = self.dp.acl(dataplane.acl, self.ctx.say)
        self.ctx.record.details["acl"] = found
        summary = ", ".join(f"{k} {v['status']} ({v['passed']}/{v['probed']} probed"
                            + (f", {v['not_observable']} not observable" if v["not_observable"] else "") + ")"
                            for k, v in found["classes"].items())
        if any(v["status"] != STEP_PASS for v in found["classes"].values()):
            raise cp.StepFailed(f"ACL probes: {summary}")
        return f"{found['rules']} rules: {summary}"

    def qos(self) -> str:
        dataplane = self.ctx.test.dataplane
        assert dataplane is not None and dataplane.qos is not None
        found = self.dp.qos(dataplane.qos, catalog.require_root(), self.ctx.say)
        self.ctx.record.details["qos"] = found
        figures = self.ctx.record.details.setdefault("figures", {})
        bw, dscp = found["bandwidth_limit"], found["dscp_marking"]
        figures.update(qos_limit_mbps=bw["limit_mbps"], qos_limited_mbps=bw["limited_median_mbps"],
                       qos_unlimited_mbps=bw["unlimited_median_mbps"], dscp_with_policy=dscp["with_policy"],
                       dscp_without=dscp["without"])
        summary = f"bandwidth limit: {bw['status']}: {bw['detail']}; DSCP: {dscp['status']}: {dscp['detail']}"
        if found["status"] != STEP_PASS:
            raise cp.StepFailed(summary)
        return summary

    def unplug(self) -> str:
        try:
            return self.dp.unplug()
        finally:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def close(self) -> None:
        if not self.ctx.keep:
            if self.dp.plugged:
                self.dp.unplug()
            self.dp.lab.close()
            shutil.rmtree(self.workdir, ignore_errors=True)
