"""The campaign library without a lab or a cloud: the RFC 2544 search against a simulated device, the TDF
loader and its rule, expectations, and the reports (JUnit, xtesting records)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml
from junitparser.xunit2 import JUnitXml

from nfvcat.campaign import reports, rfc2544, runner
from nfvcat.campaign.results import FAIL, PASS, SKIP, CampaignRecord, Step, TestRecord
from nfvcat.catalog import tdf
from nfvcat.core.errors import UserError
from nfvcat_testbeds.lab import frames
from nfvcat_testbeds.targets.traffic import Trial
from tests import junitxsd
from tests.conftest import ROOT, nfvcat

LAB = ROOT / "tests" / "tdf" / "lab.yaml"


def device(capacity: float, generator_max: float = 1e9) -> Any:
    """A device that forwards up to ``capacity`` frames/s and loses the excess; a generator that tops out."""
    def trial(frame: str, rate: float, seconds: float) -> Trial:
        offered = min(rate, generator_max)
        sent = int(offered * seconds)
        received = sent if offered <= capacity else int(capacity * seconds)
        return Trial(frame, rate, sent, received, seconds)
    return trial


@pytest.mark.parametrize("capacity", [12_345.0, 480_000.0, 999_000.0])
def test_search_finds_the_zero_loss_rate_within_the_resolution(capacity: float) -> None:
    settings = rfc2544.Settings(max_rate_pps=1_000_000, resolution=0.01, max_trials=30)
    s = rfc2544.search("64", settings, device(capacity))
    assert s.converged and not s.generator_limited
    assert capacity * 0.98 <= s.throughput_pps <= capacity
    assert all(s.passed(t) == (t.offered_pps <= capacity) for t in s.trials)
    assert len(s.trials) <= 16  # a binary search (log2 of 1e6 / 1% of 12k is 13), not a sweep


def test_search_without_loss_at_the_top_stops_at_once() -> None:
    s = rfc2544.search("imix", rfc2544.Settings(max_rate_pps=50_000), device(1e9))
    assert len(s.trials) == 1 and s.throughput_pps == 50_000 and not s.generator_limited


def test_a_slow_generator_is_reported_not_mistaken_for_the_device() -> None:
    s = rfc2544.search("64", rfc2544.Settings(max_rate_pps=1_000_000), device(1e9, generator_max=80_000))
    assert s.generator_limited and s.throughput_pps == 80_000


def test_generator_limited_rate_is_the_median_of_its_samples() -> None:
    rates = iter([70_000.0, 90_000.0, 50_000.0])

    def trial(frame: str, rate: float, seconds: float) -> Trial:
        offered = next(rates)
        return Trial(frame, rate, int(offered * seconds), int(offered * seconds), seconds)

    s = rfc2544.search("64", rfc2544.Settings(max_rate_pps=1_000_000, samples=3), trial)
    assert s.generator_limited and len(s.trials) == 3 and s.throughput_pps == 70_000


def test_a_sample_that_loses_frames_sends_the_search_below_it() -> None:
    """The first trial at the generator's limit passes, a repeat at that rate loses: the limit is not the
    throughput, the search goes on below the losing rate."""
    asked: list[float] = []

    def trial(frame: str, rate: float, seconds: float) -> Trial:
        asked.append(rate)
        offered = min(rate, 70_000.0)  # the generator's limit
        sent = int(offered * seconds)
        lossy = len(asked) == 2 or (len(asked) > 3 and offered > 60_000)  # the device forwards 60k
        return Trial(frame, rate, sent, sent // 2 if lossy else sent, seconds)

    s = rfc2544.search("64", rfc2544.Settings(max_rate_pps=1_000_000, samples=3, max_trials=20), trial)
    assert not s.generator_limited and asked[3] == 35_000
    assert 57_000 <= s.throughput_pps <= 60_000


def test_loss_tolerance_and_max_trials() -> None:
    lossy = device(100_000)
    strict = rfc2544.search("64", rfc2544.Settings(max_rate_pps=200_000, max_trials=3), lossy)
    assert len(strict.trials) == 3 and not strict.converged
    assert rfc2544.search("64", rfc2544.Settings(max_rate_pps=200_000, loss_tolerance=0.6), lossy).throughput_pps \
        == 200_000  # half the frames lost is within a 60% tolerance


def test_device_that_loses_everything_has_zero_throughput() -> None:
    s = rfc2544.search("64", rfc2544.Settings(max_rate_pps=10_000, min_rate_pps=1_000, max_trials=20), device(0))
    assert s.throughput_pps == 0 and s.converged


def test_imix_cycle_has_the_weights_and_frames_their_sizes() -> None:
    seq = frames.imix_sequence()
    assert {size: seq.count(size) for size in set(seq)} == dict(frames.IMIX_IPV4)
    assert seq[:5] != sorted(seq[:5]) or len(set(seq[:8])) > 2  # interleaved, not in blocks
    for size in (64, 512, 1518):
        frame = frames.sized_udp_frame(size, "fa:16:3e:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.0.0.2", 5001)
        assert len(frame) + frames.FCS == size
        assert frames.checksum(frame[14:34]) == 0  # the IPv4 header checksum verifies
    with pytest.raises(ValueError):
        frames.sized_udp_frame(60, "fa:16:3e:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.0.0.2", 5001)


def test_the_catalog_campaigns_load() -> None:
    lab = tdf.load(LAB)
    assert lab.general.lab == "netns" and lab.general.cloud is None
    names = [t.name for t in lab.tests]
    assert {"forward-plain", "vrouter-no-acl", "vrouter-acl", "vrouter-2vnf", "ipsec-tunnel"} <= set(names)
    acl = next(t for t in lab.tests if t.name == "vrouter-acl")
    assert acl.dataplane and {"64", "512", "1518", "imix"} <= set(acl.dataplane.frames)
    dev = tdf.load(ROOT / "tests" / "tdf" / "devcloud.yaml")
    assert dev.general.cloud == "nfvcat-dev" and dev.general.dataplane == "cloud"
    real = next(t for t in dev.tests if t.name == "vrouter-real-host")
    assert real.lab is None and real.dataplane and not real.plan and Path(real.environment[0]).is_file()
    assert real.dataplane.frames == ["64", "512", "1518", "imix"]
    assert real.dataplane.acl is not None and real.dataplane.acl.over > 1
    assert real.dataplane.qos and real.dataplane.qos.bandwidth_limit == "best_effort_qos_policy"


def test_a_cloud_data_plane_needs_a_chain_not_a_lab(tmp_path: Path) -> None:
    data = {"kind": "nfvcat/test-description", "general": {"target": {"cloud": "c"}, "dataplane": "cloud"},
            "tests": [{"name": "a", "chain": "chain-vrouter", "plan": False, "dataplane": {"frames": [64]}}]}
    loaded = tdf.load(_write(tmp_path, data))
    assert loaded.tests[0].lab is None and loaded.tests[0].plan is False
    data["general"]["dataplane"] = "netns"
    with pytest.raises(UserError, match="a data plane needs a lab topology"):
        tdf.load(_write(tmp_path, data))


def test_acl_and_qos_probes_run_through_the_cloud_only(tmp_path: Path) -> None:
    dp = {"frames": [64], "acl": {"over": 4}, "qos": {"bandwidth_limit": "a", "dscp_marking": "b",
                                                      "direction": "ingress", "max_kbps": 20000}}
    data = {"kind": "nfvcat/test-description", "general": {"target": {"cloud": "c"}, "dataplane": "cloud"},
            "tests": [{"name": "a", "chain": "chain-vrouter", "dataplane": dp}]}
    loaded = tdf.load(_write(tmp_path, data)).tests[0].dataplane
    assert loaded and loaded.acl == tdf.AclSpec(over=4) and loaded.qos and loaded.qos.max_kbps == 20000
    assert loaded.qos.direction == "ingress" and loaded.qos.tolerance == 0.1
    data["tests"][0]["lab"] = {"topology": "vrouter"}
    with pytest.raises(UserError, match="acl probes run through the cloud only"):
        tdf.load(_write(tmp_path, data))
    data["tests"][0].pop("lab")
    dp["qos"]["direction"] = "both"
    with pytest.raises(UserError, match="/tests/0/dataplane/qos/direction"):
        tdf.load(_write(tmp_path, data))


def test_the_generator_paces_frames_by_gap_or_by_second(tmp_path: Path) -> None:
    from nfvcat_testbeds.lab.netns import Lab
    from nfvcat_testbeds.targets import traffic as tr

    ep = tr.Endpoints("s", "eth0", "10.0.0.1", "d", "eth0", "10.0.1.1", "02:00:00:00:00:01")
    gen = tr.Generator(Lab(tag="unit"), ep, tmp_path, configs={"64": tmp_path / "c.cfg"})
    rate = gen.argv("64", 250, 2)
    assert rate[rate.index("-n") + 1] == "500" and rate[rate.index("-b") + 1] == "250pps" and "-t" not in rate
    gen.pacing = "gap"
    gap = gen.argv("64", 250, 2)
    assert gap[gap.index("-t") + 1] == "4000000ns" and "-b" not in gap
    icmp = tr.trafgen_config(ep, "02:00:00:00:00:02", "64", proto="icmp")
    assert "ICMP echo" in icmp and icmp.count("{") == 1


def _write(tmp_path: Path, data: Any) -> Path:
    p = tmp_path / "t.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d["general"].update(target={"cloud": ""}), "/general/target"),
    (lambda d: d["tests"].append(dict(d["tests"][0])), "duplicate test name 'a'"),
    (lambda d: d["tests"][0]["dataplane"].update(expect=[{"name": "x", "metric": "throughput_pps", "frame": 64,
                                                           "relative_to": "b", "min": 1}]),
     "'b' is not a test run before this one"),
    (lambda d: d["tests"][0]["dataplane"].update(frames=[63]), "/tests/0/dataplane/frames/0"),
    (lambda d: d["tests"][0].pop("lab"), "a data plane needs a lab topology"),
])
def test_bad_tdf_is_one_line_with_file_line_and_rule(tmp_path: Path, change: Any, message: str) -> None:
    data = {"kind": "nfvcat/test-description", "general": {"target": {"lab": "netns"}},
            "tests": [{"name": "a", "lab": {"topology": "forwarder"}, "dataplane": {"frames": [64]}}]}
    tdf.load(_write(tmp_path, data))
    change(data)
    with pytest.raises(UserError) as err:
        tdf.load(_write(tmp_path, data))
    text = str(err.value)
    assert text.startswith(f"{tmp_path / 't.yaml'}:") and "E0013" in text and message in text, text
    assert "\n" not in text


def _record(name: str, vnfs: int, figures: dict[str, float]) -> TestRecord:
    r = TestRecord(name, "", "chain-vrouter", vnfs, "vrouter")
    r.details["figures"] = figures
    return r


def test_expectations_ratio_slope_and_unknown() -> None:
    base = _record("no-acl", 1, {"throughput_pps/imix": 100_000.0, "latency_avg_us": 20.0})
    acl = _record("acl", 1, {"throughput_pps/imix": 96_000.0})
    two = _record("two", 2, {"latency_avg_us": 50.0})
    done = {"no-acl": base}
    ratio = tdf.Expectation("acl", "throughput_pps", "imix", 0.95, None, "no-acl", None)
    assert runner.evaluate(ratio, acl, acl.details["figures"], done)["status"] == PASS
    low = tdf.Expectation("acl", "throughput_pps", "imix", 0.97, None, "no-acl", None)
    assert runner.evaluate(low, acl, acl.details["figures"], done)["status"] == FAIL
    slope = tdf.Expectation("lat", "latency_avg_us", None, None, 25.0, None, "no-acl")
    got = runner.evaluate(slope, two, two.details["figures"], done)
    assert got["figure"] == 30.0 and got["status"] == FAIL
    unknown = runner.evaluate(ratio, acl, acl.details["figures"], {})
    assert unknown["status"] == FAIL and "unknown" in unknown["why"]


def test_a_figure_capped_by_the_rate_asked_is_a_bound_not_a_pass() -> None:
    """Both arms lost nothing at max_rate_pps: their ratio (1.0) says nothing of the ACL's cost."""
    capped = {"throughput_pps/64": 200_000.0, "at_least": ["throughput_pps/64", "throughput_mbps/64"]}
    ratio = tdf.Expectation("acl", "throughput_pps", "64", 0.5, None, "no-acl", None)
    both = runner.evaluate(ratio, _record("acl", 1, capped), capped, {"no-acl": _record("no-acl", 1, capped)})
    assert both["figure"] == 1.0 and both["status"] == FAIL and "unknown" in both["why"], both
    assert "raise max_rate_pps" in both["why"]
    # only the arm under test capped: the true ratio is at least the one computed, so a minimum holds
    measured = {"throughput_pps/64": 300_000.0}
    acl = runner.evaluate(ratio, _record("acl", 1, capped), capped, {"no-acl": _record("no-acl", 1, measured)})
    assert acl["status"] == PASS and "why" not in acl
    # only the reference capped: the true ratio may be lower, a minimum cannot be confirmed ...
    low = runner.evaluate(ratio, _record("acl", 1, measured), measured, {"no-acl": _record("no-acl", 1, capped)})
    assert low["status"] == FAIL and "no-acl's" in low["why"]
    # ... but a maximum can, and a minimum it already misses is a plain failure
    most = tdf.Expectation("acl", "throughput_pps", "64", None, 2.0, "no-acl", None)
    assert runner.evaluate(most, _record("acl", 1, measured), measured,
                           {"no-acl": _record("no-acl", 1, capped)})["status"] == PASS
    high = tdf.Expectation("acl", "throughput_pps", "64", 2.0, None, "no-acl", None)
    missed = runner.evaluate(high, _record("acl", 1, measured), measured, {"no-acl": _record("no-acl", 1, capped)})
    assert missed["status"] == FAIL and "why" not in missed
    # absolute: a capped figure confirms a minimum, never a maximum
    floor = tdf.Expectation("t", "throughput_pps", "64", 150_000.0, None, None, None)
    assert runner.evaluate(floor, _record("acl", 1, capped), capped, {})["status"] == PASS
    ceiling = tdf.Expectation("t", "throughput_pps", "64", None, 250_000.0, None, None)
    assert runner.evaluate(ceiling, _record("acl", 1, capped), capped, {})["status"] == FAIL


def test_a_search_that_loses_nothing_at_the_top_is_capped() -> None:
    from nfvcat.campaign import rfc2544

    class T:
        def __init__(self, rate: float, offered: float, lost: int = 0):
            self.requested_pps, self.sent, self.received = rate, int(offered), int(offered) - lost
            self.offered_pps, self.loss = offered, lost / offered

        def as_dict(self) -> dict[str, float]:
            return {"offered_pps": self.offered_pps}

    settings = rfc2544.Settings(max_rate_pps=200_000, samples=3)
    top = rfc2544.search("64", settings, lambda f, rate, sec: T(rate, rate))  # every rate asked, no loss
    assert top.capped and not top.generator_limited and top.as_dict()["capped"] is True
    slow = rfc2544.search("imix", settings, lambda f, rate, sec: T(rate, 150_000))  # the generator runs out
    assert slow.generator_limited and not slow.capped and slow.throughput_pps == 150_000
    from nfvcat_testbeds.targets import lab as labtarget

    assert labtarget.figures([top, slow], None).get("at_least") == ["throughput_pps/64", "throughput_mbps/64"]


def _campaign() -> CampaignRecord:
    camp = CampaignRecord("tests/tdf/lab.yaml", "lab netns", "nfvcat", start=1_700_000_000.0)
    ok = _record("vrouter-acl", 1, {})
    ok.start, ok.stop = 1_700_000_000.0, 1_700_000_010.0
    ok.steps = [Step("validate", "validate chain-vrouter", PASS, 1_700_000_000.0, 1_700_000_001.5),
                Step("dataplane", "data plane", PASS, 1_700_000_002.0, 1_700_000_009.0)]
    ok.searches = [{"frame": "64", "throughput_pps": 50_000.0, "generator_limited": True, "converged": True,
                    "trials": [{"offered_pps": 50_000.0, "loss": 0.0}]}]
    ok.dataplane = "cloud"
    bad = _record("broken", 1, {})
    bad.start, bad.stop = 1_700_000_010.0, 1_700_000_012.0
    bad.steps = [Step("build", "lab: build the namespace chain", FAIL, 1_700_000_010.0, 1_700_000_011.0,
                      "vrouter-setup failed"),
                 Step("dataplane", "data plane", SKIP, message="an earlier step failed"),
                 Step("teardown", "lab: tear down", PASS, 1_700_000_011.0, 1_700_000_012.0)]
    camp.tests = [ok, bad]
    camp.stop = 1_700_000_012.0
    camp.environment = {"nfvcat": "0.0.0", "installer": None, "scenario": None, "pod_name": None, "build_tag": None}
    return camp


def test_junit_names_the_failed_step() -> None:
    root = ET.fromstring(reports.junit(_campaign()))
    assert root.get("tests") == "5" and root.get("failures") == "1" and root.get("time") == "12.0"
    suite = root.find("testsuite[@name='broken']")
    assert suite is not None and suite.get("skipped") == "1" and suite.get("time") == "2.0"
    failed = [c for c in suite.findall("testcase") if c.find("failure") is not None]
    assert [c.get("name") for c in failed] == ["build"]
    assert "vrouter-setup failed" in (failed[0].find("failure").get("message") or "")  # type: ignore[union-attr]
    assert root.find("testsuite[@name='vrouter-acl']/testcase[@name='validate']").get("time") == "1.5"  # type: ignore


def test_junit_is_jenkins_xunit_junit_even_when_a_step_printed_control_characters() -> None:
    camp = _campaign()
    build = camp.tests[1].steps[0]
    build.message = "vrouter-setup: \x1b[1;31mERROR\x1b[0m table \x00fwd\x07 \ud800 missing"
    camp.tests[1].steps[2].message = "tore down \x1b[32mok\x1b[0m\x0c"
    text = reports.junit(camp)
    assert junitxsd.problems(text.encode("utf-8")) == []
    assert "skipped" not in ET.fromstring(text).attrib  # <testsuites> has none in the schema
    failure = JUnitXml.fromstring(text.encode("utf-8"))
    case = next(c for suite in failure for c in suite if c.name == "build")
    assert case.result[0].message == "vrouter-setup: ERROR table \\x00fwd\\x07 \\ud800 missing"
    out = next(c for suite in failure for c in suite if c.name == "teardown").system_out
    assert out == "lab: tear down: tore down ok\\x0c"


def test_the_schema_refuses_what_the_old_report_wrote() -> None:  # the test above can fail
    old = ('<testsuites tests="1" failures="0" errors="0" skipped="0"><testsuite name="t" tests="1" failures="0" '
           'errors="0"><testcase name="s"/></testsuite></testsuites>')
    assert any("skipped" in p for p in junitxsd.problems(old.encode()))
    raw = (b"<testsuites><testsuite name='t' tests='1' failures='1' errors='0'><testcase name='s'>"
           b"<failure>\x1b[31m</failure></testcase></testsuite></testsuites>")
    assert junitxsd.problems(raw)[0].startswith("not XML")


def test_json_has_xtesting_result_records() -> None:
    doc = reports.as_json(_campaign())
    rec = {r["case_name"]: r for r in doc["results"]}
    # the fields xtesting's TestCase.push_to_db sends
    assert set(rec["broken"]) == {"project_name", "case_name", "criteria", "start_date", "stop_date", "installer",
                                  "scenario", "pod_name", "build_tag", "version", "details"}
    assert rec["broken"]["criteria"] == "FAIL" and rec["vrouter-acl"]["criteria"] == "PASS"
    assert rec["vrouter-acl"]["start_date"] == "2023-11-14 22:13:20"
    assert doc["tests"][0]["throughput"][0]["trials"]
    where = [t["dataplane"] for t in doc["tests"]]
    assert [r["details"]["dataplane"] for r in doc["results"]] == where == ["cloud", None]
    json.dumps(doc)


def test_html_embeds_the_data_and_fetches_nothing() -> None:
    page = reports.html_page(_campaign())
    assert "<script src" not in page and "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in page
    data = page.split('<script id="data" type="application/json">')[1].split("</script>")[0]
    assert json.loads(data)["tests"][1]["name"] == "broken"


def test_cli_bad_tdf_and_unknown_test_are_usage_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: nfvcat/test-description\ngeneral: {target: {lab: vm2}}\ntests: []\n")
    proc = nfvcat("test", str(bad))
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "E0013" in proc.stderr
    assert f"{bad}:2:" in proc.stderr, proc.stderr
    proc = nfvcat("test", str(LAB), "--only", "nope", "-o", str(tmp_path / "r"))
    assert proc.returncode == 1 and "--only nope: no such test" in proc.stderr


def test_cli_lab_that_cannot_run_is_exit_3_with_reports(tmp_path: Path) -> None:
    tdf_path = _write(tmp_path, {"kind": "nfvcat/test-description", "general": {"target": {"lab": "netns"}},
                                 "tests": [{"name": "a", "lab": {"topology": "forwarder"},
                                            "dataplane": {"frames": [64]}}]})
    proc = nfvcat("test", str(tdf_path), "-o", str(tmp_path / "r"), env={"PATH": str(tmp_path / "nothing")})
    assert proc.returncode == 3, proc.stdout + proc.stderr
    doc = json.loads((tmp_path / "r" / "results.json").read_text())
    steps = {s["name"]: s["status"] for s in doc["tests"][0]["steps"]}
    assert steps["render"] == "ERROR" and steps["build"] == "SKIP" and steps["dataplane"] == "SKIP"
    assert doc["results"][0]["criteria"] == "FAIL"
    root = ET.parse(tmp_path / "r" / "junit.xml").getroot()
    assert root.get("errors") == "1"
