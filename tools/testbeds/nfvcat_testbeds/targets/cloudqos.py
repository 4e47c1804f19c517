"""Neutron QoS through the cloud, as the Open vSwitch agent applies it on the VNF's data ports: the catalog's
policies (net-provider's, read from the catalog: :mod:`nfvcat.catalog.qos`) found on the cloud by name with the
same rules, attached to the VNF's ports by a port update (what Heat does for the template's ``data_qos_policy``),
then taken off again:

- bandwidth limit: TCP throughput between the endpoints through the chain without the policy and with it, arms
  alternated, medians; the limited figure is compared with max_kbps on the wire (TCP goodput x (MSS + 66) / MSS:
  Ethernet, IP, TCP and timestamp headers), within the tolerance; the unlimited one must be well above the limit
  (1.5 x), or the limit proves nothing. Where the catalog's rule cannot be measured as it is (``direction`` or
  ``max_kbps`` other than the catalog's), a test policy with the catalog's other values is made and removed;
- DSCP marking: the TOS byte of UDP datagrams the receiving endpoint's socket gets (IP_RECVTOS) with the marking
  policy on the VNF's ports, and without it.

What Open vSwitch holds for each (the Interface's ingress policing, the Port's QoS and queue, the DSCP flows of
br-int) is read from the real host's switch and reported with the figures.
"""

from __future__ import annotations

import os
import statistics
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nfvcat.campaign.results import FAIL, PASS
from nfvcat.catalog import qos as catalog_qos
from nfvcat.catalog.tdf import QosSpec
from nfvcat.core.waiting import until
from nfvcat_testbeds.devcloud import computes
from nfvcat_testbeds.devcloud.state import State
from nfvcat_testbeds.lab import sockets
from nfvcat_testbeds.lab.netns import Lab
from nfvcat_testbeds.targets import traffic as tr

HEADERS = 14 + 20 + 20 + 12  # Ethernet, IPv4, TCP, timestamps: a full segment's frame is MSS + HEADERS
WELL_ABOVE = 1.5
DSCP_PORT = 5003


def wire_mbps(goodput_mbps: float, mss: int) -> float:
    return goodput_mbps * (mss + HEADERS) / mss if mss > 0 else goodput_mbps


def bandwidth_verdict(limit_kbps: int, tolerance: float, unlimited: list[float], limited: list[float]
                      ) -> dict[str, Any]:
    """Medians of wire rates (Mbit/s) without and with the limit: with it within ``tolerance`` of the limit,
    without it well above (else nothing is shown: inconclusive, which fails)."""
    limit = limit_kbps / 1000
    free, held = float(statistics.median(unlimited)), float(statistics.median(limited))
    why = []
    if free < WELL_ABOVE * limit:
        why.append(f"inconclusive: without the policy only {free:.1f} Mbit/s, not {WELL_ABOVE} x the limit "
                   f"{limit:.1f}: lower max_kbps")
    if abs(held - limit) > tolerance * limit:
        why.append(f"with the policy {held:.1f} Mbit/s, not within {tolerance:.0%} of {limit:.1f}")
    return {"limit_mbps": limit, "unlimited_median_mbps": round(free, 2), "limited_median_mbps": round(held, 2),
            "ratio_to_limit": round(held / limit, 4), "status": FAIL if why else PASS,
            "detail": "; ".join(why) or f"{held:.1f} Mbit/s on the wire with the limit {limit:.1f} "
                                        f"({held / limit:.1%}), {free:.1f} without"}


def dscp_verdict(mark: int, with_policy: list[int], without: list[int]) -> dict[str, Any]:
    seen_with = sorted({t >> 2 for t in with_policy})
    seen_without = sorted({t >> 2 for t in without})
    ok = bool(with_policy) and seen_with == [mark] and bool(without) and seen_without == [0]
    return {"dscp_mark": mark, "with_policy": seen_with, "without": seen_without,
            "received": {"with_policy": len(with_policy), "without": len(without)}, "status": PASS if ok else FAIL,
            "detail": f"DSCP {seen_with} received with the policy ({len(with_policy)} datagrams), {seen_without} "
                      f"without ({len(without)})"}


def cloud_policy(conn: Any, name: str) -> Any:
    found = list(conn.network.qos_policies(name=name))
    if len(found) != 1:
        raise RuntimeError(f"{len(found)} QoS policies named {name} on the cloud (nfvcat onboard makes the "
                           "catalog's)")
    return found[0]


def same_rule(cloud: Any, catalog: dict[str, Any]) -> bool:
    """Does a rule of the cloud's policy carry the catalog rule's values (Neutron's defaults for the rest)?"""
    want = {k: v for k, v in catalog.items() if k != "type"}
    for rule in cloud.rules or []:
        if rule.get("type") == catalog["type"] and all(rule.get(k) == v for k, v in want.items()):
            return True
    return False


@dataclass
class QosProbes:
    conn: Any
    lab: Lab
    ep: tr.Endpoints
    vnf_ports: list[str]  # the VNF's data ports (Neutron ids)
    state: State
    host: computes.Compute
    root: Path
    spec: QosSpec
    say: Callable[[str], None] = lambda s: None
    retransmits: list[int] = field(default_factory=list)  # per TCP run, in order

    def ovs(self, *argv: str) -> str:
        res = subprocess.run(list(argv), capture_output=True, text=True, timeout=60, check=False,
                             env={**os.environ, **computes.ovs_env(self.state, self.host)})
        return res.stdout

    def attach(self, policy: str | None, settled: Callable[[], bool], what: str) -> None:
        for port in self.vnf_ports:
            self.conn.network.update_port(port, qos_policy_id=policy)
        until(settled, bool, timeout=60, what=f"QoS on the VNF's ports: {what}", most=1.0)

    def taps(self) -> list[str]:
        return [f"tap{p[:11]}" for p in self.vnf_ports]  # os-vif's name of a Neutron port's tap

    def policing(self) -> list[tuple[int, int]]:
        out = []
        for tap in self.taps():
            rate = self.ovs("ovs-vsctl", "--timeout=10", "get", "Interface", tap, "ingress_policing_rate").strip()
            burst = self.ovs("ovs-vsctl", "--timeout=10", "get", "Interface", tap, "ingress_policing_burst").strip()
            out.append((int(rate or 0), int(burst or 0)))
        return out

    def queue_rates(self) -> list[str]:
        """max-rate of the queue of each tap's QoS row (Neutron's ingress limit: linux-htb), "" for none."""
        out = []
        for tap in self.taps():
            qos = self.ovs("ovs-vsctl", "--timeout=10", "get", "Port", tap, "qos").strip()
            if not qos or qos == "[]":
                out.append("")
                continue
            queues = self.ovs("ovs-vsctl", "--timeout=10", "get", "QoS", qos, "queues").strip()
            queue = queues.strip("{}").split("=")[-1].strip() if "=" in queues else ""
            rate = self.ovs("ovs-vsctl", "--timeout=10", "get", "Queue", queue, "other_config:max-rate").strip()
            out.append(rate.strip('"') if queue else "")
        return out

    def dscp_flows(self, mark: int) -> int:
        flows = self.ovs("ovs-ofctl", "dump-flows", self.host.integration_bridge)
        return sum(1 for line in flows.splitlines() if f"mod_nw_tos:{mark << 2}" in line)

    def tcp(self) -> tuple[float, int]:
        """TCP goodput (Mbit/s) from the left endpoint to the right one, and the MSS."""
        stream = tr.tcp_stream(self.lab, self.ep, self.spec.tcp_seconds, self.spec.omit_seconds, self.spec.streams)
        if stream.mbps <= 0:
            raise RuntimeError(f"iperf3 through the chain gave no figure: {stream.error}")
        self.retransmits.append(stream.retransmits)
        return stream.mbps, stream.mss

    def run(self) -> dict[str, Any]:
        where = f"QoS of {self.root / 'templates/heat' / catalog_qos.NETWORK_ENTRY}"
        policies = catalog_qos.policies(self.root)
        for key in (self.spec.bandwidth_limit, self.spec.dscp_marking):
            if key not in policies:
                raise RuntimeError(f"{where}: no policy output {key} (has {', '.join(sorted(policies))})")
        out: dict[str, Any] = {}
        try:
            out["bandwidth_limit"] = self.bandwidth(policies[self.spec.bandwidth_limit], where)
            out["dscp_marking"] = self.dscp(policies[self.spec.dscp_marking], where)
        finally:
            for port in self.vnf_ports:
                self.conn.network.update_port(port, qos_policy_id=None)
        out["status"] = PASS if all(v["status"] == PASS for v in out.values()) else FAIL
        return out

    def bandwidth(self, policy: dict[str, Any], where: str) -> dict[str, Any]:
        rule = catalog_qos.rule(policy, "bandwidth_limit", where)
        cloud = cloud_policy(self.conn, str(policy["name"]))
        on_cloud = same_rule(cloud, rule)
        direction = self.spec.direction or str(rule.get("direction", "egress"))
        limit = int(self.spec.max_kbps or rule["max_kbps"])
        burst = int(rule.get("max_burst_kbps", 0))
        test_policy = None
        if (direction, limit) != (str(rule.get("direction", "egress")), int(rule["max_kbps"])):
            test_policy = self.conn.network.create_qos_policy(name=f"nfvcat-test-{policy['name']}",
                                                              description="nfvcat test: the catalog's rule, "
                                                              f"direction {direction}, max_kbps {limit}")
            self.conn.network.create_qos_bandwidth_limit_rule(test_policy.id, max_kbps=limit, max_burst_kbps=burst,
                                                              direction=direction)
        policy_id = test_policy.id if test_policy is not None else cloud.id

        def applied() -> bool:
            if direction == "egress":
                return all(rate == limit for rate, _ in self.policing())
            return all(r == str(limit * 1000) for r in self.queue_rates())

        def cleared() -> bool:
            return all(rate == 0 for rate, _ in self.policing()) and not any(self.queue_rates())

        free: list[float] = []
        held: list[float] = []
        goodput: dict[str, list[float]] = {"unlimited": [], "limited": []}
        ovs_seen = ""
        try:
            for _ in range(self.spec.samples):  # arms alternated
                self.attach(None, cleared, "no policy")
                mbps, mss = self.tcp()
                goodput["unlimited"].append(round(mbps, 2))
                free.append(wire_mbps(mbps, mss))
                self.attach(policy_id, applied, f"bandwidth limit {limit} kbit/s {direction}")
                ovs_seen = (f"ingress_policing_rate/burst {self.policing()}" if direction == "egress" else
                            f"linux-htb queue max-rate {self.queue_rates()} bit/s")
                mbps, mss = self.tcp()
                goodput["limited"].append(round(mbps, 2))
                held.append(wire_mbps(mbps, mss))
                self.say(f"  QoS TCP: {goodput['unlimited'][-1]} Mbit/s without, {goodput['limited'][-1]} with "
                         f"{limit} kbit/s {direction} (goodput)")
        finally:
            self.attach(None, cleared, "no policy")
            if test_policy is not None:
                self.conn.network.delete_qos_policy(test_policy.id, ignore_missing=True)
        verdict = bandwidth_verdict(limit, self.spec.tolerance, free, held)
        return {"policy": policy["name"], "catalog_rule": rule, "on_cloud": on_cloud, "direction": direction,
                "max_kbps": limit, "max_burst_kbps": burst, "test_policy": test_policy is not None,
                "goodput_mbps": goodput, "streams": self.spec.streams,
                "retransmits": {"unlimited": self.retransmits[0::2], "limited": self.retransmits[1::2]},
                "wire_mbps": {"unlimited": [round(v, 2) for v in free],
                                                       "limited": [round(v, 2) for v in held]},
                "ovs": ovs_seen, **verdict,
                **({"status": FAIL, "detail": f"the cloud's {policy['name']} does not carry the catalog's rule "
                    f"{rule}"} if not on_cloud else {})}

    def dscp(self, policy: dict[str, Any], where: str) -> dict[str, Any]:
        rule = catalog_qos.rule(policy, "dscp_marking", where)
        mark = int(rule["dscp_mark"])
        cloud = cloud_policy(self.conn, str(policy["name"]))
        ep = self.ep
        self.attach(cloud.id, lambda: self.dscp_flows(mark) >= len(self.vnf_ports), f"DSCP {mark} flows")
        flows = self.dscp_flows(mark)
        with_policy = sockets.tos_seen(self.lab, ep.dst_ns, ep.dst_ip, ep.src_ns, DSCP_PORT)
        self.attach(None, lambda: self.dscp_flows(mark) == 0, "DSCP flows removed")
        without = sockets.tos_seen(self.lab, ep.dst_ns, ep.dst_ip, ep.src_ns, DSCP_PORT)
        verdict = dscp_verdict(mark, with_policy, without)
        if not same_rule(cloud, rule):
            verdict.update(status=FAIL, detail=f"the cloud's {policy['name']} does not carry the catalog's rule {rule}")
        self.say(f"  QoS DSCP: {verdict['detail']}")
        return {"policy": policy["name"], "catalog_rule": rule, "ovs": f"{flows} flow(s) mod_nw_tos:{mark << 2} on "
                f"br-int for the VNF's ports", **verdict}
