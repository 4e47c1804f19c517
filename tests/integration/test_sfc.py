"""networking-sfc on the dev cloud: the catalog's chain-sfc instantiated, checked with host access (the chain's
group and flows on br-int), a wrong port pair injected and caught by the check that names it, then deleted with
nothing left behind."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.conftest import counts, glance_name, nfvcat

STACK = "chain-sfc"
SOURCE = "traffic-source"  # the example environment's source_port
pytestmark = pytest.mark.usefixtures("onboarded")


def sfc(conn: Any, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    resp = conn.network.request(f"/sfc/{path}", method, json=body, raise_exc=False)
    assert resp.status_code < 300, f"{method} /sfc/{path}: {resp.status_code} {resp.text[:300]}"
    return resp.json() if resp.content else {}


def sfc_counts(conn: Any) -> dict[str, int]:
    return {kind: len(sfc(conn, "GET", kind)[kind]) for kind in
            ("port_pairs", "port_pair_groups", "flow_classifiers", "port_chains")}


NETWORKS = {"sfc-left": ("10.210.0.0/24", 1210), "sfc-right": ("10.211.0.0/24", 1211)}


@pytest.fixture
def sfc_networks(conn: Any) -> Iterator[None]:
    """The chain's left and right networks: VXLAN (networking-sfc's OVS driver steers only ports of VXLAN
    networks), made by the test and removed at the end."""
    assert nfvcat("terminate", STACK).returncode == 0  # a failed earlier run may have left the chain
    made = []
    try:
        for name, (cidr, vni) in NETWORKS.items():
            net = conn.network.find_network(name) or conn.network.create_network(
                name=name, provider_network_type="vxlan", provider_segmentation_id=vni)
            made.append(net)
            if not list(conn.network.subnets(network_id=net.id)):
                conn.network.create_subnet(network_id=net.id, ip_version=4, cidr=cidr, gateway_ip=None)
        yield
    finally:
        for net in made:
            for port in conn.network.ports(network_id=net.id):
                if not port.device_owner:
                    conn.network.delete_port(port)
            conn.network.delete_network(net)


@pytest.fixture
def traffic_source(conn: Any, sfc_networks: None) -> Iterator[Any]:
    """The chain's classified traffic enters from a port of a server outside the stack (a traffic source on the
    left network, on the OVS-DPDK host); removed at the end whatever happens."""
    for old in conn.compute.servers(name=f"^{SOURCE}$"):
        conn.compute.delete_server(old)
        conn.compute.wait_for_delete(old)
    for old in conn.network.ports(name=SOURCE):
        conn.network.delete_port(old)
    net = conn.network.find_network("sfc-left")
    port = conn.network.create_port(name=SOURCE, network_id=net.id)
    server = None
    try:
        image = conn.image.find_image(glance_name("vrouter"))
        flavor = conn.compute.find_flavor("nfv.dpdk")
        server = conn.compute.create_server(name=SOURCE, image_id=image.id, flavor_id=flavor.id,
                                            networks=[{"port": port.id}])
        server = conn.compute.wait_for_server(server, wait=180)
        yield server
    finally:
        nfvcat("terminate", STACK)  # the chain's classifier holds the source port
        if server is not None:
            conn.compute.delete_server(server)
            conn.compute.wait_for_delete(server, wait=180)
        conn.network.delete_port(port)


def report(res: Any) -> dict[str, Any]:
    assert res.stdout.strip().startswith("{"), res.stderr[-2000:]
    return dict(json.loads(res.stdout))


def test_chain_sfc_created_checked_broken_and_deleted(conn: Any, traffic_source: Any) -> None:
    before = {**counts(conn), **sfc_counts(conn)}  # the networks and the traffic source are the test's
    t0 = time.monotonic()
    # one OVS-DPDK host in the dev cloud: the pair can only share it (soft anti-affinity)
    res = nfvcat("instantiate", STACK, "-e", "udp-flows", "-P", "affinity_policy=soft-anti-affinity",
                 "--host-access", "devcloud", "--format", "json")
    created = time.monotonic() - t0
    data = report(res)
    assert res.returncode == 0, json.dumps([v for v in data["verdicts"] if v["status"] != "pass"], indent=1)
    checks = {v["check"] for v in data["verdicts"]}
    for check in ("port pair ingress", "port pair egress", "port pair group members", "flow classifier source port",
                  "port chain groups", "port chain classifiers", "chain group on br-int",
                  "classifier flow on br-int", "ingress flow on br-int", "egress flow on br-int"):
        assert check in checks, check
    print(f"\nchain-sfc instantiate + check: {created:.1f} s")

    # without host access the flows are not seen: never a pass
    res = nfvcat("check", STACK, "--format", "json")
    assert res.returncode == 2
    unseen = {v["check"]: v["status"] for v in report(res)["verdicts"] if "br-int" in v["check"]}
    assert set(unseen.values()) == {"needs host access"}, unseen

    # a port pair re-pointed: networking-sfc cannot change a pair's ports, so the group gets a pair whose
    # ingress and egress are vrouter_b's ports the other way round in place of the template's pair b
    made = {r.name: r.physical_resource_id for r in conn.orchestration.resources(conn.orchestration.find_stack(STACK))}
    pair_b, group = made["port_pair_b"], made["port_pair_group"]
    original = sfc(conn, "GET", f"port_pairs/{pair_b}")["port_pair"]
    rogue = sfc(conn, "POST", "port_pairs", {"port_pair": {
        "name": "rogue", "ingress": original["egress"], "egress": original["ingress"]}})["port_pair"]
    members = sfc(conn, "GET", f"port_pair_groups/{group}")["port_pair_group"]["port_pairs"]
    try:
        sfc(conn, "PUT", f"port_pair_groups/{group}", {"port_pair_group": {
            "port_pairs": [p if p != pair_b else rogue["id"] for p in members]}})
        res = nfvcat("check", STACK, "--host-access", "devcloud", "--format", "json")
        assert res.returncode == 2, res.stdout + res.stderr
        failed = {(v["subject"], v["check"]) for v in report(res)["verdicts"] if v["status"] == "FAIL"}
        assert ("chain-sfc-ppg", "port pair group members") in failed, failed
    finally:
        sfc(conn, "PUT", f"port_pair_groups/{group}", {"port_pair_group": {"port_pairs": members}})
        sfc(conn, "DELETE", f"port_pairs/{rogue['id']}")

    t0 = time.monotonic()
    res = nfvcat("terminate", STACK, "--format", "json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["left_behind"] == []
    print(f"chain-sfc terminate: {time.monotonic() - t0:.1f} s")
    assert conn.orchestration.find_stack(STACK) is None
    assert {**counts(conn), **sfc_counts(conn)} == before
