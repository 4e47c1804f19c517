"""tests/tdf/devcloud.yaml through `nfvcat test`: control-plane steps on the dev cloud (onboard, instantiate,
check, terminate); the data plane of the chains on simulated hosts in the namespace lab, that of the product
vRouter on the real host through the cloud (test endpoints on its networks); nothing left on the cloud
afterwards."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import yaml

from nfvcat.catalog import qos as catalog_qos
from tests import junitxsd
from tests.integration.conftest import ROOT, nfvcat

STEPS = ["validate", "plan", "onboard", "instantiate", "check", "render", "build", "lab-check", "dataplane",
         "teardown", "terminate"]
CLOUD_STEPS = ["validate", "onboard", "instantiate", "check", "endpoints", "cloud-check", "dataplane", "acl", "qos",
               "unplug", "terminate"]


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
        assert {s["frame"] for s in t["throughput"]} == ({"64", "512", "1518", "imix"} if cloud else {"64", "imix"})
        if cloud:  # zero-loss throughput above 0 through the deployed chain, ping and TCP through it
            assert all(s["throughput_pps"] > 0 for s in t["throughput"]), t["throughput"]
            assert t["details"]["pacing"] == "gap"
            _assert_acl(t["details"]["acl"])
            _assert_qos(t["details"]["qos"], t["details"]["figures"])
            rows = {r["check"]: r for r in t["placement"] if r["source"] == "cloud check"}
            assert rows["reachability (cloud)"]["status"] == rows["TCP (cloud)"]["status"] == "PASS", rows
            assert t["details"]["figures"]["tcp_mbps"] > 0
            ready = next(r for r in t["steps"] if r["name"] == "instantiate")["message"]
            assert "NFVCAT-VROUTER-READY" in ready, ready
    junit = ET.parse(results / "junit.xml").getroot()
    assert junit.get("failures") == "0" and junit.get("errors") == "0"
    assert junitxsd.problems((results / "junit.xml").read_bytes()) == []  # Jenkins' xUnit schema
    assert (ROOT / "tests" / "tdf" / "devcloud.yaml").is_file()


def _assert_acl(acl: dict[str, Any]) -> None:
    """The 20 seed rules as Heat deployed them, probed through the cloud: every class passed, each probe that ran
    passed, the rules no endpoint can prove are listed as such (never as passed)."""
    assert acl["rules"] == 20
    assert {k: v["status"] for k, v in acl["classes"].items()} == {"allowed": "PASS", "dropped": "PASS",
                                                                   "rate-limited": "PASS"}, acl["classes"]
    by_kind: dict[str, set[str]] = {}
    for p in acl["probes"]:
        by_kind.setdefault(p["kind"], set()).add(p["status"])
    assert by_kind["ether saddr"] == by_kind["ip saddr"] == by_kind["tcp dport"] == by_kind["udp dport"] == {"PASS"}
    assert by_kind["icmp limit"] == {"PASS"} and by_kind["ether daddr"] == {"NOT OBSERVABLE"}
    assert acl["classes"]["dropped"]["probed"] == 10 and acl["classes"]["dropped"]["not_observable"] == 8
    assert acl["classes"]["rate-limited"]["probed"] == 2
    for p in (p for p in acl["probes"] if p["kind"] == "icmp limit"):  # ICMP bounded, UDP at the same rate not
        assert p["over_received"]["icmp"] <= p["over_bound"] < p["over_received"]["udp"], p


def _assert_qos(qos: dict[str, Any], figures: dict[str, Any]) -> None:
    """The catalog's QoS (net-provider's values) as the OVS agent applied it: the limit (the TDF's max_kbps, a
    test policy) measured within 10 % and well below the unlimited figure, arms alternated; the DSCP mark received
    with the policy and 0 without."""
    bw, dscp = qos["bandwidth_limit"], qos["dscp_marking"]
    mark = catalog_qos.rule(catalog_qos.policies(ROOT)["realtime_qos_policy"], "dscp_marking", "net-provider")
    tdf = yaml.safe_load((ROOT / "tests/tdf/devcloud.yaml").read_text())
    asked = next(t for t in tdf["tests"] if t["name"] == "vrouter-real-host")["dataplane"]["qos"]["max_kbps"]
    assert bw["max_kbps"] == asked and bw["limit_mbps"] == asked / 1000 and bw["test_policy"]
    assert bw["status"] == "PASS" and bw["on_cloud"], bw
    assert abs(bw["limited_median_mbps"] - bw["limit_mbps"]) <= 0.1 * bw["limit_mbps"], bw
    assert bw["unlimited_median_mbps"] >= 1.5 * bw["limit_mbps"], bw
    assert len(bw["wire_mbps"]["limited"]) == len(bw["wire_mbps"]["unlimited"]) >= 3
    assert dscp["status"] == "PASS" and dscp["with_policy"] == [mark["dscp_mark"]] and dscp["without"] == [0], dscp
    assert f"mod_nw_tos:{mark['dscp_mark'] << 2}" in dscp["ovs"] and not dscp["ovs"].startswith("0 ")
    assert figures["qos_limited_mbps"] == bw["limited_median_mbps"]
    assert figures["dscp_with_policy"] == [mark["dscp_mark"]]
