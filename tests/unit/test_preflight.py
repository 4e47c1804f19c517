"""`nfvcat preflight` against HTTP-level fakes (requests-mock) of Nova, Neutron, Glance, Heat and Placement
(tests/unit/preflightfake.py): the catalog's verdicts on a cloud that can run them, then one rule broken at a time
(a flavor's host aggregate removed, huge pages exhausted, the SR-IOV agent dropped, networking-sfc disabled,
admin-only APIs hidden, no host access): the verdict and its reason change, named with the platform's rule."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import requests_mock
import yaml

from nfvcat import catalog, cli
from nfvcat.cloud import preflight
from nfvcat.cloud.hostaccess import reader
from tests.unit.cloudfake import connection
from tests.unit.preflightfake import HostCells, PreflightCloud, agents, catalog_flavors

SCHEDULER = "Nova scheduler (filters and NUMA fitting, nova.virt.hardware)"


@pytest.fixture
def fake(cloud: tuple[requests_mock.Mocker, Any]) -> PreflightCloud:
    return PreflightCloud(cloud[0])


DEFAULT_ACCESS = HostCells()


def judge(access: Any = DEFAULT_ACCESS, names: list[str] | None = None) -> dict[tuple[str, str], preflight.Case]:
    cases, _ = preflight.run(connection(), catalog.find_root(), names, reader(access))
    return {(c.entry, c.environment): c for c in cases}


def reason(case: preflight.Case, rule: str) -> preflight.Reason:
    return next(r for r in case.reasons if r.rule.startswith(rule))


def test_every_entry_and_environment_gets_a_verdict(fake: PreflightCloud) -> None:
    got = judge()
    expected = {(str(e.name), preflight._env_name(env)) for e, env in preflight.cases(catalog.find_root())}
    assert set(got) == expected and ("chain-vrouter", "ovs-dpdk") in got and ("net-provider", "default") in got
    assert {k for k, c in got.items() if c.verdict == preflight.RUNS} >= {
        ("chain-vrouter", "ovs-dpdk"), ("chain-sfc", "udp-flows"), ("vrouter-ha-pair", "ovs"),
        ("net-provider", "default")}
    placed = reason(got[("chain-vrouter", "ovs-dpdk")], SCHEDULER)
    assert placed.status == preflight.PASS and "vrouter.server on c-dpdk" in placed.detail
    # the SR-IOV VFs' NUMA nodes are no API's: the plan there is unknown, not a pass nor a failure
    sriov = got[("chain-vrouter", "sriov")]
    assert sriov.verdict == preflight.UNKNOWN
    assert "its PCI devices and their NUMA nodes estimated" in reason(sriov, SCHEDULER).detail
    # the image's lock cannot be compared with Glance's sha512: said, and the verdict is not changed by it
    assert reason(got[("chain-vrouter", "ovs-dpdk")], "image lock").status == preflight.NOTE


def test_a_flavors_host_aggregate_removed(fake: PreflightCloud) -> None:
    assert fake.aggregates is not None
    fake.aggregates = [a for a in fake.aggregates if a["metadata"]["nfv_class"] != "dpdk"]
    case = judge()[("chain-vrouter", "ovs-dpdk")]
    assert case.verdict == preflight.DOES_NOT_RUN
    agg = reason(case, "Nova AggregateInstanceExtraSpecsFilter (nfv.dpdk)")
    assert agg.status == preflight.FAIL and "no aggregate's host matches" in agg.detail
    assert reason(case, SCHEDULER).status == preflight.FAIL


def test_huge_pages_exhausted(fake: PreflightCloud) -> None:
    case = judge(HostCells(pages_used=8))[("chain-vrouter", "ovs-dpdk")]  # every 1 GiB page of every cell used
    assert case.verdict == preflight.DOES_NOT_RUN
    plan = reason(case, SCHEDULER)
    assert plan.status == preflight.FAIL and "1G pages" in plan.detail, plan.detail


def test_sriov_agent_dropped(fake: PreflightCloud) -> None:
    fake.agents = [a for a in fake.agents if a["agent_type"] != "NIC Switch agent"]
    case = judge()[("chain-vrouter", "sriov")]
    assert case.verdict == preflight.DOES_NOT_RUN
    bind = reason(case, "Neutron ML2 sriovnicswitch binding (vnic direct, physnet physnet_sriov)")
    assert bind.status == preflight.FAIL and "no live NIC Switch agent" in bind.detail
    fake.agents = [{**a, "alive": False} if a["agent_type"] == "NIC Switch agent" else a for a in agents()]
    assert judge()[("chain-vrouter", "sriov")].verdict == preflight.DOES_NOT_RUN  # a dead agent binds nothing


def test_networking_sfc_disabled(fake: PreflightCloud) -> None:
    fake.extensions = [e for e in fake.extensions if e not in ("sfc", "flow_classifier")]
    fake.resource_types = [t for t in fake.resource_types if t not in preflight.SFC_TYPES]  # Heat hides them too
    case = judge()[("chain-sfc", "udp-flows")]
    assert case.verdict == preflight.DOES_NOT_RUN
    sfc = reason(case, "Neutron networking-sfc")
    assert sfc.status == preflight.FAIL and "extension(s) flow_classifier, sfc not loaded" in sfc.detail
    assert "OS::Neutron::FlowClassifier" in reason(case, "Heat resource types").detail
    assert judge()[("chain-vrouter", "ovs-dpdk")].verdict == preflight.RUNS  # no SFC, no change


def test_qos_rule_type_and_template_version(fake: PreflightCloud) -> None:
    before = {k for k, c in judge().items() if any(r.rule.startswith("Neutron QoS") for r in c.reasons)}
    assert before, "a catalog entry with QoS rules"
    fake.rule_types = ["bandwidth_limit"]
    after = judge()
    for key in before:
        qos = reason(after[key], "Neutron QoS rule types")
        assert qos.status == preflight.FAIL and "dscp_marking not supported" in qos.detail
    fake.versions = ["heat_template_version.2018-08-31"]
    case = judge()[("net-provider", "default")]
    assert case.verdict == preflight.DOES_NOT_RUN
    assert reason(case, "Heat template versions").detail == "2021-04-16 not offered by this Heat"


def test_what_no_api_shows_is_unknown_never_a_pass(fake: PreflightCloud) -> None:
    case = judge(access=None)[("chain-vrouter", "ovs-dpdk")]  # no host access: the NUMA layout is estimated
    assert case.verdict == preflight.UNKNOWN
    plan = reason(case, SCHEDULER)
    assert plan.status == preflight.UNKNOWN and "preflight --host-access" in plan.detail
    fake.aggregates = None  # admin-only
    case = judge()[("chain-vrouter", "ovs-dpdk")]
    assert reason(case, "Nova AggregateInstanceExtraSpecsFilter").status == preflight.UNKNOWN
    assert case.verdict == preflight.UNKNOWN


def test_missing_flavor_image_and_changed_extra_spec(fake: PreflightCloud) -> None:
    fake.flavors = [f for f in fake.flavors if f["name"] != "nfv.dpdk"]
    case = judge()[("chain-vrouter", "ovs-dpdk")]
    assert reason(case, "Nova flavor nfv.dpdk").detail == "no such flavor (Heat constraint nova.flavor)"
    fake.flavors = catalog_flavors()
    for f in fake.flavors:
        if f["name"] == "nfv.dpdk":
            f["extra_specs"]["hw:mem_page_size"] = "2MB"
    case = judge()[("chain-vrouter", "ovs-dpdk")]
    assert "hw:mem_page_size='2MB' (catalog '1GB')" in reason(case, "Nova flavor nfv.dpdk").detail
    fake.images = []
    case = judge()[("chain-vrouter", "ovs-dpdk")]
    assert case.verdict == preflight.DOES_NOT_RUN
    assert reason(case, "Heat constraint glance.image").detail.startswith("no active Glance image named")


def test_command_formats_and_exit(fake: PreflightCloud, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    conn = connection()
    monkeypatch.setattr("nfvcat.cloud.connect.connect", lambda name, *deadlines: conn)
    fake.flavors = [f for f in fake.flavors if f["name"] != "nfv.qat.required"]
    assert cli.main(["preflight", "--os-cloud", "x", "-f", "json"]) == 0  # one does not run: none was named
    doc = json.loads(capsys.readouterr().out)
    verdicts = {(c["entry"], c["environment"]): c["verdict"] for c in doc["cases"]}
    assert verdicts[("vnf-ipsec-gw", "responder-qat")] == "does not run" and doc["cloud"]["hosts"] == 4
    assert doc["cloud"]["estimated_hosts"] == ["c-dpdk", "c-dpdk2", "c-pinned", "c-sriov"]  # no host access
    assert cli.main(["preflight", "vnf-ipsec-gw", "--os-cloud", "x", "-f", "junit"]) == 2  # named, cannot run
    suite = ET.fromstring(capsys.readouterr().out).find("testsuite")
    assert suite is not None
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert set(cases) == {"vnf-ipsec-gw [initiator]", "vnf-ipsec-gw [responder-qat]"}
    assert cases["vnf-ipsec-gw [responder-qat]"].find("failure") is not None
    assert cases["vnf-ipsec-gw [initiator]"].find("failure") is None
    assert cli.main(["preflight", "chain-vrouter", "--os-cloud", "x", "-f", "value", "-c", "verdict"]) == 0
    assert capsys.readouterr().out.split() == ["unknown", "unknown"]  # no host access: the layout is estimated
    assert cli.main(["preflight", "no-such-entry", "--os-cloud", "x"]) == 1
    assert "no such Heat entry: no-such-entry" in capsys.readouterr().err


def test_inventory_collect_reads_the_hosts_it_can(fake: PreflightCloud, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from tests.unit.test_host_topology import CAPS, NOVA_CONF

    conn = connection()
    monkeypatch.setattr("nfvcat.cloud.connect.connect", lambda name, *deadlines: conn)
    (tmp_path / "c-dpdk.capabilities.xml").write_text(CAPS)
    (tmp_path / "c-dpdk.nova.conf").write_text(NOVA_CONF)
    assert cli.main(["inventory", "collect", "--os-cloud", "x", "--host-access", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "# - host c-dpdk: NUMA cells, thread siblings, huge pages and pinned pCPUs read from the host's libvirt " \
           "capabilities" in text
    assert "# ESTIMATED, edit before use: host(s) c-dpdk2, c-pinned, c-sriov\n" in text
    hosts = {h["name"]: h for h in yaml.safe_load(text)["hosts"]}
    assert hosts["c-dpdk"]["numa_cells"][0]["hugepages"] == [{"size": "2048K", "total": 512, "reserved": 0, "used": 0},
                                                            {"size": "1048576K", "total": 2, "reserved": 0,
                                                             "used": 0}]
    assert hosts["c-dpdk"]["aggregate_metadata"] == {"nfv_class": "dpdk,pinned"}  # as Nova's filter merges them
