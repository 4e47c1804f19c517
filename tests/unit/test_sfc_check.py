"""nfvcat check of networking-sfc stacks (nfvcat.cloud.sfc_check) against the HTTP-level fake OpenStack: the
catalog's chain-sfc template as Heat returns it, networking-sfc's API (cloudfake.SfcApi), and a host's
br-int as ovs-ofctl prints it. Every verdict both ways."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests_mock
import yaml

from nfvcat.cloud import sfc_check
from nfvcat.cloud.hostaccess import LibvirtXml, SwitchAccess
from nfvcat.cloud.verdicts import ADMIN, FAIL, HOST_ACCESS, PASS, UNKNOWN, Verdict
from tests.unit.cloudfake import HEAT, NEUTRON, SfcApi, _discovery, connection

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = yaml.safe_load((ROOT / "templates/heat/chain-sfc/chain-sfc.yaml").read_text())
TEMPLATE["heat_template_version"] = str(TEMPLATE["heat_template_version"])  # a string in Heat's JSON
STACK, STACK_ID = "chain", "11111111-0000-4000-8000-000000000001"
HOST = "devcloud-smt"


def _uuid(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


class Chain:
    """The chain-sfc stack as Heat and Neutron hold it after a create."""

    def __init__(self, m: requests_mock.Mocker) -> None:
        self.m = m
        self.sfc = SfcApi(m)
        self.template = copy.deepcopy(TEMPLATE)
        self.ports: dict[str, dict[str, Any]] = {}
        self.ofports: dict[str, int] = {}
        self.servers = {"vrouter_a": _uuid(101), "vrouter_b": _uuid(102)}
        n = 0
        for vnf, sid in self.servers.items():
            for side in ("mgmt", "left", "right"):
                n += 1
                self.port(_uuid(200 + n), f"{vnf}-{side}", sid, f"fa:16:3e:00:00:{n:02x}")
        self.port(_uuid(300), "traffic-source", "", "fa:16:3e:00:01:00")
        self.port(_uuid(301), "elsewhere", _uuid(999), "fa:16:3e:00:01:01")
        pa = self.sfc.add("port_pairs", {"name": "chain-sfc-pp-a", "ingress": self.pid("vrouter_a-left"),
                                         "egress": self.pid("vrouter_a-right")})
        pb = self.sfc.add("port_pairs", {"name": "chain-sfc-pp-b", "ingress": self.pid("vrouter_b-left"),
                                         "egress": self.pid("vrouter_b-right")})
        self.ppg = self.sfc.add("port_pair_groups", {"name": "chain-sfc-ppg", "port_pairs": [pa["id"], pb["id"]]})
        self.fc = self.sfc.add("flow_classifiers", {"name": "chain-sfc-fc",
                                                    "logical_source_port": self.pid("traffic-source")})
        self.pc = self.sfc.add("port_chains", {"name": "chain-sfc", "port_pair_groups": [self.ppg["id"]],
                                               "flow_classifiers": [self.fc["id"]]})
        self.physical = {"port_pair_a": pa["id"], "port_pair_b": pb["id"], "port_pair_group": self.ppg["id"],
                         "classifier": self.fc["id"], "port_chain": self.pc["id"], **self.servers}
        self.parameters = {name: str(p.get("default", "")) for name, p in self.template["parameters"].items()}
        self.parameters.update(source_port="traffic-source", mgmt_network="nfv-mgmt", left_network="nfv-dpdk-left",
                               right_network="nfv-dpdk-right")
        self._register()

    def port(self, pid: str, name: str, device: str, mac: str) -> None:
        self.ports[pid] = {"id": pid, "name": name, "device_id": device, "mac_address": mac,
                           "binding:host_id": HOST, "binding:vif_details": {"bridge_name": "br-int"}}
        self.ofports[pid] = len(self.ofports) + 1

    def pid(self, name: str) -> str:
        return next(p for p, body in self.ports.items() if body["name"] == name)

    def _register(self) -> None:
        m = self.m
        link = {"rel": "stack", "href": f"{HEAT}/stacks/{STACK}/{STACK_ID}"}

        def resources(req: Any, ctx: Any) -> Any:
            out = []
            for name, body in (self.template.get("resources") or {}).items():
                out.append({"resource_name": name, "resource_type": body["type"],
                            "physical_resource_id": self.physical.get(name, _uuid(900)), "links": [link]})
            for vnf, sid in self.servers.items():
                out.append({"resource_name": "server", "resource_type": "OS::Nova::Server", "parent_resource": vnf,
                            "physical_resource_id": sid,
                            "links": [{"rel": "stack", "href": f"{HEAT}/stacks/{STACK}-{vnf}-x/{_uuid(1)}"}]})
            return {"resources": out}

        def resource(req: Any, ctx: Any) -> Any:
            name = req.path.rsplit("/", 1)[-1]
            attrs = {}
            if name in self.servers:
                attrs = {"left_port": self.pid(f"{name}-left"), "right_port": self.pid(f"{name}-right")}
            return {"resource": {"resource_name": name, "physical_resource_id": self.physical.get(name),
                                 "attributes": attrs}}

        def port(req: Any, ctx: Any) -> Any:
            body = self.ports.get(req.path.rsplit("/", 1)[-1])
            if body is None:
                ctx.status_code = 404
                return {"NeutronError": {"message": "port not found"}}
            return {"port": body}

        m.get(f"{HEAT}/stacks/{STACK}/resources?nested_depth=5", json=resources)
        m.get(f"{HEAT}/stacks/{STACK}/{STACK_ID}/template", json=lambda req, ctx: self.template)
        m.get(f"{HEAT}/stacks/{STACK}/{STACK_ID}", json=lambda req, ctx: {"stack": {"parameters": self.parameters}})
        m.get(re.compile(rf"^{HEAT}/stacks/{STACK}/{STACK_ID}/resources/[a-z_]+$"), json=resource)
        m.get(re.compile(rf"^{NEUTRON}/ports/[0-9a-f-]+$"), json=port)
        m.get(re.compile(rf"^{NEUTRON}/ports\?name="), json=lambda req, ctx: {"ports": [
            p for p in self.ports.values() if p["name"] == req.qs["name"][0]]})

    # what networking-sfc's OVS agent programs on br-int for this chain (its sfc_driver, OpenFlow 1.3 as
    # ovs-ofctl --no-names prints it); tests break one piece at a time
    def groups(self) -> str:
        buckets = ",".join(f"bucket=weight:1,actions=set_field:{self.ports[self.sfc.items['port_pairs'][pp]['ingress']]['mac_address']}->eth_dst,resubmit(,5)"  # noqa: E501
                           for pp in self.ppg["port_pairs"])
        return f"OFPST_GROUP_DESC reply (OF1.3) (xid=0x2):\n group_id={self.ppg['group_id']},type=select,{buckets}\n"

    def flows(self) -> str:
        src = self.ofports[self.pid("traffic-source")]
        lines = [" cookie=0x1, duration=9.1s, table=0, n_packets=0, n_bytes=0, priority=65535,vlan_tci=0x0fff/0x1fff "
                 "actions=drop",
                 f" cookie=0x2, duration=5.0s, table=0, n_packets=0, n_bytes=0, priority=30,udp,in_port={src},"
                 f"nw_src=10.210.0.0/24,nw_dst=10.211.0.0/24 actions=group:{self.ppg['group_id']}"]
        for pp in self.ppg["port_pairs"]:
            pair = self.sfc.items["port_pairs"][pp]
            ing, eg = pair["ingress"], pair["egress"]
            lines.append(f" cookie=0x3, duration=5.0s, table=10, n_packets=0, n_bytes=0, priority=1,mpls,"
                         f"dl_dst={self.ports[ing]['mac_address']},mpls_label=511 actions=strip_vlan,"
                         f"pop_mpls:0x0800,output:{self.ofports[ing]}")
            lines.append(f" cookie=0x4, duration=5.0s, table=0, n_packets=0, n_bytes=0, priority=30,udp,"
                         f"in_port={self.ofports[eg]},nw_src=10.210.0.0/24,nw_dst=10.211.0.0/24 actions=NORMAL")
        return "\n".join(lines) + "\n"


class FakeSwitch:
    """A SwitchAccess over the fake chain's br-int."""

    def __init__(self, chain: Chain) -> None:
        self.chain = chain
        self.name = "fake switch"
        self.flows: str | None = None
        self.groups: str | None = None
        self.calls: list[tuple[str, str, str]] = []

    def knows(self, host: str) -> bool:
        return host == HOST

    def ofport(self, host: str, port_id: str) -> int | None:
        return self.chain.ofports.get(port_id) if host == HOST else None

    def openflow(self, host: str, bridge: str, what: str) -> str | None:
        self.calls.append((host, bridge, what))
        if what == "dump-flows":
            return self.flows if self.flows is not None else self.chain.flows()
        return self.groups if self.groups is not None else self.chain.groups()

    def facts(self, server_id: str, host: str | None) -> None:
        return None


@pytest.fixture
def chain() -> Iterator[Chain]:
    with requests_mock.Mocker() as m:
        _discovery(m)
        yield Chain(m)


def run(access: Any = None) -> list[Verdict]:
    return sfc_check.check(connection(), STACK, access)


def by_check(verdicts: list[Verdict], check: str) -> list[Verdict]:
    return [v for v in verdicts if v.check == check]


def statuses(verdicts: list[Verdict], check: str) -> list[str]:
    return [v.status for v in by_check(verdicts, check)]


API_CHECKS = ("port pair ingress", "port pair egress", "port pair group members", "flow classifier source port",
              "port chain groups", "port chain classifiers")
SWITCH_CHECKS = ("chain group on br-int", "classifier flow on br-int", "ingress flow on br-int",
                 "egress flow on br-int")


def test_the_chain_the_template_means_passes_and_the_switch_needs_host_access(chain: Chain) -> None:
    verdicts = run()
    for check in API_CHECKS:
        assert statuses(verdicts, check) and set(statuses(verdicts, check)) == {PASS}, check
    assert len(by_check(verdicts, "port pair ingress")) == 2
    assert {v.vnf for v in by_check(verdicts, "port pair ingress")} == {"vrouter_a", "vrouter_b"}
    for check in SWITCH_CHECKS:
        assert statuses(verdicts, check) == [HOST_ACCESS], check


def test_a_port_pair_on_the_other_vnfs_port_fails_ingress(chain: Chain) -> None:
    pa = chain.physical["port_pair_a"]
    chain.sfc.items["port_pairs"][pa]["ingress"] = chain.pid("vrouter_b-left")
    verdicts = run()
    bad = [v for v in by_check(verdicts, "port pair ingress") if v.status == FAIL]
    assert len(bad) == 1 and bad[0].subject == "chain-sfc-pp-a" and "vrouter_a-left" in bad[0].detail
    assert set(statuses(verdicts, "port pair egress")) == {PASS}


def test_a_port_pair_on_a_port_of_no_server_of_the_stack_fails(chain: Chain) -> None:
    chain.template["resources"]["port_pair_b"]["properties"]["egress"] = "elsewhere"
    chain.sfc.items["port_pairs"][chain.physical["port_pair_b"]]["egress"] = chain.pid("elsewhere")
    bad = [v for v in by_check(run(), "port pair egress") if v.status == FAIL]
    assert len(bad) == 1 and "not a port of a server of this stack" in bad[0].detail


def test_a_group_without_one_of_its_pairs_fails(chain: Chain) -> None:
    resp = connection().network.request(f"/sfc/port_pair_groups/{chain.ppg['id']}", "PUT",
                                        json={"port_pair_group": {"port_pairs": [chain.physical["port_pair_a"]]}})
    assert resp.status_code == 200 and chain.ppg["port_pairs"] == [chain.physical["port_pair_a"]]
    v = by_check(run(), "port pair group members")
    assert [x.status for x in v] == [FAIL] and "port_pair_b" in v[0].detail


def test_a_classifier_on_another_source_port_fails(chain: Chain) -> None:
    chain.fc["logical_source_port"] = chain.pid("elsewhere")
    v = by_check(run(), "flow classifier source port")
    assert [x.status for x in v] == [FAIL] and "traffic-source" in v[0].detail and "elsewhere" in v[0].detail


def test_the_chains_groups_in_the_templates_order(chain: Chain) -> None:
    second = chain.sfc.add("port_pair_groups", {"name": "second", "port_pairs": []})
    chain.physical["second_group"] = second["id"]
    chain.template["resources"]["second_group"] = {"type": "OS::Neutron::PortPairGroup", "properties": {}}
    chain.template["resources"]["port_chain"]["properties"]["port_pair_groups"] = [
        {"get_resource": "port_pair_group"}, {"get_resource": "second_group"}]
    chain.pc["port_pair_groups"] = [chain.ppg["id"], second["id"]]
    assert statuses(run(), "port chain groups") == [PASS]
    chain.pc["port_pair_groups"] = [second["id"], chain.ppg["id"]]
    v = by_check(run(), "port chain groups")
    assert [x.status for x in v] == [FAIL] and "['second_group', 'port_pair_group']" in v[0].detail


def test_a_chain_with_another_classifier_fails(chain: Chain) -> None:
    other = chain.sfc.add("flow_classifiers", {"name": "other", "logical_source_port": chain.pid("elsewhere")})
    chain.pc["flow_classifiers"] = [other["id"]]
    assert statuses(run(), "port chain classifiers") == [FAIL]


def test_a_resource_gone_from_neutron_fails(chain: Chain) -> None:
    del chain.sfc.items["flow_classifiers"][chain.fc["id"]]
    chain.pc["flow_classifiers"] = []
    verdicts = run()
    assert [v.subject for v in verdicts if v.check == "exists in Neutron" and v.status == FAIL] == ["classifier"]


def test_an_intent_it_cannot_resolve_is_unknown(chain: Chain) -> None:
    chain.template["resources"]["classifier"]["properties"]["logical_source_port"] = {
        "str_replace": {"template": "x", "params": {}}}
    v = by_check(run(), "flow classifier source port")
    assert [x.status for x in v] == [UNKNOWN] and "str_replace" in v[0].detail


def test_a_parameter_the_stack_does_not_have_is_unknown(chain: Chain) -> None:
    del chain.parameters["source_port"]
    assert statuses(run(), "flow classifier source port") == [UNKNOWN]


def test_the_switch_programmed_as_networking_sfc_does_passes(chain: Chain) -> None:
    switch = FakeSwitch(chain)
    assert isinstance(switch, SwitchAccess)
    verdicts = run(switch)
    for check in SWITCH_CHECKS:
        assert statuses(verdicts, check) and set(statuses(verdicts, check)) == {PASS}, check
    assert len(by_check(verdicts, "ingress flow on br-int")) == 2
    assert len(by_check(verdicts, "egress flow on br-int")) == 2
    assert {(h, b) for h, b, _ in switch.calls} == {(HOST, "br-int")}


def test_a_missing_or_wrong_group_fails(chain: Chain) -> None:
    switch = FakeSwitch(chain)
    switch.groups = "OFPST_GROUP_DESC reply (OF1.3) (xid=0x2):\n"
    assert statuses(run(switch), "chain group on br-int") == [FAIL]
    switch.groups = chain.groups().replace(chain.ports[chain.pid("vrouter_b-left")]["mac_address"],
                                           "fa:16:3e:99:99:99")
    v = by_check(run(switch), "chain group on br-int")
    assert [x.status for x in v] == [FAIL] and "fa:16:3e:99:99:99" in v[0].detail


@pytest.mark.parametrize(("check", "drop"), [
    ("classifier flow on br-int", "actions=group:"),
    ("ingress flow on br-int", "table=10,"),
    ("egress flow on br-int", "actions=NORMAL"),
])
def test_a_missing_flow_fails(chain: Chain, check: str, drop: str) -> None:
    switch = FakeSwitch(chain)
    switch.flows = "\n".join(line for line in chain.flows().splitlines() if drop not in line)
    verdicts = run(switch)
    assert FAIL in statuses(verdicts, check)
    others = [c for c in SWITCH_CHECKS if c != check]
    assert all(set(statuses(verdicts, c)) == {PASS} for c in others)


def test_a_port_missing_from_the_switch_fails(chain: Chain) -> None:
    switch = FakeSwitch(chain)
    switch.flows = chain.flows()
    del chain.ofports[chain.pid("vrouter_a-left")]
    bad = [v for v in by_check(run(switch), "ingress flow on br-int") if v.status == FAIL]
    assert len(bad) == 1 and "no OpenFlow port" in bad[0].detail


def test_host_access_without_a_switch_still_needs_host_access(chain: Chain, tmp_path: Path) -> None:
    verdicts = run(LibvirtXml(tmp_path))
    for check in SWITCH_CHECKS:
        assert statuses(verdicts, check) == [HOST_ACCESS]


def test_hidden_binding_needs_admin_never_passes(chain: Chain) -> None:
    for p in chain.ports.values():
        del p["binding:host_id"]
    verdicts = run(FakeSwitch(chain))
    assert set(statuses(verdicts, "ingress flow on br-int")) == {ADMIN}
    assert PASS not in {v.status for c in SWITCH_CHECKS for v in by_check(verdicts, c)}


def test_a_stack_without_sfc_resources_has_no_sfc_verdicts(chain: Chain) -> None:
    chain.template["resources"] = {k: v for k, v in chain.template["resources"].items()
                                   if not v["type"].startswith("OS::Neutron::")}
    assert run() == []
