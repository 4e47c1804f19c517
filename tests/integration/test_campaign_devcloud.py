"""tests/tdf/devcloud.yaml through `nfvcat test`: control-plane steps on the dev cloud (onboard, instantiate,
check, terminate); the data plane of the chains on simulated hosts in the namespace lab, that of the product
vRouter on the real host through the cloud (test endpoints on its networks); nothing left on the cloud
afterwards."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from tests import junitxsd
from tests.integration.conftest import ROOT, nfvcat

STEPS = ["validate", "plan", "onboard", "instantiate", "check", "render", "build", "lab-check", "dataplane",
         "teardown", "terminate"]
CLOUD_STEPS = ["validate", "onboard", "instantiate", "check", "endpoints", "cloud-check", "dataplane", "unplug",
               "terminate"]


def test_devcloud_campaign(conn: Any, onboarded: list[str], tmp_path: Path) -> None:
    results = tmp_path / "results"
    res = nfvcat("test", "tests/tdf/devcloud.yaml", "-o", str(results), timeout=3600)
    assert res.returncode == 0, res.stdout + res.stderr[-4000:]
    doc = json.loads((results / "results.json").read_text())
    assert {t["name"] for t in doc["tests"]} == {"vrouter-sriov", "vrouter-ovs-dpdk", "vrouter-real-host"}
    for t in doc["tests"]:
        cloud = t["name"] == "vrouter-real-host"
        assert [s["name"] for s in t["steps"]] == (CLOUD_STEPS if cloud else STEPS), t["name"]
        assert t["dataplane"] == ("cloud" if cloud else "netns")
        assert [r["details"]["dataplane"] for r in doc["results"] if r["case_name"] == t["name"]] == [t["dataplane"]]
        assert all(s["status"] == "PASS" for s in t["steps"]), t["steps"]
        checks = [r for r in t["placement"] if r["source"] == "check"]
        assert checks and {"server ACTIVE", "bound", "vif_type"} <= {r["check"] for r in checks}
        assert conn.orchestration.find_stack(f"nfvcat-test-{t['name']}") is None, "terminate left the stack"
        assert {s["frame"] for s in t["throughput"]} == {"64", "imix"}
        if cloud:  # zero-loss throughput above 0 through the deployed chain, ping and TCP through it
            assert all(s["throughput_pps"] > 0 for s in t["throughput"]), t["throughput"]
            rows = {r["check"]: r for r in t["placement"] if r["source"] == "cloud check"}
            assert rows["reachability (cloud)"]["status"] == rows["TCP (cloud)"]["status"] == "PASS", rows
            assert t["details"]["figures"]["tcp_mbps"] > 0
            ready = next(r for r in t["steps"] if r["name"] == "instantiate")["message"]
            assert "NFVCAT-VROUTER-READY" in ready, ready
    junit = ET.parse(results / "junit.xml").getroot()
    assert junit.get("failures") == "0" and junit.get("errors") == "0"
    assert junitxsd.problems((results / "junit.xml").read_bytes()) == []  # Jenkins' xUnit schema
    assert (ROOT / "tests" / "tdf" / "devcloud.yaml").is_file()
