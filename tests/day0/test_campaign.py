"""The catalog's lab campaign through `nfvcat test` (tests/tdf/lab.yaml): reports with RFC 2544 results,
the HTML page rendered by headless Chromium, and campaigns that must turn red (a broken hook, a chain that
fails its check) with the failing step named and nothing left behind."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from nfvcat_testbeds.lab.netns import run
from tests import junitxsd
from tests.conftest import ROOT

NFVCAT = str(Path(sys.executable).parent / "nfvcat")
ARTEFACTS = ROOT / "build" / "artefacts"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--enable-logging=stderr",
                  "--v=0"]


@dataclass
class Ran:
    pid: int  # the namespaces of a campaign are named nfvd0-<pid>-t<index>-...
    returncode: int
    stdout: str
    stderr: str


def nfvcat_test(tdf: Path, results: Path, env: dict[str, str] | None = None, *extra: str) -> Ran:
    proc = subprocess.Popen([NFVCAT, "test", str(tdf), "-o", str(results), *extra], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env={**os.environ, **(env or {})})
    try:
        out, err = proc.communicate(timeout=900)
    finally:
        if proc.poll() is None:
            proc.terminate()  # nfvcat removes its namespaces on SIGTERM too
            proc.wait(60)
    return Ran(proc.pid, proc.returncode, out, err)


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> tuple[Ran, Path]:
    results = tmp_path_factory.mktemp("lab-campaign")
    proc = nfvcat_test(ROOT / "tests" / "tdf" / "lab.yaml", results)
    sys.stderr.write(proc.stderr[-4000:])
    return proc, results


def test_lab_campaign_passes_with_rfc2544_results(campaign: tuple[Ran, Path]) -> None:
    proc, results = campaign
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    doc = json.loads((results / "results.json").read_text())
    tests = {t["name"]: t for t in doc["tests"]}
    for name in ("vrouter-no-acl", "vrouter-acl"):
        searches = {s["frame"]: s for s in tests[name]["throughput"]}
        assert {"64", "512", "1518", "imix"} <= set(searches), name
        for s in searches.values():
            assert s["trials"], f"{name} {s['frame']}: no trial recorded"
            assert s["throughput_pps"] > 0
            passing = [t for t in s["trials"] if t["passed"]]
            offered = [t["offered_pps"] for t in passing]
            assert passing and min(offered) <= s["throughput_pps"] <= max(offered)
    assert [e["status"] for e in tests["vrouter-acl"]["expectations"]] == ["PASS", "PASS"]
    assert tests["vrouter-2vnf"]["vnfs"] == 2 and tests["vrouter-2vnf"]["latency"]["received"] > 0
    steps = [s["name"] for s in tests["vrouter-acl"]["steps"]]
    assert steps == ["validate", "plan", "render", "build", "lab-check", "dataplane", "teardown"]
    assert all(s["status"] == "PASS" and s["duration"] > 0 for s in tests["vrouter-acl"]["steps"])
    checks = {(r["vnf"], r["check"]) for r in tests["vrouter-acl"]["placement"]}
    assert {("r1", "ACL rules loaded"), ("r1", "day-0 ready"), ("chain", "reachability")} <= checks
    assert any(r["source"] == "plan" for r in tests["vrouter-acl"]["placement"])
    junit = ET.parse(results / "junit.xml").getroot()
    assert junit.get("failures") == "0" and junit.get("errors") == "0"
    assert len(junit.findall("testsuite")) == len(doc["tests"])
    assert junitxsd.problems((results / "junit.xml").read_bytes()) == []  # Jenkins' xUnit schema
    records = {r["case_name"]: r for r in doc["results"]}
    assert records["ipsec-tunnel"]["criteria"] == "PASS" and records["vrouter-acl"]["project_name"] == "nfvcat"
    assert not [n for n in run(["ip", "netns", "list"]).stdout.split() if n.startswith(f"nfvd0-{proc.pid}")]


def chromium(args: list[str], profile: Path) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("chromium")
    assert exe, "chromium is not installed: tools/debs/day0.txt"
    return subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                          text=True, timeout=180, check=False)


def test_report_renders_in_headless_chromium(campaign: tuple[Ran, Path],
                                             tmp_path: Path) -> None:
    _, results = campaign
    url = (results / "report.html").resolve().as_uri()
    dom = chromium(["--dump-dom", url], tmp_path / "profile-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    console = [line for line in dom.stderr.splitlines() if ":CONSOLE" in line]
    assert not console, f"the page wrote to the console: {console}"  # the page logs nothing when it works
    assert 'data-rendered="yes"' in dom.stdout, "the page's script did not run to its end"
    for plot in ("plot-throughput", "plot-acl", "plot-latency"):
        part = dom.stdout.split(f'id="{plot}"', 1)[1].split("</figure>", 1)[0]
        assert "<svg" in part, f"{plot}: no SVG drawn"
        marks = part.count('class="bar"') if plot != "plot-latency" else part.count('class="point"')
        assert marks >= 2, f"{plot}: {marks} bars/points"
    assert dom.stdout.count('class="steps"') == 5 and dom.stdout.count('class="placement"') == 5
    shot = ARTEFACTS / "tdf-lab-report.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    snap = chromium([f"--screenshot={shot}", "--window-size=1200,2600", "--hide-scrollbars", url],
                    tmp_path / "profile-shot")
    assert snap.returncode == 0 and shot.stat().st_size > 20_000, snap.stderr[-2000:]


def _catalog_copy(tmp_path: Path) -> Path:
    root = tmp_path / "catalog"
    for d in ("templates", "hooks", "flavors", "vnfd"):
        shutil.copytree(ROOT / d, root / d)
    return root


def _tdf(tmp_path: Path, test: dict[str, Any]) -> Path:
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump({"kind": "nfvcat/test-description", "general": {"target": {"lab": "netns"}},
                                    "tests": [test]}))
    return path


def _red(proc: Ran, results: Path, step: str) -> dict[str, Any]:
    assert proc.returncode == 2, proc.stdout + proc.stderr[-2000:]
    junit = ET.parse(results / "junit.xml").getroot()
    failed = [c.get("name") for c in junit.iter("testcase") if c.find("failure") is not None]
    assert failed == [step], failed
    doc = json.loads((results / "results.json").read_text())
    steps = {s["name"]: s for s in doc["tests"][0]["steps"]}
    assert steps["teardown"]["status"] == "PASS", "cleanup must run after a failure"
    assert doc["results"][0]["criteria"] == "FAIL"
    assert f"{step}:" in proc.stdout
    left = [n for n in run(["ip", "netns", "list"]).stdout.split() if n.startswith(f"nfvd0-{proc.pid}-")]
    assert not left, f"namespaces left behind: {left}"
    return steps


def test_broken_hook_turns_the_campaign_red_at_build(tmp_path: Path) -> None:
    catalog = _catalog_copy(tmp_path)
    hook = catalog / "hooks" / "vrouter" / "user-data.yaml"
    text = hook.read_text()
    assert "--load /etc/vrouter/acl.rules" in text
    hook.write_text(text.replace("--load /etc/vrouter/acl.rules", "--load /etc/vrouter/acl.rules.missing"))
    tdf = _tdf(tmp_path, {"name": "broken-hook", "lab": {"topology": "vrouter"}, "dataplane": {"frames": [64]}})
    proc = nfvcat_test(tdf, tmp_path / "results", {"NFVCAT_CATALOG_DIR": str(catalog)})
    steps = _red(proc, tmp_path / "results", "build")
    assert "vrouter-setup" in steps["build"]["message"] and "acl.rules.missing" in steps["build"]["message"]
    assert steps["dataplane"]["status"] == "SKIP"


def test_chain_that_fails_its_check_turns_the_campaign_red_at_check(tmp_path: Path) -> None:
    blackhole = json.dumps(["ip daddr 10.30.0.0/16 counter drop"])  # the vRouter drops everything it routes
    tdf = _tdf(tmp_path, {"name": "blackhole", "lab": {"topology": "vrouter", "vnf_parameters":
                                                       {"acl_forward": blackhole}}, "dataplane": {"frames": [64]}})
    proc = nfvcat_test(tdf, tmp_path / "results")
    steps = _red(proc, tmp_path / "results", "lab-check")
    assert "reachability" in steps["lab-check"]["message"]
    assert steps["dataplane"]["status"] == "SKIP"
