"""The closed loop (``nfvcat watch``): a deployed chain's health probes, as its catalog entry declares them
(entry.yaml ``health``), run on an interval; a VNF that fails them is healed through its lifecycle manager
(Heat: its server marked unhealthy and the stack updated; Tacker: heal of its VNFC), then ``check`` runs on the
new placement. Every event is logged with its time.

The probes (``health.probes``, each naming the ``vnf`` it judges):

- ``ready``: the VNF's server is ACTIVE and its console log holds the entry's ready line;
- ``chain``: the traffic flow through the chain (``nfvcat.cloud.flows``) delivered every packet of the last
  ``window`` seconds (a VNF that stopped forwarding, or whose guest died, fails it at once);
- ``acl``: the flow's ACL probe (traffic the VNF's ACL denies does not pass); a flow that offers none makes it
  "unknown", which never heals and never passes.

No heal storm: a VNF is healed after ``failures`` failed rounds in a row; a healed VNF is given ``grace`` seconds
to come up (its new server boots: its failing probes are not counted until every probe that runs passes, or the
grace is over); after a heal it is not healed again for ``backoff`` seconds, doubled at each heal that follows
another within the hour (up to an hour); and never more than ``max_heals_per_hour`` times in any hour. A heal
refused by those rules is logged (``held``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from nfvcat.core.errors import EXIT_USAGE, UserError

PASS, FAIL, UNKNOWN = "pass", "FAIL", "unknown"
KINDS = ("ready", "chain", "acl")


@dataclass(frozen=True)
class ProbeSpec:
    name: str
    kind: str
    vnf: str
    window: float = 3.0  # chain: seconds of packets that must all have arrived


@dataclass(frozen=True)
class Health:
    interval: float
    probes: tuple[ProbeSpec, ...]
    failures: int = 2
    backoff: float = 60.0
    max_heals_per_hour: int = 3
    grace: float = 600.0  # s a healed VNF is given to come up before its failing probes count again


def health(meta: dict[str, Any], where: str) -> Health:
    """The entry's ``health`` (entry.yaml); an error naming ``where`` when there is none or it is malformed."""
    h = meta.get("health")
    if not isinstance(h, dict) or not isinstance(h.get("probes"), list) or not h["probes"]:
        raise UserError(f"{where}: declares no health probes (entry.yaml health.probes)", EXIT_USAGE)
    probes = []
    for i, p in enumerate(h["probes"]):
        if not isinstance(p, dict) or p.get("kind") not in KINDS or not isinstance(p.get("vnf"), str):
            raise UserError(f"{where}: health.probes[{i}]: a probe needs a kind ({', '.join(KINDS)}) and the vnf "
                            "it judges", EXIT_USAGE)
        probes.append(ProbeSpec(str(p.get("name") or f"{p['kind']}-{p['vnf']}"), p["kind"], p["vnf"],
                                float(p.get("window", 3.0))))
    return Health(float(h.get("interval", 10)), tuple(probes), int(h.get("failures", 2)),
                  float(h.get("backoff", 60)), int(h.get("max_heals_per_hour", 3)), float(h.get("grace", 600)))


@dataclass
class Event:
    t: float
    kind: str  # healthy (the first passing round) | detected | heal | healed | heal-failed | held | check |
    # coming-up (a healed VNF's failing probes waited out) | recovered
    vnf: str = ""
    detail: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"t": round(self.t, 3), "event": self.kind, "vnf": self.vnf, "detail": self.detail, **self.data}

    def line(self, fmt: str) -> str:
        if fmt == "json":
            return json.dumps(self.as_dict())
        stamp = time.strftime("%H:%M:%S", time.localtime(self.t)) + f".{int(self.t * 1000) % 1000:03d}"
        return f"{stamp} {self.kind:11} {self.vnf} {self.detail}".rstrip()


Probe = Callable[[ProbeSpec], tuple[str, str]]  # (status, detail)


@dataclass
class VnfState:
    failing_rounds: int = 0
    last_pass: float | None = None
    detected: float | None = None
    heals: list[float] = field(default_factory=list)  # when each heal started
    backoff: float = 0.0
    not_before: float = 0.0
    healed_at: float | None = None
    coming_up: bool = False  # said that the healed VNF is given its grace


class Watcher:
    """One round at a time (``round``): every probe, then per VNF: detect, heal (within the rules), check."""

    def __init__(self, h: Health, probe: Probe, heal: Callable[[str], dict[str, Any]],
                 check: Callable[[str], tuple[bool, str]], log: Callable[[Event], None],
                 clock: Callable[[], float] = time.time,
                 on_results: Callable[[list[tuple[ProbeSpec, str, str]]], None] | None = None) -> None:
        self.h, self.probe, self.heal, self.check, self.log, self.clock = h, probe, heal, check, log, clock
        self.on_results = on_results
        self.vnfs: dict[str, VnfState] = {p.vnf: VnfState() for p in h.probes}
        self.figures: list[dict[str, Any]] = []  # per repair: time to detect (from the last pass), to repair

    def round(self) -> None:
        results: dict[str, list[tuple[ProbeSpec, str, str]]] = {v: [] for v in self.vnfs}
        for spec in self.h.probes:
            status, detail = self.probe(spec)
            results[spec.vnf].append((spec, status, detail))
        if self.on_results is not None:
            self.on_results([r for found in results.values() for r in found])
        now = self.clock()
        for vnf, found in results.items():
            st = self.vnfs[vnf]
            failed = [(s, d) for s, status, d in found if status == FAIL]
            if not failed:
                # every probe that could run passed; one that cannot ("unknown") is said, never counted
                unknown = "; ".join(f"{s.name} unknown: {d}" for s, status, d in found if status != PASS)
                if any(status == PASS for _, status, _ in found):
                    if st.detected is not None and st.healed_at is not None:
                        rec = {"time_to_detect_s": round(st.detected - (st.last_pass or st.detected), 3),
                               "time_to_repair_s": round(now - st.detected, 3), "heals": len(st.heals)}
                        self.figures.append({"vnf": vnf, **rec})
                        self.log(Event(now, "recovered", vnf, "every probe that runs passes again"
                                       + (f" ({unknown})" if unknown else ""), rec))
                    if st.last_pass is None:
                        self.log(Event(now, "healthy", vnf, "every probe that runs passes"
                                       + (f" ({unknown})" if unknown else "")))
                    st.last_pass, st.detected, st.healed_at = now, None, None
                st.failing_rounds = 0
                continue
            why = "; ".join(f"{s.name}: {d}" for s, d in failed)
            if st.healed_at is not None and now - st.healed_at < self.h.grace:
                if not st.coming_up:
                    st.coming_up = True
                    self.log(Event(now, "coming-up", vnf, f"healed {now - st.healed_at:.0f} s ago; its probes count "
                                   f"again when they all pass or after {self.h.grace:g} s: {why}"))
                continue
            st.failing_rounds += 1
            if st.detected is None:
                st.detected = now
                self.log(Event(now, "detected", vnf, why, {"since_last_pass_s": None if st.last_pass is None
                                                             else round(now - st.last_pass, 3)}))
            if st.failing_rounds >= self.h.failures:
                self._heal(vnf, st, why)

    def _heal(self, vnf: str, st: VnfState, why: str) -> None:
        now = self.clock()
        hour = [t for t in st.heals if now - t < 3600]
        if now < st.not_before:
            self.log(Event(now, "held", vnf, f"backoff: no heal before {st.not_before - now:.0f} s from now"))
            return
        if len(hour) >= self.h.max_heals_per_hour:
            self.log(Event(now, "held", vnf, f"{len(hour)} heal(s) in the last hour: the cap "
                                             f"({self.h.max_heals_per_hour}) is reached"))
            return
        last = st.heals[-1] if st.heals else None
        st.heals.append(now)
        self.log(Event(now, "heal", vnf, why))
        try:
            done = self.heal(vnf)
        except UserError as exc:
            self.log(Event(self.clock(), "heal-failed", vnf, str(exc)))
            done = None
        # doubled while heals follow one another within the hour; from the start after a quiet hour
        st.backoff = self.h.backoff if last is None or now - last >= 3600 else min(3600.0, st.backoff * 2)
        st.not_before = self.clock() + st.backoff
        if done is None:
            return
        st.healed_at, st.coming_up = self.clock(), False
        self.log(Event(st.healed_at, "healed", vnf, f"server {done.get('server')} -> {done.get('new_server')}",
                       {"server": done.get("server"), "new_server": done.get("new_server")}))
        ok, detail = self.check(vnf)
        self.log(Event(self.clock(), "check", vnf, ("pass: " if ok else "FAIL: ") + detail, {"ok": ok}))
        st.failing_rounds = 0

    def run(self, rounds: int | None, sleep: Callable[[float], None] = time.sleep) -> None:
        """``rounds`` rounds (None: until interrupted), ``interval`` apart."""
        n = 0
        while rounds is None or n < rounds:
            start = self.clock()
            self.round()
            n += 1
            if rounds is None or n < rounds:
                sleep(max(0.0, self.h.interval - (self.clock() - start)))


class StackProbes:
    """The probes of a deployed stack: ``servers()`` maps each VNF to its server id (read each round: a heal
    changes it); ``flow`` is the running traffic flow (None: the chain and ACL probes are unknown)."""

    def __init__(self, conn: Any, servers: Callable[[], dict[str, str]], flow: Any,
                 clock: Callable[[], float] = time.time) -> None:
        self.conn, self.servers, self.flow, self.clock = conn, servers, flow, clock

    def __call__(self, spec: ProbeSpec) -> tuple[str, str]:
        if spec.kind == "ready":
            return self.ready(spec)
        if self.flow is None:
            return UNKNOWN, "no traffic flow (--traffic or --traffic-command)"
        if spec.kind == "chain":
            return self.chain(spec)
        acl = getattr(self.flow, "acl_probe", None)
        if acl is None:
            return UNKNOWN, f"the flow ({self.flow.describe}) offers no ACL probe"
        status, detail = acl()
        return str(status), str(detail)

    def ready(self, spec: ProbeSpec) -> tuple[str, str]:
        from nfvcat.cloud.readiness import console
        from nfvcat.day0.ready import ready_line

        sid = self.servers().get(spec.vnf)
        if sid is None:
            return FAIL, f"no server of {spec.vnf} in the stack"
        server = self.conn.compute.find_server(sid, ignore_missing=True)
        if server is None or server.status != "ACTIVE":
            return FAIL, f"server {sid} is {server.status if server else 'gone'}"
        text = console(self.conn, sid)
        if text is None:
            return UNKNOWN, "the hypervisor serves no console log"
        line = ready_line(text)
        return (PASS, line) if line else (FAIL, f"server {sid}: no ready line on its console")

    def chain(self, spec: ProbeSpec) -> tuple[str, str]:
        from nfvcat.cloud.outage import at_full_rate

        rec = self.flow.record()
        now = self.clock()
        if rec.start is None or now - rec.start < spec.window + 1.0:  # not a whole window sent yet
            return UNKNOWN, f"the flow has not run {spec.window:g} s yet"
        if at_full_rate(rec, now - spec.window - 1.0, spec.window):
            return PASS, f"every packet of the last {spec.window:g} s arrived"
        newest = max(rec.arrivals.values(), default=None)
        return FAIL, ("no packet through the chain yet" if newest is None else
                      f"packets lost in the last {spec.window:g} s; the newest arrived {now - newest:.1f} s ago")


# ---- the same probes for the tools operators run ------------------------------------------------------------

METRIC = "nfvcat_probe_success"  # what `nfvcat watch --metrics FILE` writes: 1 pass, 0 FAIL (unknown: no sample)


def metrics_text(stack: str, results: list[tuple[ProbeSpec, str, str]]) -> str:
    """The probes' results in Prometheus' text exposition format (for node-exporter's textfile collector)."""
    out = [f"# HELP {METRIC} An nfvcat health probe of a deployed chain passed (1) or failed (0).",
           f"# TYPE {METRIC} gauge"]
    for spec, status, _ in results:
        if status in (PASS, FAIL):
            out.append(f'{METRIC}{{stack="{stack}",vnf="{spec.vnf}",probe="{spec.name}",kind="{spec.kind}"}} '
                       f"{1 if status == PASS else 0}")
    return "\n".join(out) + "\n"


def alert_rules(h: Health, stack: str, labels: Callable[[ProbeSpec], dict[str, str]]) -> dict[str, Any]:
    """A Prometheus rule file: one alert per probe, firing once the probe failed for as long as the watcher
    waits before a heal (``failures`` rounds of ``interval``)."""
    rules = []
    for p in h.probes:
        rules.append({
            "alert": f"NfvcatProbeFailed-{stack}-{p.name}",
            "expr": f'{METRIC}{{stack="{stack}",vnf="{p.vnf}",probe="{p.name}"}} == 0',
            "for": f"{int(h.failures * h.interval)}s",
            "labels": {"severity": "critical", "nfvcat_stack": stack, "vnf": p.vnf, **labels(p)},
            "annotations": {"summary": f"{stack}: {p.vnf} fails its {p.kind} probe {p.name}",
                            "description": f"nfvcat's {p.kind} probe of {p.vnf} in {stack} failed for "
                                           f"{int(h.failures * h.interval)} s; heal it (nfvcat heal) and check"}})
    return {"groups": [{"name": f"nfvcat-{stack}", "interval": f"{int(h.interval)}s", "rules": rules}]}


def export(h: Health, fmt: str, target: dict[str, Any]) -> str:
    """``prometheus``: the alert rules (the metric from ``nfvcat watch --metrics``). ``tacker``: Tacker's
    Prometheus Plugin auto-heal configuration: the same rules labelled as Tacker reads an alert
    (receiver_type tacker, function_type auto_heal, vnf_instance_id, vnfc_info_id), Alertmanager's route and
    receiver to Tacker's /alert/auto_healing, and tacker.conf's [prometheus_plugin] settings."""
    import yaml

    stack = str(target["stack"])
    if fmt == "prometheus":
        return str(yaml.safe_dump(alert_rules(h, stack, lambda p: {}), sort_keys=False))
    if target.get("vnf_instance") is None:
        raise UserError(f"--export tacker: {stack} is no Tacker VNF instance (--via tacker)", EXIT_USAGE)
    vnfcs: dict[str, str] = target["vnfc_ids"]()  # VDU -> vnfcInfo id
    missing = sorted({p.vnf for p in h.probes} - set(vnfcs))
    if missing:
        raise UserError(f"--export tacker: no VNFC of {', '.join(missing)} in {target['vnf_instance']} "
                        f"(VDUs: {', '.join(sorted(vnfcs))})", EXIT_USAGE)
    rules = alert_rules(h, stack, lambda p: {"receiver_type": "tacker", "function_type": "auto_heal",
                                             "vnf_instance_id": str(target["vnf_instance"]),
                                             "vnfc_info_id": vnfcs[p.vnf]})
    doc = {"prometheus_rules": rules,
           "alertmanager": {
               "route": {"routes": [{"matchers": ["function_type = auto_heal"], "receiver": "tacker-auto-heal"}]},
               "receivers": [{"name": "tacker-auto-heal",
                              "webhook_configs": [{"url": "http://TACKER_HOST:9890/alert/auto_healing"}]}]},
           "tacker_conf": {"prometheus_plugin": {"auto_healing": True,
                                                 "timer_interval": int(max(h.interval, h.backoff))}},
           "instantiate": {"vnfConfigurableProperties": {"isAutohealEnabled": True}}}
    return str(yaml.safe_dump(doc, sort_keys=False))
