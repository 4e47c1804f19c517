"""The closed loop (nfvcat.cloud.watch, `nfvcat watch`): probes on an interval, a failing VNF detected, healed
and checked, its times to detect and repair; no heal storm from a flapping probe (debounce, backoff, a cap per
hour); the probes exported as Prometheus alert rules and as Tacker's auto-heal configuration."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from nfvcat import cli
from nfvcat.cloud import watch
from nfvcat.cloud.outage import FlowRecord
from nfvcat.cloud.watch import FAIL, PASS, UNKNOWN, Health, ProbeSpec
from nfvcat.core.errors import UserError
from tests.unit.test_day2 import DemoStack, heat, no_sleep, repo  # noqa: F401 (fixtures)

READY = ProbeSpec("ready", "ready", "vr")
CHAIN = ProbeSpec("forwarding", "chain", "vr")
H = Health(10.0, (READY, CHAIN), failures=2, backoff=60.0, max_heals_per_hour=3)


class Loop:
    """A watcher on a fake clock: ``pattern(round)`` says whether the chain probe fails in that round."""

    def __init__(self, pattern: Any, h: Health = H, heal_fails: bool = False) -> None:
        self.t, self.n, self.pattern, self.heal_fails = 1000.0, 0, pattern, heal_fails
        self.events: list[watch.Event] = []
        self.heals: list[float] = []
        self.w = watch.Watcher(h, self.probe, self.heal, lambda vnf: (True, "all 5 check(s) pass"),
                               self.events.append, clock=lambda: self.t)

    def probe(self, spec: ProbeSpec) -> tuple[str, str]:
        if spec.kind == "chain" and self.pattern(self.n):
            return FAIL, "packets lost"
        return PASS, "ok"

    def heal(self, vnf: str) -> dict[str, Any]:
        self.heals.append(self.t)
        if self.heal_fails:
            raise UserError("heal vr: UPDATE_FAILED")
        self.t += 30  # the stack update
        return {"server": f"s{len(self.heals)}", "new_server": f"s{len(self.heals) + 1}"}

    def run(self, rounds: int) -> None:
        for _ in range(rounds):
            self.w.round()
            self.n += 1
            self.t += 10

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]


def test_a_vnf_that_fails_is_detected_healed_checked_and_its_times_reported() -> None:
    loop = Loop(lambda n: 3 <= n < 6)  # fails from the 4th round until the heal (and a round after) is over
    loop.run(10)
    assert loop.kinds() == ["healthy", "detected", "heal", "healed", "check", "coming-up", "recovered"]
    healthy, detected, heal, healed, check, coming_up, recovered = loop.events
    assert coming_up.t == 1080.0 and coming_up.detail.startswith("healed 10 s ago; its probes count again")
    assert healthy.t == 1000.0
    assert (detected.t, heal.t) == (1030.0, 1040.0) and detected.data == {"since_last_pass_s": 10.0}
    assert healed.data == {"server": "s1", "new_server": "s2"} and check.data == {"ok": True}
    assert loop.w.figures == [{"vnf": "vr", "time_to_detect_s": 10.0, "time_to_repair_s": 60.0, "heals": 1}]
    assert recovered.t == 1090.0  # 1040 + 30 s of heal, a round still failing, then a round passing


def test_an_unknown_probe_never_passes_and_never_heals_and_the_others_still_judge() -> None:
    acl = ProbeSpec("acl", "acl", "vr")
    loop = Loop(lambda n: 2 <= n < 4, Health(10.0, (READY, CHAIN, acl)))
    plain = loop.probe
    loop.w.probe = lambda spec: (UNKNOWN, "no ACL probe") if spec.kind == "acl" else plain(spec)
    loop.run(6)
    assert loop.kinds() == ["healthy", "detected", "heal", "healed", "check", "recovered"]
    assert loop.events[0].detail == "every probe that runs passes (acl unknown: no ACL probe)"
    only_unknown = Loop(lambda n: False, Health(10.0, (acl,)))
    only_unknown.w.probe = lambda spec: (UNKNOWN, "no ACL probe")
    only_unknown.run(6)
    assert only_unknown.events == [] and only_unknown.heals == []


def test_a_probe_that_flaps_every_round_never_heals() -> None:
    loop = Loop(lambda n: n % 2 == 0)  # fail, pass, fail, pass ... for an hour
    loop.run(360)
    assert loop.heals == [] and loop.kinds().count("detected") == 180


def test_a_probe_that_keeps_failing_heals_with_backoff_and_at_most_the_cap_an_hour() -> None:
    loop = Loop(lambda n: n % 3 != 2)  # two failed rounds, one pass, again: each pair would ask for a heal
    loop.run(360)
    gaps = [b - a for a, b in zip(loop.heals, loop.heals[1:], strict=False)]
    hours = [len([t for t in loop.heals if s <= t < s + 3600]) for s in loop.heals]
    assert len(loop.heals) >= 3 and max(hours) <= 3, loop.heals
    assert all(g >= 60 for g in gaps) and gaps[1] >= 2 * 60, gaps  # 60 s, then doubled
    held = [e.detail for e in loop.events if e.kind == "held"]
    assert any(d.startswith("backoff: no heal before") for d in held)
    assert any("the cap (3) is reached" in d for d in held)


def test_a_healed_vnf_is_given_its_grace_to_boot_before_it_is_healed_again() -> None:
    # a new server that boots for longer than the backoff (a TCG guest: ~100 s) must not be healed while it boots
    loop = Loop(lambda n: True, Health(10.0, (READY, CHAIN), failures=2, backoff=60.0, grace=300.0))
    loop.run(40)
    assert len(loop.heals) == 2 and loop.heals[1] - loop.heals[0] >= 300, loop.heals
    assert loop.kinds().count("coming-up") == 2 and "held" not in loop.kinds()[:loop.kinds().index("heal", 3)]
    fast = Loop(lambda n: n in (2, 3) or n >= 7, Health(10.0, (READY, CHAIN), grace=300.0))
    fast.run(16)  # failing again after it came up and passed once: judged at once, the grace is over
    assert len(fast.heals) == 2 and fast.kinds().count("recovered") == 1, fast.kinds()


def test_a_heal_that_fails_is_logged_and_backs_off_too() -> None:
    loop = Loop(lambda n: True, heal_fails=True)
    loop.run(12)  # two minutes
    assert loop.kinds()[:3] == ["detected", "heal", "heal-failed"]  # never healthy: no "healthy" event
    assert len(loop.heals) == 2 and loop.heals[1] - loop.heals[0] >= 60
    assert loop.w.figures == []


def test_health_comes_from_the_entry_and_bad_declarations_are_one_line() -> None:
    h = watch.health({"health": {"interval": 5, "probes": [{"kind": "ready", "vnf": "vrouter"},
                                                            {"name": "fwd", "kind": "chain", "vnf": "vrouter",
                                                             "window": 2}]}}, "chain@1")
    assert h.interval == 5 and h.probes == (ProbeSpec("ready-vrouter", "ready", "vrouter"),
                                            ProbeSpec("fwd", "chain", "vrouter", 2.0))
    with pytest.raises(UserError, match="chain@1: declares no health probes"):
        watch.health({}, "chain@1")
    with pytest.raises(UserError, match=r"health.probes\[0\]: a probe needs a kind"):
        watch.health({"health": {"probes": [{"kind": "ping", "vnf": "x"}]}}, "chain@1")


class Flow:
    describe = "fake"

    def __init__(self, rec: FlowRecord) -> None:
        self.rec = rec

    def record(self) -> FlowRecord:
        return self.rec


def test_the_chain_probe_passes_when_every_packet_of_the_window_arrived_and_acl_is_unknown_without_one() -> None:
    rec = FlowRecord(100, 0.0, arrivals={n: n / 100 for n in range(1000)})  # 10 s, the newest at 9.99 s
    probes = watch.StackProbes(None, dict, Flow(rec), clock=lambda: 10.0)
    assert probes(CHAIN)[0] == PASS
    assert probes(ProbeSpec("acl", "acl", "vr")) == (UNKNOWN, "the flow (fake) offers no ACL probe")
    late = watch.StackProbes(None, dict, Flow(rec), clock=lambda: 20.0)  # nothing for 10 s: the guest is gone
    assert late(CHAIN) == (FAIL, "packets lost in the last 3 s; the newest arrived 10.0 s ago")
    assert watch.StackProbes(None, dict, None)(CHAIN)[0] == UNKNOWN
    fresh = FlowRecord(100, 0.0, arrivals={n: n / 100 for n in range(150)})  # the flow started 1.5 s ago
    assert watch.StackProbes(None, dict, Flow(fresh), clock=lambda: 1.5)(CHAIN) == \
        (UNKNOWN, "the flow has not run 3 s yet")  # not a whole window: neither a pass nor a failure


def test_metrics_are_prometheus_text_with_no_sample_for_an_unknown_probe() -> None:
    text = watch.metrics_text("demo", [(READY, PASS, ""), (CHAIN, FAIL, ""), (ProbeSpec("acl", "acl", "vr"),
                                                                               UNKNOWN, "")])
    assert text.splitlines()[2:] == ['nfvcat_probe_success{stack="demo",vnf="vr",probe="ready",kind="ready"} 1',
                                     'nfvcat_probe_success{stack="demo",vnf="vr",probe="forwarding",kind="chain"} 0']


DURATION = re.compile(r"^\d+[smhd]$")  # Prometheus' duration, as `for` and `interval` take it


def test_prometheus_alert_rules_are_a_rule_file_prometheus_reads() -> None:
    doc = yaml.safe_load(watch.export(H, "prometheus", {"stack": "demo", "vnf_instance": None}))
    [group] = doc["groups"]
    assert group["name"] == "nfvcat-demo" and DURATION.match(group["interval"])
    assert [r["alert"] for r in group["rules"]] == ["NfvcatProbeFailed-demo-ready",
                                                    "NfvcatProbeFailed-demo-forwarding"]
    for rule in group["rules"]:
        assert set(rule) == {"alert", "expr", "for", "labels", "annotations"} and DURATION.match(rule["for"])
        assert rule["for"] == "20s" and rule["expr"].startswith('nfvcat_probe_success{stack="demo",vnf="vr",')
        assert rule["labels"]["severity"] == "critical" and rule["annotations"]["summary"]
        assert all(isinstance(v, str) for v in rule["labels"].values())


def test_tacker_auto_heal_configuration_has_the_labels_tacker_reads_and_its_webhook() -> None:
    target = {"stack": "vnf-1", "vnf_instance": "inst-1", "vnfc_ids": lambda: {"vr": "vr-abc"}}
    doc = yaml.safe_load(watch.export(H, "tacker", target))
    for rule in doc["prometheus_rules"]["groups"][0]["rules"]:
        assert {k: rule["labels"][k] for k in ("receiver_type", "function_type", "vnf_instance_id",
                                               "vnfc_info_id")} == {"receiver_type": "tacker",
                                                                    "function_type": "auto_heal",
                                                                    "vnf_instance_id": "inst-1",
                                                                    "vnfc_info_id": "vr-abc"}
    am = doc["alertmanager"]
    [route] = am["route"]["routes"]
    [receiver] = am["receivers"]
    assert route == {"matchers": ["function_type = auto_heal"], "receiver": receiver["name"]}
    assert receiver["webhook_configs"][0]["url"].endswith("/alert/auto_healing")
    assert doc["tacker_conf"]["prometheus_plugin"]["auto_healing"] is True
    assert doc["instantiate"]["vnfConfigurableProperties"] == {"isAutohealEnabled": True}
    with pytest.raises(UserError, match="no VNFC of vr in inst-1"):
        watch.export(H, "tacker", {**target, "vnfc_ids": lambda: {"other": "x"}})
    with pytest.raises(UserError, match="is no Tacker VNF instance"):
        watch.export(H, "tacker", {"stack": "demo", "vnf_instance": None})


def test_watch_cli_exports_the_deployed_entrys_probes_or_says_it_declares_none(
        heat: Any, repo: Path, capsys: Any) -> None:  # noqa: F811 (fixtures)
    DemoStack(heat, "1.1.0", ["CREATE_COMPLETE"])
    assert cli.main(["watch", "demo", "--export", "prometheus", "--os-cloud", "x"]) == 1
    assert "declares no health probes" in capsys.readouterr().err
    entry = repo / "templates" / "heat" / "demo" / "entry.yaml"
    entry.write_text(entry.read_text() + "health:\n  interval: 5\n  probes:\n    - {kind: chain, vnf: server}\n")
    assert cli.main(["watch", "demo", "--export", "prometheus", "--os-cloud", "x"]) == 0
    out = capsys.readouterr()
    assert "demo@1.1.0 declares no health probes; using those of the catalog's demo 2.0.0" in out.err
    [rule] = yaml.safe_load(out.out)["groups"][0]["rules"]
    assert rule["for"] == "10s" and json.dumps(rule["labels"]).count("server") == 1
