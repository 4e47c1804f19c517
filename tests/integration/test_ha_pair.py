"""The vRouter HA pair (templates/heat/vrouter-ha-pair) on the dev cloud's two compute hosts: instantiated with
`nfvcat instantiate`, its two servers on different hosts in an anti-affinity server group, both data ports of
each VIP's network allowing the VIP, `check` passing; terminated with nothing left behind."""

from __future__ import annotations

import ipaddress
import json
from typing import Any

import pytest

from tests.integration.conftest import counts, nfvcat

pytestmark = pytest.mark.usefixtures("onboarded")
STACK = "vrouter-ha-pair"
NAME = "vrouter-ha"  # examples/sriov.env.yaml


def leftovers(conn: Any) -> dict[str, list[str]]:
    return {"server groups": [g.name for g in conn.compute.server_groups(all_projects=True) if g.name == NAME],
            "security groups": [g.name for g in conn.network.security_groups() if g.name.startswith(NAME)],
            "ports": [p.name for p in conn.network.ports() if (p.name or "").startswith(f"{NAME}-")],
            "servers": [s.name for s in conn.compute.servers(all_projects=True) if s.name.startswith(f"{NAME}-")]}


def test_ha_pair_on_two_hosts(conn: Any) -> None:
    assert nfvcat("terminate", STACK).returncode == 0  # a failed earlier run may have left it
    before = counts(conn)
    res = nfvcat("instantiate", STACK, "-e", "sriov", "--format", "json", "--host-access", "devcloud")
    report = json.loads(res.stdout) if res.stdout.strip().startswith("{") else {}
    try:
        assert res.returncode == 0, res.stderr[-3000:]
        assert report["ok"], report
        checks = {(v["check"], v["status"]) for v in report["verdicts"] if v["vnf"] == "server_group"}
        assert ("members on different hosts", "pass") in checks and ("anti-affinity policy", "pass") in checks
        vip_checks = [v for v in report["verdicts"] if v["check"].startswith("allows VIP")]
        assert len(vip_checks) == 4 and {v["status"] for v in vip_checks} == {"pass"}

        # the same facts, read from the APIs here
        servers = [s for s in conn.compute.servers(all_projects=True) if s.name in (f"{NAME}-a", f"{NAME}-b")]
        assert len(servers) == 2 and {s.status for s in servers} == {"ACTIVE"}
        assert len({s.compute_host for s in servers}) == 2, [s.compute_host for s in servers]
        group = next(g for g in conn.compute.server_groups(all_projects=True) if g.name == NAME)
        assert group.policy == "anti-affinity" and set(group.member_ids) == {s.id for s in servers}
        vips = {p.network_id: p.fixed_ips[0]["ip_address"] for p in conn.network.ports()
                if (p.name or "").startswith(f"{NAME}-vip-")}
        assert sorted(vips.values()) == ["10.110.0.254", "10.111.0.254"]
        for server in servers:
            for port in conn.network.ports(device_id=server.id):
                if port.network_id in vips:
                    vip = ipaddress.ip_address(vips[port.network_id])
                    assert any(vip in ipaddress.ip_network(pair["ip_address"], strict=False)
                               for pair in port.allowed_address_pairs), (port.name, port.allowed_address_pairs)
    finally:
        res = nfvcat("terminate", STACK, "--format", "json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["left_behind"] == []
    assert conn.orchestration.find_stack(STACK) is None
    assert leftovers(conn) == {"server groups": [], "security groups": [], "ports": [], "servers": []}
    assert counts(conn) == before
