"""ACL probes and QoS through the cloud (nfvcat_testbeds.lab.aclprobe, nfvcat_testbeds.targets.cloudacl and
cloudqos, the catalog's QoS policies): which probe proves which rule of the vRouter's seed ACL, the verdicts
from the probes' counts, the rules Heat deployed and the cloud's policies read through an OpenStack faked at the
HTTP level."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from nfvcat import catalog
from nfvcat.catalog import qos as catalog_qos
from nfvcat.core import hot
from nfvcat_testbeds.lab import aclprobe, frames
from nfvcat_testbeds.targets import cloudacl, cloudqos
from tests.unit.cloudfake import HEAT, NEUTRON, cloud  # noqa: F401  (the fixture)

ROOT = catalog.find_root()
assert ROOT is not None


def seed_rules() -> dict[str, list[str]]:
    params = yaml.safe_load((ROOT / "templates/heat/vnf-vrouter/vrouter.yaml").read_text())["parameters"]
    return {name: list(params[name]["default"]) for name in cloudacl.ACL_PARAMETERS}


def test_every_seed_rule_has_its_probe_and_side() -> None:
    probes = aclprobe.probes(seed_rules())
    assert len(probes) == 20
    assert all(p.side in ("left", "right") and p.kind for p in probes), [p for p in probes if not p.kind]
    kinds = {p.kind: sum(1 for q in probes if q.kind == p.kind) for p in probes}
    assert kinds == {"ether saddr": 4, "ether daddr": 2, "vlan id": 4, "ip saddr": 2, "multicast": 2, "tcp dport": 2,
                     "udp dport": 2, "icmp limit": 2}
    limit = next(p for p in probes if p.kind == "icmp limit")
    assert (limit.klass, limit.value, limit.burst) == (aclprobe.RATE_LIMITED, "1000", 5)
    assert {p.side for p in probes if p.chain == "acl_right_l2"} == {"right"}
    assert [p.side for p in probes if p.chain == "acl_forward"] == ["left"] * 5 + ["right"] * 5


def test_rendered_rules_take_the_interface_names_and_unknown_rules_stay_unknown() -> None:
    rendered = {"acl_forward": ['iifname "vr-left" tcp dport 23 counter drop', "iifname vr-right-x udp dport 1 drop",
                                'iifname "vr-right" ct state invalid drop']}
    probes = aclprobe.probes(rendered, left="vr-left", right="vr-right")
    assert [p.side for p in probes] == ["left", "", "right"]  # vr-right-x is another interface
    assert probes[2].klass == aclprobe.UNKNOWN and probes[0].klass == aclprobe.DROPPED
    burst = aclprobe.kind("ip protocol icmp limit rate over 50/second burst 9 packets drop")
    assert burst == ("icmp limit", "50", 9)


def test_deployed_rules_are_the_nested_stacks_parameters(cloud: Any) -> None:  # noqa: F811
    m, conn = cloud
    rules = seed_rules()
    m.get(f"{HEAT}/stacks/st/resources", json={"resources": [
        {"resource_name": "vrouter", "resource_type": "../vnf-vrouter/vrouter.yaml", "physical_resource_id": "n1"}]})
    # Heat shows json parameters as JSON text
    m.get(f"{HEAT}/stacks/n1", json={"stack": {"parameters": {k: json.dumps(v) for k, v in rules.items()}}})
    assert cloudacl.deployed_rules(conn, "st") == rules
    m.get(f"{HEAT}/stacks/n1", json={"stack": {"parameters": {"acl_forward": "[]"}}})
    with pytest.raises(RuntimeError, match="no nested VNF stack"):
        cloudacl.deployed_rules(conn, "st")


def _trials(sent: int, received: int, seconds: float = 2.0) -> list[tuple[int, int, float]]:
    return [(sent, received, seconds)] * 3


def test_rate_limit_verdict_tells_the_rule_from_the_path() -> None:
    under = _trials(500, 500)
    ok = cloudacl.rate_verdict(1000, 5, {"under": under, "over": _trials(6000, 2005)},
                               {"under": under, "over": _trials(6000, 4000)})
    assert ok["status"] == "PASS", ok
    assert ok["over_bound"] == pytest.approx((1000 * 2 + 5) * 1.1)
    # the path itself passes no more than the bound: the rule cannot be told from the loss
    same = cloudacl.rate_verdict(1000, 5, {"under": under, "over": _trials(6000, 1500)},
                                 {"under": under, "over": _trials(6000, 1600)})
    assert same["status"] == "FAIL" and "inconclusive" in same["detail"]
    # more ICMP than the bucket lets through: no limit at all
    loose = cloudacl.rate_verdict(1000, 5, {"under": under, "over": _trials(6000, 4000)},
                                  {"under": under, "over": _trials(6000, 4000)})
    assert loose["status"] == "FAIL" and "above the bound" in loose["detail"]
    # ICMP lost under the limit while UDP was not (measured with trafgen's once-a-second bursts)
    bursty = cloudacl.rate_verdict(1000, 5, {"under": _trials(500, 14), "over": _trials(6000, 30)},
                                   {"under": under, "over": _trials(6000, 4000)})
    assert bursty["status"] == "FAIL" and "under its rate" in bursty["detail"]


def test_classes_never_count_what_was_not_observable_as_passed() -> None:
    rows = [{"class": "allowed", "status": "PASS"}, {"class": "dropped", "status": "PASS"},
            {"class": "dropped", "status": cloudacl.NOT_OBSERVABLE},
            {"class": "rate-limited", "status": cloudacl.NOT_OBSERVABLE}]
    got = cloudacl.classes(rows)
    assert got["dropped"] == {"status": "PASS", "probed": 1, "passed": 1, "not_observable": 1}
    assert got["rate-limited"]["status"] == "FAIL"  # nothing of it ran
    assert cloudacl.classes([{"class": "dropped", "status": "FAIL"}])["dropped"]["status"] == "FAIL"


def test_control_source_is_outside_every_blocked_prefix() -> None:
    assert cloudacl.control_source(["192.0.2.0/24", "198.51.100.0/24"]) == "203.0.113.7"
    assert cloudacl.control_source(["203.0.0.0/8"]) == "100.64.0.7"
    assert cloudacl.spoofed_source("192.0.2.0/24") == "192.0.2.7"
    assert cloudacl.control_source(["192.0.2.0/24"], 2) == "203.0.113.9"
    # one control MAC per probe, never a blocked one
    macs = [cloudacl.control_mac(["02:00:00:0b:ad:71"], n) for n in range(4)]
    assert macs == ["02:00:00:0b:ad:70", "02:00:00:0b:ad:72", "02:00:00:0b:ad:73", "02:00:00:0b:ad:74"]


def test_icmp_echo_frame_checksums_and_size() -> None:
    f = frames.icmp_echo_frame("02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.0.0.2", 64, 0x6E66, 3)
    assert len(f) == 60 and f[23] == 1 and f[34] == 8  # FCS not written; protocol ICMP; echo request
    assert frames.checksum(f[14:34]) == 0 and frames.checksum(f[34:]) == 0
    with pytest.raises(ValueError):
        frames.icmp_echo_frame("02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.0.0.2", 40, 1)


def test_catalog_qos_policies_come_from_net_provider() -> None:
    got = catalog_qos.policies(ROOT)
    template = yaml.safe_load((ROOT / "templates/heat/net-provider/net-provider.yaml").read_text())["parameters"]
    bw = catalog_qos.rule(got["best_effort_qos_policy"], "bandwidth_limit", "here")
    assert bw == {"type": "bandwidth_limit", "max_kbps": template["best_effort_max_kbps"]["default"],
                  "max_burst_kbps": template["best_effort_max_burst_kbps"]["default"]}
    dscp = catalog_qos.rule(got["realtime_qos_policy"], "dscp_marking", "here")
    assert dscp["dscp_mark"] == template["realtime_dscp"]["default"]
    assert got["best_effort_qos_policy"]["name"] == "nfv-qos-best-effort"  # name_prefix of examples/default


def test_qos_values_follow_the_parameters_and_unresolved_ones_are_refused() -> None:
    data = {"parameters": {"rate": {"type": "number", "default": 5}},
            "resources": {"p": {"type": "OS::Neutron::QoSPolicy", "properties": {"name": "x"}},
                          "r": {"type": "OS::Neutron::QoSBandwidthLimitRule",
                                "properties": {"policy": {"get_resource": "p"}, "max_kbps": {"get_param": "rate"},
                                               "max_burst_kbps": {"get_attr": ["a", "b"]}}}},
            "outputs": {"out": {"value": {"get_resource": "p"}}}}
    got = hot.qos_policies(data, {"rate": 7})
    assert list(got) == ["out"] and got["out"]["rules"][0]["max_kbps"] == 7
    with pytest.raises(Exception, match="max_burst_kbps not resolved"):
        catalog_qos.rule(got["out"], "bandwidth_limit", "t.yaml")


def test_bandwidth_verdict_within_the_tolerance_and_well_below_the_free_path() -> None:
    assert cloudqos.wire_mbps(90.0, 1448) == pytest.approx(90.0 * 1514 / 1448)
    ok = cloudqos.bandwidth_verdict(100000, 0.1, [300, 250, 500], [95, 96, 94])
    assert ok["status"] == "PASS" and ok["limited_median_mbps"] == 95
    assert cloudqos.bandwidth_verdict(100000, 0.1, [300, 250, 500], [230, 260, 280])["status"] == "FAIL"
    slow = cloudqos.bandwidth_verdict(100000, 0.1, [120, 130, 125], [95, 96, 94])
    assert slow["status"] == "FAIL" and "inconclusive" in slow["detail"]


def test_dscp_verdict_needs_the_mark_with_the_policy_and_none_without() -> None:
    assert cloudqos.dscp_verdict(46, [184] * 10, [0] * 10)["status"] == "PASS"
    assert cloudqos.dscp_verdict(46, [184] * 9 + [0], [0] * 10)["status"] == "FAIL"
    assert cloudqos.dscp_verdict(46, [184] * 10, [184] * 10)["status"] == "FAIL"
    assert cloudqos.dscp_verdict(46, [], [0])["status"] == "FAIL"  # nothing received is no pass


def test_the_clouds_policy_is_found_by_name_and_compared_with_the_catalogs(cloud: Any) -> None:  # noqa: F811
    m, conn = cloud
    rule = {"type": "bandwidth_limit", "max_kbps": 100000, "max_burst_kbps": 1000}
    body = {"id": "q1", "name": "nfv-qos-best-effort", "rules": [
        {"id": "r1", "type": "bandwidth_limit", "max_kbps": 100000, "max_burst_kbps": 1000, "direction": "egress"}]}
    m.get(f"{NEUTRON}/qos/policies?name=nfv-qos-best-effort", json={"policies": [body]})
    found = cloudqos.cloud_policy(conn, "nfv-qos-best-effort")
    assert found.id == "q1" and cloudqos.same_rule(found, rule)
    assert not cloudqos.same_rule(found, {**rule, "max_kbps": 50000})
    m.get(f"{NEUTRON}/qos/policies?name=gone", json={"policies": []})
    with pytest.raises(RuntimeError, match="0 QoS policies named gone"):
        cloudqos.cloud_policy(conn, "gone")


def test_chain_vrouter_passes_its_qos_policy_to_the_vrouter() -> None:
    data = yaml.safe_load((ROOT / "templates/heat/chain-vrouter/chain-vrouter.yaml").read_text())
    assert data["parameters"]["data_qos_policy"]["default"] == ""
    assert data["resources"]["vrouter"]["properties"]["data_qos_policy"] == {"get_param": "data_qos_policy"}
