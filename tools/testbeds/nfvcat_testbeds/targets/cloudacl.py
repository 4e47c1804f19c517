"""The vRouter's ACL probed through the cloud: its rules as Heat deployed them (the VNF stack's acl_left_l2,
acl_right_l2 and acl_forward), each proven by traffic between the test endpoints, one class of rule at a time
(:mod:`nfvcat_testbeds.lab.aclprobe` says which traffic proves which rule):

- allowed: UDP to a port no rule names, and a TCP connect, pass both ways;
- dropped: traffic a rule matches never arrives, while a control that differs only in the matched field does
  (another port; another spoofed source MAC or source address). Neutron's port security drops spoofed MACs and
  addresses before the VM: the sending endpoint's port is given them as ``allowed_address_pairs``, the
  OpenStack way, and the control proves port security lets them through;
- rate-limited (``ip protocol icmp limit rate over N/second``): ICMP echo requests at a constant rate under the
  limit all pass; well over it, what passes is bounded by the limit (N per second plus the burst), while UDP
  at the same rate, which no rule limits, passes more than that bound (else the path's own loss, not the rule,
  could be what bounds ICMP: the verdict says so and fails).

Rules no traffic from an endpoint can prove through the cloud (a frame to a reserved MAC or with a VLAN tag,
multicast) are listed with why; the guest's own counters are not reachable from the cloud's API.
"""

from __future__ import annotations

import ipaddress
import itertools
import json
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nfvcat.campaign.results import FAIL, PASS
from nfvcat.catalog.tdf import AclSpec
from nfvcat.core.waiting import TimedOut, until
from nfvcat_testbeds.lab import aclprobe, frames, sockets
from nfvcat_testbeds.lab.netns import Lab
from nfvcat_testbeds.targets import traffic as tr

NOT_OBSERVABLE = "NOT OBSERVABLE"
ALLOWED = "allowed"
N = 5  # datagrams or frames per probe
PORTS = {"udp": (9999, 161), "tcp": (2323, 23)}  # (allowed, the seed rules' dropped) listened on by each endpoint
CONTROL_MAC = "02:00:00:0b:ad:{:02x}"  # spoofed source MACs for the controls, one per probe (0x70 + its number)
CONTROL_SOURCES = ("203.0.113.0/24", "100.64.0.0/24", "198.18.0.0/24")
UNOBSERVABLE = {
    "ether daddr": "a frame to another MAC than the vRouter's is not routed by it, rule or not (and Open vSwitch does "
                   "not forward IEEE 802.1D reserved addresses): no endpoint can tell the rule's drop",
    "vlan id": "the endpoint's port is an access port of the network's VLAN (Neutron's OVS agent): a frame with "
               "another tag never reaches the vRouter, rule or not",
    "multicast": "multicast is not routed without a multicast routing daemon: no packet reaches the forward hook, "
                 "rule or not",
}
ACL_PARAMETERS = ("acl_left_l2", "acl_right_l2", "acl_forward")


def deployed_rules(conn: Any, stack: str) -> dict[str, list[str]]:
    """The ACL parameters of the VNF stack nested in ``stack`` as Heat holds them (its parameters), in order."""
    resources = conn.orchestration.get(f"/stacks/{stack}/resources").json()["resources"]
    for res in resources:
        if not str(res.get("resource_type", "")).endswith((".yaml", ".yml")) or not res.get("physical_resource_id"):
            continue
        params = conn.orchestration.get(f"/stacks/{res['physical_resource_id']}").json()["stack"]["parameters"]
        if all(p in params for p in ACL_PARAMETERS):
            return {p: _rules(params[p], f"{stack}/{res['resource_name']} {p}") for p in ACL_PARAMETERS}
    raise RuntimeError(f"stack {stack}: no nested VNF stack with the parameters {', '.join(ACL_PARAMETERS)}")


def _rules(value: Any, where: str) -> list[str]:
    rules = json.loads(value) if isinstance(value, str) else value
    if not isinstance(rules, list) or not all(isinstance(r, str) for r in rules):
        raise RuntimeError(f"{where}: not a list of rules: {value!r}")
    return rules


@dataclass
class Side:
    """The endpoint that sends into one of the vRouter's ports, and the far endpoint it sends to."""

    name: str  # left | right: the vRouter port the probes enter
    ns: str
    ifname: str
    ip: str
    mac: str
    port_id: str  # its Neutron port (allowed_address_pairs)
    router_mac: str
    target: str  # the far endpoint's address
    listener: sockets.Listener  # the far endpoint's
    sink: tr.Endpoints  # this endpoint -> the far one, for the rate trials


def control_source(prefixes: list[str], n: int = 0) -> str:
    """The ``n``-th source address outside every prefix the rules block (a documentation or shared range)."""
    nets = [ipaddress.ip_network(p, strict=False) for p in prefixes]
    for cand in CONTROL_SOURCES:
        net = ipaddress.ip_network(cand)
        if not any(net.overlaps(x) for x in nets):
            return str(net.network_address + 7 + n)
    raise RuntimeError(f"no control source outside {', '.join(prefixes)}")


def control_mac(blocked: list[str], n: int) -> str:
    """The ``n``-th control MAC, never one the rules block. Each spoofing probe has its own control: the port's
    allowed_address_pairs of the probe before permit that one's, so only a new control passing shows the new
    pairs applied (the agent applies port updates in order: the last one is then in place)."""
    taken = {b.lower() for b in blocked}
    free = [mac for mac in (CONTROL_MAC.format(k) for k in range(0x70, 0x100)) if mac not in taken]
    if n >= len(free):
        raise RuntimeError("no control MAC left")
    return free[n]


def spoofed_source(prefix: str) -> str:
    net = ipaddress.ip_network(prefix, strict=False)
    return str(net.network_address + min(7, max(0, net.num_addresses - 2)))


def rate_verdict(limit: float, burst: int, icmp: dict[str, list[tuple[int, int, float]]],
                 udp: dict[str, list[tuple[int, int, float]]]) -> dict[str, Any]:
    """The rate-limited class from trials (sent, received, seconds sending) of ICMP and UDP, ``under`` and
    ``over`` the limit: under, ICMP loses no more than UDP does (1 % slack); over, the median ICMP received is
    within the bucket's bound (limit x seconds + burst, plus 10 % for frames still queued when the clock
    stops) and the median UDP received at the same rate is above that bound (the path carries more than the
    limit: what bounds ICMP is the rule, not the path)."""
    def med(trials: list[tuple[int, int, float]], i: int) -> float:
        return float(statistics.median(t[i] for t in trials))

    out: dict[str, Any] = {}
    loss = {p: 1 - med(v["under"], 1) / med(v["under"], 0) if med(v["under"], 0) else 1.0
            for p, v in (("icmp", icmp), ("udp", udp))}
    under_ok = loss["icmp"] <= loss["udp"] + 0.01
    bound = (limit * med(icmp["over"], 2) + burst) * 1.1
    icmp_over, udp_over = med(icmp["over"], 1), med(udp["over"], 1)
    bounded, distinct = icmp_over <= bound, udp_over > bound
    out.update(limit_pps=limit, burst=burst, under_loss={k: round(v, 4) for k, v in loss.items()},
               over_received={"icmp": icmp_over, "udp": udp_over}, over_bound=round(bound, 1),
               over_seconds=round(med(icmp["over"], 2), 3))
    why = []
    if not under_ok:
        why.append(f"under the limit ICMP lost {loss['icmp']:.1%}, UDP {loss['udp']:.1%}: the rule dropped "
                   "traffic under its rate")
    if not bounded:
        why.append(f"over the limit {icmp_over:.0f} ICMP passed, above the bound {bound:.0f}")
    if not distinct:
        why.append(f"inconclusive: UDP at the same rate passed only {udp_over:.0f} (bound {bound:.0f}): the path's "
                   "own loss cannot be told from the rule")
    out["status"] = PASS if not why else FAIL
    out["detail"] = "; ".join(why) or (
        f"under: ICMP loss {loss['icmp']:.1%} (UDP {loss['udp']:.1%}); over: ICMP {icmp_over:.0f} received "
        f"<= bound {bound:.0f}, UDP {udp_over:.0f}")
    return out


def classes(probes: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per class of rule: PASS when every probe of it passed and at least one ran; rules not observable
    through the cloud are counted apart, never as passed."""
    out: dict[str, dict[str, Any]] = {}
    for klass in (ALLOWED, aclprobe.DROPPED, aclprobe.RATE_LIMITED, aclprobe.UNKNOWN):
        mine = [p for p in probes if p["class"] == klass]
        if not mine:
            continue
        ran = [p for p in mine if p["status"] != NOT_OBSERVABLE]
        failed = [p for p in ran if p["status"] != PASS]
        status = PASS if ran and not failed else FAIL
        out[klass] = {"status": status, "probed": len(ran), "passed": len(ran) - len(failed),
                      "not_observable": len(mine) - len(ran)}
    return out


@dataclass
class AclProbes:
    conn: Any
    lab: Lab
    workdir: Path
    sides: dict[str, Side]
    spec: AclSpec
    say: Callable[[str], None] = lambda s: None
    spoofs: int = 0  # spoofing probes so far: each has its own control
    blocked_macs: list[str] = field(default_factory=list)

    def run(self, rules: dict[str, list[str]]) -> dict[str, Any]:
        probes = aclprobe.probes(rules)
        out = []
        for each in self.sides.values():
            out += self.allowed(each)
        prefixes = [p.value for p in probes if p.kind == "ip saddr"]
        self.blocked_macs = [p.value for p in probes if p.kind == "ether saddr"]
        for p in probes:
            side = self.sides.get(p.side)
            row = {"class": p.klass, "rule_id": p.rule_id, "rule": p.rule, "side": p.side, "kind": p.kind}
            if side is None or not p.kind:
                row.update(status=FAIL, detail="no probe for this rule: extend nfvcat_testbeds.lab.aclprobe")
            elif p.kind in UNOBSERVABLE:
                row.update(status=NOT_OBSERVABLE, detail=UNOBSERVABLE[p.kind])
            elif p.kind == "icmp limit":
                row.update(self.rate_limited(side, p))
            else:
                row.update(self.dropped(side, p, prefixes))
            self.say(f"  ACL {row['class']:>12} {p.rule_id:<15} {row['status']}: {row['detail']}")
            out.append(row)
        return {"rules": sum(len(r) for r in rules.values()), "probes": out, "classes": classes(out)}

    def _udp(self, side: Side, port: int, tag: str) -> int:
        sockets.udp_send(self.lab, side.ns, side.target, port, tag, count=N)
        return side.listener.received(tag)

    def allowed(self, side: Side) -> list[dict[str, Any]]:
        udp, tcp = PORTS["udp"][0], PORTS["tcp"][0]
        got = self._udp(side, udp, f"allowed-{side.name}")
        conn = sockets.tcp_connect(self.lab, side.ns, side.target, tcp, f"allowed-tcp-{side.name}")
        rows = [{"class": ALLOWED, "side": side.name, "kind": "udp dport", "rule": f"UDP to {udp}",
                 "status": PASS if got == N else FAIL, "detail": f"{got}/{N} arrived"},
                {"class": ALLOWED, "side": side.name, "kind": "tcp dport", "rule": f"TCP connect to {tcp}",
                 "status": PASS if conn == "ok" else FAIL, "detail": conn}]
        for r in rows:
            self.say(f"  ACL {ALLOWED:>12} {side.name:<15} {r['status']}: {r['rule']}: {r['detail']}")
        return rows

    def dropped(self, side: Side, p: aclprobe.RuleProbe, prefixes: list[str]) -> dict[str, Any]:
        tag = f"{p.rule_id}-{side.name}".replace("#", "-")
        if p.kind in ("udp dport", "tcp dport"):
            proto = p.kind.split()[0]
            allowed = PORTS[proto][0]
            if proto == "udp":
                hit, ctl = self._udp(side, int(p.value), tag), self._udp(side, allowed, "ctl-" + tag)
                ok = hit == 0 and ctl == N
                return {"status": PASS if ok else FAIL, "probe": f"{N} datagrams to {p.value}, control to {allowed}",
                        "detail": f"{hit}/{N} arrived; control {ctl}/{N}"}
            hit_c = sockets.tcp_connect(self.lab, side.ns, side.target, int(p.value), tag)
            ctl_c = sockets.tcp_connect(self.lab, side.ns, side.target, allowed, "ctl-" + tag)
            ok = hit_c.startswith("error") and ctl_c == "ok"
            return {"status": PASS if ok else FAIL, "probe": f"TCP connect to {p.value} (listened on), control to "
                    f"{allowed}", "detail": f"{hit_c}; control {ctl_c}"}
        self.spoofs += 1
        if p.kind == "ether saddr":
            ctl_mac = control_mac(self.blocked_macs, self.spoofs)
            pairs = [{"ip_address": side.ip, "mac_address": p.value}, {"ip_address": side.ip,
                                                                       "mac_address": ctl_mac}]
            blocked, control = {"src_mac": p.value}, {"src_mac": ctl_mac}
            what = f"frames from {p.value}, control from {ctl_mac}"
        else:  # ip saddr
            src, ctl_src = spoofed_source(p.value), control_source(prefixes, self.spoofs)
            pairs = [{"ip_address": p.value}, {"ip_address": ctl_src}]
            blocked, control = {"src_ip": src}, {"src_ip": ctl_src}
            what = f"datagrams from {src}, control from {ctl_src}"
        return {**self.spoofed(side, tag, pairs, blocked, control),
                "probe": f"{what} (allowed_address_pairs on the endpoint's port)"}

    def spoofed(self, side: Side, tag: str, pairs: list[dict[str, str]], blocked: dict[str, str],
                control: dict[str, str]) -> dict[str, Any]:
        def frame(payload: str, **kw: str) -> bytes:
            args = {"dst_mac": side.router_mac, "src_mac": side.mac, "src_ip": side.ip, "dst_ip": side.target,
                    "dport": PORTS["udp"][0], "payload": payload.encode(), **kw}
            return frames.udp_frame(**args)  # type: ignore[arg-type]

        self.conn.network.update_port(side.port_id, allowed_address_pairs=pairs)
        try:
            sent = itertools.count(1)

            def control_passes() -> bool:  # once the OVS agent has applied the pairs
                payload = f"wait{next(sent)}-{tag}"
                sockets.send_frames(self.lab, side.ns, side.ifname, [frame(payload, **control)])
                return side.listener.received(payload, settle=0.5) > 0

            try:
                ready = until(control_passes, bool, timeout=30, what="allowed_address_pairs applied", first=0.1,
                              most=0.5)
            except TimedOut:
                ready = False
            sockets.send_frames(self.lab, side.ns, side.ifname, [frame(tag, **blocked)] * N)
            sockets.send_frames(self.lab, side.ns, side.ifname, [frame("ctl-" + tag, **control)] * N)
            hit, ctl = side.listener.received(tag), side.listener.received("ctl-" + tag)
        finally:
            self.conn.network.update_port(side.port_id, allowed_address_pairs=[])
        ok = ready and hit == 0 and ctl == N
        return {"status": PASS if ok else FAIL,
                "detail": f"{hit}/{N} arrived; control {ctl}/{N}" + ("" if ready else
                                                                    "; the control never passed port security")}

    def rate_limited(self, side: Side, p: aclprobe.RuleProbe) -> dict[str, Any]:
        limit = float(p.value)
        sink = tr.Sink(self.lab, side.sink)
        sink.install()
        gens = {proto: tr.Generator(self.lab, side.sink, self.workdir, proto=proto, pacing="gap")
                for proto in ("icmp", "udp")}
        trials: dict[str, dict[str, list[tuple[int, int, float]]]] = {"icmp": {}, "udp": {}}
        for label, rate in (("under", limit * self.spec.under), ("over", limit * self.spec.over)):
            for _ in range(self.spec.samples):
                for proto in ("icmp", "udp"):  # alternated
                    t = tr.trial(gens[proto], sink, "64", rate, self.spec.trial_seconds)
                    trials[proto].setdefault(label, []).append((t.sent, t.received, t.tx_seconds))
        verdict = rate_verdict(limit, p.burst, trials["icmp"], trials["udp"])
        return {**verdict, "probe": f"ICMP echo and UDP, 64 B at {limit * self.spec.under:.0f} and "
                f"{limit * self.spec.over:.0f} pps (constant rate), {self.spec.samples} trial(s) each, alternated",
                "trials": {k: {lbl: [list(t) for t in v] for lbl, v in d.items()} for k, d in trials.items()}}
