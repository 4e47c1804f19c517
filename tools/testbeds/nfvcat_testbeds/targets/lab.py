"""The namespace lab as a campaign target: the control-plane steps a cloud would do are replaced by the lab's
own (render the VNFs' day-0 data, build the namespace chain from it, check the chain), and the data plane is
measured on that chain.

Topologies: ``forwarder`` (namespaces that only forward: the baseline, no VNF day-0), ``vrouter`` (1..N
vRouters in series, each from its own rendered day-0), ``ipsec`` (vRouter, IPsec gateway pair, user-space ESP
where the kernel has none).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nfvcat.campaign import controlplane as cp
from nfvcat.campaign import rfc2544, targets
from nfvcat.campaign.results import PASS as STEP_PASS
from nfvcat.campaign.runner import evaluate
from nfvcat.catalog.tdf import Dataplane, LabSpec
from nfvcat.cloud.verdicts import FAIL, PASS, Verdict
from nfvcat.day0.ready import READY
from nfvcat.day0.render import Day0, render
from nfvcat_testbeds.lab import chain as chain_mod
from nfvcat_testbeds.lab.netns import Lab
from nfvcat_testbeds.targets import traffic as tr

TOOLS = ("ip", "nft", "trafgen", "ping", "unshare", "timeout")


def missing_tools(topology: str) -> list[str]:
    need = list(TOOLS) + (["swanctl", "/usr/lib/ipsec/charon"] if topology == "ipsec" else [])
    return [t for t in need if (shutil.which(t) if not t.startswith("/") else (t if Path(t).exists() else None))
            is None]


@dataclass
class LabRun:
    spec: LabSpec
    lab: Lab
    workdir: Path
    rendered: dict[str, Day0] = field(default_factory=dict)
    chain: chain_mod.Chain | None = None
    endpoints: tr.Endpoints | None = None

    def render(self) -> str:
        """Every VNF's day-0 data, as Heat would deliver it (the hooks' output)."""
        if self.spec.topology == "forwarder":
            return "no VNF day-0 (kernel forwarding baseline)"
        if self.spec.topology == "vrouter":
            for i in range(1, self.spec.length + 1):
                params = chain_mod.line_vrouter_parameters(i, self.spec.length, self.spec.vnf_parameters)
                self.rendered[f"r{i}"] = render("vnf-vrouter", parameters=params)
        else:
            self.rendered["vr"] = render("vnf-vrouter", parameters={**chain_mod.vrouter_parameters(),
                                                                    **self.spec.vnf_parameters})
            for side in ("a", "b"):
                self.rendered[f"g{side}"] = render("vnf-ipsec-gw",
                                                   parameters=chain_mod.gateway_parameters(side, udp_encap=True))
        sizes = ", ".join(f"{k} {len(v.user_data)} B" for k, v in self.rendered.items())
        return f"{len(self.rendered)} VNF(s) rendered: {sizes}"

    def build(self) -> str:
        if self.spec.topology in ("forwarder", "vrouter"):
            line = chain_mod.build_line(self.lab, self.workdir, self.spec.length, self.spec.vnf_parameters,
                                        plain=self.spec.topology == "forwarder", rendered=self.rendered or None)
            self.chain = line.chain
            self.endpoints = tr.Endpoints(line.chain.ns["src"], "eth0", line.source_ip, line.chain.ns["dst"], "eth0",
                                          line.sink_ip, line.first_hop_mac)
        else:
            chain = chain_mod.build(self.lab, self.workdir, vnf_parameters=self.spec.vnf_parameters)
            self.chain = chain
            mac = next(p.mac for p in chain.day0["vr"].ports if p.name == "left_port")
            self.endpoints = tr.Endpoints(chain.ns["sa"], "eth0", chain_mod.SITE_A_HOST, chain.ns["sb"], "eth0",
                                          chain_mod.SITE_B_HOST, mac)
        assert self.chain is not None
        timings = ", ".join(f"{k} {v:.1f} s" for k, v in self.chain.timings.items())
        return f"{len(self.chain.ns)} namespaces ({timings})"

    def check(self) -> list[Verdict]:
        """The lab's check of the chain: each VNF's day-0 service ran, its interfaces were found by MAC and
        addressed, the vRouter's kernel holds every ACL rule its day-0 rendered, the tunnel's SAs are
        installed, and the sink answers through the chain."""
        assert self.chain is not None and self.endpoints is not None
        chain, out = self.chain, []
        for who, vnf in chain.vnfs.items():
            day0 = chain.day0[who]
            marker = READY.get(day0.vnf)
            console = vnf.console.read_text(errors="replace")
            if marker:
                out.append(Verdict(who, day0.vnf, "day-0 ready", PASS if marker in console else FAIL,
                                   marker if marker in console else f"no {marker} on the console"))
            links = chain.sh(who, "ip -o addr show").stdout
            macs = chain.sh(who, "cat /sys/class/net/*/address").stdout.split()
            for port in day0.ports:
                if port.name == "mgmt_port":
                    continue  # no management network in the lab
                ok = port.mac in macs and (port.ip is None or f" {port.ip}/" in links)
                out.append(Verdict(who, port.name, "interface by MAC", PASS if ok else FAIL,
                                   f"{port.mac} {port.ip or 'dhcp'}"))
            if day0.vnf == "vnf-vrouter":
                # every rendered rule is in the kernel with its counter (map elements or a rule: CHAIN#INDEX)
                acl = vnf.root / "etc/vrouter/acl.rules"
                want = set(chain_mod.acl_rule_ids(chain_mod.rendered_acl_rules(acl))) if acl.is_file() else None
                counters = chain_mod.vnf_acl_counters(self.lab, chain.ns[who], vnf.root)
                have = {rid for rid, packets in counters.items() if packets >= 0}
                ok = want is not None and want == have == set(counters)
                out.append(Verdict(who, "acl", "ACL rules loaded", PASS if ok else FAIL,
                                   f"{len(have)} in the kernel with a counter, "
                                   f"{len(want) if want is not None else 'no'} rendered"))
            if day0.vnf == "vnf-ipsec-gw":
                sas = chain_mod.sas(chain, who)
                out.append(Verdict(who, "nfvcat-s2s", "IPsec SA installed",
                                   PASS if "state=INSTALLED" in sas else FAIL, "child SA INSTALLED" if
                                   "state=INSTALLED" in sas else sas.strip()[-200:] or "no SA"))
        ep = self.endpoints
        ping = self.lab.sh(ep.src_ns, f"ping -c 3 -i 0.2 -W 2 {ep.dst_ip}", check=False)
        ok = " 0% packet loss" in ping.stdout
        summary = next((line for line in ping.stdout.splitlines() if "packet loss" in line), ping.stderr.strip())
        out.append(Verdict("chain", f"{ep.src_ip} -> {ep.dst_ip}", "reachability", PASS if ok else FAIL, summary))
        return out

    def measure(self, dp: Dataplane, say: Callable[[str], None]) -> tuple[list[rfc2544.Search], tr.Latency | None]:
        assert self.endpoints is not None
        return measure(self.lab, self.endpoints, self.workdir, dp, say)


def measure(lab: Lab, ep: tr.Endpoints, workdir: Path, dp: Dataplane, say: Callable[[str], None],
            pacing: str = "rate") -> tuple[list[rfc2544.Search], tr.Latency | None]:
    """RFC 2544 throughput per frame size, then latency, between the endpoints (the lab's or the cloud's);
    ``pacing``: the generator's (:class:`nfvcat_testbeds.targets.traffic.Generator`)."""
    gen, sink = tr.Generator(lab, ep, workdir, pacing=pacing), tr.Sink(lab, ep)
    sink.install()
    tr.warm_up(lab, ep)
    first = dp.frames[0]  # a warm-up trial (caches, neighbour tables, page pools), not counted
    warm = tr.trial(gen, sink, first, dp.settings.max_rate_pps, min(0.5, dp.settings.trial_seconds))
    say(f"  warm-up: {warm.offered_pps:.0f} pps of {first} B offered, loss {warm.loss:.4%} (not counted)")
    searches = []
    for frame in dp.frames:
        def one(frame: str, rate: float, seconds: float) -> tr.Trial:
            t = tr.trial(gen, sink, frame, rate, seconds)
            say(f"  {frame:>5} B: {t.offered_pps:10.0f} pps offered, loss {t.loss:.4%}")
            return t

        s = rfc2544.search(frame, dp.settings, one)
        limited = (" (generator-limited: at least)" if s.generator_limited else
                   " (no loss at max_rate_pps: at least, how much more unknown)" if s.capped else "")
        say(f"  {frame:>5} B: throughput {s.throughput_pps:.0f} pps{limited}, {len(s.trials)} trial(s)")
        searches.append(s)
    latency = None
    if dp.latency is not None:
        spec = dp.latency
        base = next((s for s in searches if s.frame == spec.frame), None)
        if base is None:
            base = rfc2544.search(spec.frame, dp.settings, lambda f, r, sec: tr.trial(gen, sink, f, r, sec))
            searches.append(base)
        load = base.throughput_pps * spec.load_fraction
        latency = tr.latency(gen, lab, spec.frame, load, spec.probes, spec.interval_ms / 1000, workdir)
        d = latency.as_dict()
        say(f"  latency at {load:.0f} pps of {spec.frame} B: min/avg/max {d.get('min_us')}/{d.get('avg_us')}/"
            f"{d.get('max_us')} us, {latency.received}/{latency.probes} probes")
    return searches, latency


def figures(searches: list[rfc2544.Search], latency: tr.Latency | None) -> dict[str, Any]:
    """The figures expectations refer to, by metric and frame; ``at_least`` names those that are only lower
    bounds (a search capped by ``max_rate_pps``)."""
    out: dict[str, Any] = {}
    at_least: list[str] = []
    for s in searches:
        out[f"throughput_pps/{s.frame}"] = s.throughput_pps
        out[f"throughput_mbps/{s.frame}"] = s.throughput_pps * tr.mean_frame_bytes(s.frame) * 8 / 1e6
        if s.capped:
            at_least += [f"throughput_pps/{s.frame}", f"throughput_mbps/{s.frame}"]
    if at_least:
        out["at_least"] = at_least
    if latency is not None:
        d = latency.as_dict()
        if "avg_us" in d:
            out["latency_avg_us"] = d["avg_us"]
            out["latency_max_us"] = d["max_us"]
        out["latency_loss"] = 1 - latency.received / latency.probes if latency.probes else 1.0
    return out


def ready(topology: str) -> None:
    """The lab can run here: root and the tools the topology needs."""
    if os.geteuid() != 0:
        raise cp.CannotRun("the namespace lab needs root (network namespaces, nftables, trafgen)")
    missing = missing_tools(topology)
    if missing:
        raise cp.CannotRun(f"missing {', '.join(missing)}: install tools/debs/day0.txt")


def measure_step(ctx: targets.Context, lab: Lab, endpoints: Any, workdir: Path, pacing: str = "rate") -> str:
    """The data-plane step, in the lab or through the cloud: the search, the figures, the expectations."""
    record, test = ctx.record, ctx.test
    assert test.dataplane is not None and endpoints is not None
    searches, latency = measure(lab, endpoints, workdir, test.dataplane, ctx.say, pacing)
    record.details["pacing"] = pacing
    record.searches = [s.as_dict() for s in searches]
    record.latency = latency.as_dict() if latency else None
    record.details["figures"] = {**record.details.get("figures", {}), **figures(searches, latency)}
    record.expectations = [evaluate(e, record, record.details["figures"], ctx.done) for e in test.dataplane.expect]
    bad = [e for e in record.expectations if e["status"] != STEP_PASS]
    summary = ", ".join(f"{s.frame} B {s.throughput_pps:.0f} pps" for s in searches)
    if bad:
        b = bad[0]
        raise cp.StepFailed(f"{len(bad)} expectation(s) not met, first: {b['name']}: {b['figure']} "
                            f"(min {b['min']}, max {b['max']}){' ' + b.get('why', '') if 'why' in b else ''}")
    return summary + (f"; {len(record.expectations)} expectation(s) met" if record.expectations else "")


class LabSteps:
    """The ``lab`` campaign target (entry point ``nfvcat.campaign_targets``): render the day-0 data, build the
    namespace chain, check it, measure, tear down; in place of onboard, instantiate, check and terminate when
    the TDF's target is the lab."""

    def __init__(self, ctx: targets.Context) -> None:
        test = ctx.test
        assert test.lab is not None
        self.ctx = ctx
        self.lab = Lab(tag=f"{os.getpid()}-t{ctx.index}")
        self.workdir = Path(tempfile.mkdtemp(prefix=f"nfvcat-test-{test.name}-"))
        self.run = LabRun(test.lab, self.lab, self.workdir)
        ctx.record.dataplane = "netns" if test.dataplane else None
        instead = ctx.tdf.general.lab is not None
        what = "in place of onboard" if instead else "for the data plane"
        self.plans = [
            targets.Plan("render", f"lab: render day-0 ({what})", self.render),
            targets.Plan("build", f"lab: build the namespace chain{' (in place of instantiate)' if instead else ''}",
                         self.run.build),
            targets.Plan("lab-check", f"lab: check the chain{' (in place of check)' if instead else ''}",
                         lambda: self.check(instead))]
        if test.dataplane:
            self.plans.append(targets.Plan("dataplane", "data plane: RFC 2544 throughput and latency",
                                           lambda: measure_step(ctx, self.lab, self.run.endpoints, self.workdir)))
        self.plans.append(targets.Plan("teardown", f"lab: tear down{' (in place of terminate)' if instead else ''}",
                                       self.teardown, cleanup_of="build"))

    def render(self) -> str:
        ready(self.ctx.test.lab.topology if self.ctx.test.lab else "")
        return self.run.render()

    def check(self, instead: bool) -> str:
        rows = cp.verdict_rows(self.run.check(), "lab check")
        self.ctx.record.placement += rows
        return cp.judge_checks(rows, self.ctx.test.placement if instead else None)

    def teardown(self) -> str:
        if self.ctx.keep:
            return f"kept (--keep): namespaces {' '.join(self.lab.namespaces)}, files in {self.workdir}"
        n = len(self.lab.namespaces)
        self.lab.close()
        shutil.rmtree(self.workdir, ignore_errors=True)
        return f"{n} namespace(s) and their daemons removed"

    def close(self) -> None:
        if not self.ctx.keep:
            self.lab.close()
            shutil.rmtree(self.workdir, ignore_errors=True)
