"""`nfvcat check`'s redundancy verdicts (nfvcat.cloud.redundancy_check) against HTTP-level fakes (requests-mock) of
Heat, Nova and Neutron: an HA pair on two hosts whose ports allow the VIPs passes; each way it can be wrong
fails with the check named; a server without a host is "unknown", never "pass"."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
import requests_mock

from nfvcat.cloud import redundancy_check as rc
from nfvcat.cloud import verdicts as vd
from tests.unit.cloudfake import connection, sent

VIP_LEFT, VIP_RIGHT = "10.110.0.254", "10.111.0.254"


def data_port(pid: str, device: str, net: str, pairs: list[str]) -> dict[str, Any]:
    return {"id": pid, "name": pid, "device_id": device, "network_id": net, "port_security_enabled": True,
            "fixed_ips": [{"ip_address": "10.0.0.9"}], "allowed_address_pairs": [{"ip_address": p} for p in pairs]}


def pair_cloud() -> dict[str, Any]:
    """A correct pair: group g1 (anti-affinity) with servers a and b on two hosts, two VIP ports."""
    ports = {
        "vip-left": {"id": "vip-left", "name": "vip-left", "device_id": "", "network_id": "left",
                     "fixed_ips": [{"ip_address": VIP_LEFT}], "allowed_address_pairs": []},
        "vip-right": {"id": "vip-right", "name": "vip-right", "device_id": "", "network_id": "right",
                      "fixed_ips": [{"ip_address": VIP_RIGHT}], "allowed_address_pairs": []},
        "a-left": data_port("a-left", "a", "left", [VIP_LEFT, "10.111.0.0/24"]),
        "a-right": data_port("a-right", "a", "right", [VIP_RIGHT]),
        "b-left": data_port("b-left", "b", "left", [VIP_LEFT]),
        "b-right": data_port("b-right", "b", "right", ["10.111.0.0/24"]),  # the VIP inside a prefix
        "a-mgmt": data_port("a-mgmt", "a", "mgmt", []),
    }
    return {"group": {"id": "g1", "name": "pair", "policy": "anti-affinity", "members": ["a", "b"]},
            "servers": {"a": {"id": "a", "name": "pair-a", "status": "ACTIVE", "hostId": "h1" * 20,
                              "OS-EXT-SRV-ATTR:host": "devcloud-smt"},
                        "b": {"id": "b", "name": "pair-b", "status": "ACTIVE", "hostId": "h2" * 20,
                              "OS-EXT-SRV-ATTR:host": "devcloud-nosmt"}},
            "ports": ports}


class Fake:
    def __init__(self, m: requests_mock.Mocker, state: dict[str, Any], group: bool = True) -> None:
        self.state = state
        resources = [{"resource_type": "OS::Nova::Server", "physical_resource_id": sid,
                      "resource_name": f"router_{sid}"} for sid in state["servers"]]
        resources += [{"resource_type": "OS::Neutron::Port", "physical_resource_id": pid, "resource_name": pid}
                      for pid in state["ports"]]
        if group:
            resources.append({"resource_type": "OS::Nova::ServerGroup", "physical_resource_id": "g1",
                              "resource_name": "server_group"})
        m.get(re.compile(r"http://heat\.test/v1/p/stacks/pair/resources.*"), json={"resources": resources})
        m.get(re.compile(r"http://nova\.test/v2\.1/os-server-groups/g1$"), json=self._group)
        m.get(re.compile(r"http://nova\.test/v2\.1/servers/[^/?]+$"), json=self._server)
        m.get(re.compile(r"http://neutron\.test/(v2\.0/)?ports/[^/?]+$"), json=self._port)
        m.get(re.compile(r"http://neutron\.test/(v2\.0/)?ports\?.*"), json=self._ports)

    def _group(self, req: Any, ctx: Any) -> dict[str, Any]:
        return {"server_group": self.state["group"]}

    def _server(self, req: Any, ctx: Any) -> dict[str, Any]:
        return {"server": self.state["servers"][req.path.rsplit("/", 1)[1]]}

    def _port(self, req: Any, ctx: Any) -> dict[str, Any]:
        return {"port": self.state["ports"][req.path.rsplit("/", 1)[1]]}

    def _ports(self, req: Any, ctx: Any) -> dict[str, Any]:
        device, net = req.qs["device_id"][0], req.qs["network_id"][0]
        return {"ports": [p for p in self.state["ports"].values() if p["device_id"] == device
                          and p["network_id"] == net]}


@pytest.fixture
def mock(cloud: tuple[requests_mock.Mocker, Any]) -> requests_mock.Mocker:
    return cloud[0]


def verdicts(m: requests_mock.Mocker, state: dict[str, Any], group: bool = True) -> list[vd.Verdict]:
    Fake(m, state, group)
    return rc.check(connection(), "pair")


def statuses(found: list[vd.Verdict]) -> dict[tuple[str, str], str]:
    return {(v.subject, v.check): v.status for v in found}


def not_passed(found: list[vd.Verdict]) -> set[tuple[str, str, str]]:
    return {(v.subject, v.check, v.status) for v in found if v.status != vd.PASS}


def test_pair_on_two_hosts_allowing_the_vips_passes(mock: requests_mock.Mocker) -> None:
    found = verdicts(mock, pair_cloud())
    assert not_passed(found) == set()
    assert statuses(found) == {
        ("pair", "anti-affinity policy"): vd.PASS,
        ("pair", "members (>= 2 servers of the stack)"): vd.PASS,
        ("pair", "members on different hosts"): vd.PASS,
        ("a-left", f"allows VIP {VIP_LEFT}"): vd.PASS, ("b-left", f"allows VIP {VIP_LEFT}"): vd.PASS,
        ("a-right", f"allows VIP {VIP_RIGHT}"): vd.PASS, ("b-right", f"allows VIP {VIP_RIGHT}"): vd.PASS,
    }
    # the group was read with the microversion that has "policy"
    assert sent(mock, "GET", r"os-server-groups/g1")[0].headers["OpenStack-API-Version"] == "compute 2.64"


def test_both_servers_on_one_host_fail(mock: requests_mock.Mocker) -> None:
    state = pair_cloud()
    state["servers"]["b"]["OS-EXT-SRV-ATTR:host"] = "devcloud-smt"
    found = verdicts(mock, state)
    assert not_passed(found) == {("pair", "members on different hosts", vd.FAIL)}
    assert "router_a, router_b on devcloud-smt" in next(v.detail for v in found if v.status == vd.FAIL)


def test_without_admin_the_host_ids_tell_different_hosts(mock: requests_mock.Mocker) -> None:
    state = pair_cloud()
    for srv in state["servers"].values():
        del srv["OS-EXT-SRV-ATTR:host"]
    assert not_passed(verdicts(mock, state)) == set()


def test_without_admin_equal_host_ids_fail(mock: requests_mock.Mocker) -> None:
    state = pair_cloud()
    for srv in state["servers"].values():
        del srv["OS-EXT-SRV-ATTR:host"]
        srv["hostId"] = "same" * 10
    assert not_passed(verdicts(mock, state)) == {("pair", "members on different hosts", vd.FAIL)}


def test_a_server_without_a_host_is_unknown(mock: requests_mock.Mocker) -> None:
    state = pair_cloud()
    srv = state["servers"]["b"]
    del srv["OS-EXT-SRV-ATTR:host"]
    srv.update(hostId="", status="ERROR")
    assert not_passed(verdicts(mock, state)) == {("pair", "members on different hosts", vd.UNKNOWN)}


def test_another_policy_fails(mock: requests_mock.Mocker) -> None:
    state = pair_cloud()
    state["group"]["policy"] = "affinity"
    assert not_passed(verdicts(mock, state)) == {("pair", "anti-affinity policy", vd.FAIL)}


def test_soft_anti_affinity_is_judged_by_the_hosts(mock: requests_mock.Mocker) -> None:
    state = pair_cloud()
    state["group"]["policy"] = "soft-anti-affinity"
    assert not_passed(verdicts(mock, state)) == set()


def test_soft_anti_affinity_on_one_host_passes_and_says_so(mock: requests_mock.Mocker) -> None:
    state = pair_cloud()
    state["group"]["policy"] = "soft-anti-affinity"
    state["servers"]["b"]["OS-EXT-SRV-ATTR:host"] = "devcloud-smt"
    state["servers"]["a"]["OS-EXT-SRV-ATTR:host"] = "devcloud-smt"
    got = verdicts(mock, state)
    assert not_passed(got) == set()
    hosts = next(v for v in got if v.check == "members on different hosts")
    assert "allowed it" in hosts.detail and "no host redundancy" in hosts.detail


def test_strict_anti_affinity_on_one_host_fails(mock: requests_mock.Mocker) -> None:
    state = pair_cloud()
    state["servers"]["b"]["OS-EXT-SRV-ATTR:host"] = "devcloud-smt"
    state["servers"]["a"]["OS-EXT-SRV-ATTR:host"] = "devcloud-smt"
    assert not_passed(verdicts(mock, state)) == {("pair", "members on different hosts", vd.FAIL)}


def test_nested_servers_are_named_by_their_parent_resource(mock: requests_mock.Mocker) -> None:
    state = pair_cloud()
    state["group"]["members"] = ["a"]
    fake = Fake(mock, state)
    resources = [{"resource_type": "OS::Nova::Server", "physical_resource_id": sid, "resource_name": "server",
                  "parent_resource": f"vrouter_{sid}"} for sid in state["servers"]]
    resources.append({"resource_type": "OS::Nova::ServerGroup", "physical_resource_id": "g1",
                      "resource_name": "pair_group"})
    mock.get(re.compile(r"http://heat\.test/v1/p/stacks/pair/resources.*"), json={"resources": resources})
    found = rc.check(connection(), "pair")
    assert fake.state is state
    detail = next(v.detail for v in found if v.check.startswith("members ("))
    assert detail == "vrouter_a; not in the group: vrouter_b"


def test_a_server_outside_the_group_fails(mock: requests_mock.Mocker) -> None:
    state = pair_cloud()
    state["group"]["members"] = ["a"]
    found = verdicts(mock, state)
    assert not_passed(found) == {("pair", "members (>= 2 servers of the stack)", vd.FAIL)}
    assert "not in the group: router_b" in next(v.detail for v in found if v.status == vd.FAIL)


@pytest.mark.parametrize("port", ["a-left", "b-right"])
def test_a_port_not_allowing_its_vip_fails(mock: requests_mock.Mocker, port: str) -> None:
    state = pair_cloud()
    state["ports"][port]["allowed_address_pairs"] = [{"ip_address": "10.99.0.0/24"}]
    vip = VIP_LEFT if port.endswith("left") else VIP_RIGHT
    assert not_passed(verdicts(mock, state)) == {(port, f"allows VIP {vip}", vd.FAIL)}


def test_a_server_without_a_port_on_the_vip_network_fails(mock: requests_mock.Mocker) -> None:
    state = pair_cloud()
    del state["ports"]["b-right"]
    assert not_passed(verdicts(mock, state)) == {("router_b", f"allows VIP {VIP_RIGHT}", vd.FAIL)}


def test_a_vip_port_without_address_fails(mock: requests_mock.Mocker) -> None:
    state = pair_cloud()
    state["ports"]["vip-left"]["fixed_ips"] = []
    assert not_passed(verdicts(mock, state)) == {("vip-left", "VIP address reserved", vd.FAIL)}


def test_a_stack_without_server_group_has_no_redundancy_verdicts(mock: requests_mock.Mocker) -> None:
    assert verdicts(mock, copy.deepcopy(pair_cloud()), group=False) == []
