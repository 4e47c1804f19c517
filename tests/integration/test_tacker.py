"""Each VNF package through Tacker's v2 VNF LCM on the dev cloud: `nfvcat instantiate --via tacker`, `check`
passes, one VNFC healed by the vnfcInstanceId Tacker reports (and checked again), `nfvcat terminate --via
tacker`, and nothing left: no stack, server, port, network, flavor or VNF instance. Each step's time is printed
(run with -s to see them)."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import pytest

from tests.integration.conftest import counts, nfvcat

PSK = {"NFVCAT_SECRET_PSK": "integration-psk-0123456789abcdef"}
PACKAGES = {  # entry -> (VDU, its server's name, external CPs, instantiate arguments)
    "vnf-vrouter": ("VDU_VROUTER", "vrouter", {"CP_WAN", "CP_LAN"}, ["-P", "enable_frr=true"]),
    "vnf-ipsec-gw": ("VDU_IPSEC", "ipsec-gw", {"CP_UNTRUST", "CP_TRUST"},
                     ["-P", "peer_address=192.0.2.2", "-P", "local_subnets=10.1.0.0/24",
                      "-P", "remote_subnets=10.2.0.0/24"]),
}
pytestmark = pytest.mark.usefixtures("onboarded")


def _run(step: str, *args: str) -> tuple[dict[str, Any], float]:
    t0 = time.monotonic()
    res = nfvcat(*args, "--format", "json", env=PSK, timeout=1200)
    took = time.monotonic() - t0
    sys.stderr.write(f"\n[tacker] {step}: {took:.1f} s (exit {res.returncode})\n")
    assert res.returncode == 0, f"{step}: exit {res.returncode}\n{res.stderr[-3000:]}\n{res.stdout[-2000:]}"
    return json.loads(res.stdout), took


def _instances(conn: Any, name: str) -> list[dict[str, Any]]:
    endpoint = conn.session.get_endpoint(service_type="nfv-orchestration", interface="public").rstrip("/")
    resp = conn.session.get(f"{endpoint}/vnflcm/v2/vnf_instances", headers={"Version": "2.0.0"},
                            params={"filter": f"(eq,vnfInstanceName,{name})"})
    return list(resp.json())


@pytest.mark.parametrize("entry", sorted(PACKAGES))
def test_instantiate_heal_terminate_via_tacker(conn: Any, entry: str) -> None:
    vdu, server_name, ext_cps, extra = PACKAGES[entry]
    name = f"it-{entry}"
    nfvcat("terminate", "--via", "tacker", name)  # a failed earlier run may have left it
    before = counts(conn)
    times: dict[str, float] = {}

    made, times["instantiate+check"] = _run("instantiate", "instantiate", "--via", "tacker", f"vnfd/{entry}",
                                            "--vnf", name, "--host-access", "devcloud", *extra)
    vnf = made["vnf"]
    assert made["ok"] and {v["status"] for v in made["verdicts"]} == {"pass"}, made["verdicts"]
    # what Tacker reports: one VNFC of the VDU on a real server, every external CP on a port of it
    assert [v["vduId"] for v in vnf["vnfcs"]] == [vdu]
    server = conn.compute.get_server(vnf["vnfcs"][0]["server"])
    assert server.status == "ACTIVE" and server.name == server_name  # named after the VDU's name
    assert {c["cpdId"] for c in vnf["ext_cps"]} == ext_cps
    for cp in vnf["ext_cps"]:
        assert conn.network.get_port(cp["port"]).device_id == server.id
    stack = conn.orchestration.find_stack(vnf["stack"])
    assert stack is not None and stack.status == "CREATE_COMPLETE"

    vnfc = vnf["vnfcs"][0]["vnfcInstanceId"]
    healed, times["heal+check"] = _run("heal", "heal", "--via", "tacker", name, "--vnfc", vnfc,
                                       "--host-access", "devcloud")
    assert healed["ok"], healed["verdicts"]
    h = healed["vnf"]["healed"]
    assert h["vnfc"] == vnfc and h["new_server"] != h["server"], h  # Heat replaced the VDU's server
    assert conn.compute.find_server(h["server"], ignore_missing=True) is None
    assert conn.compute.get_server(h["new_server"]).status == "ACTIVE"

    gone, times["terminate"] = _run("terminate", "terminate", "--via", "tacker", name)
    assert gone["left_behind"] == [] and gone["resources"] > 0, gone
    assert conn.orchestration.find_stack(vnf["stack"]) is None
    assert _instances(conn, name) == []
    assert counts(conn) == before
    sys.stderr.write(f"[tacker] {entry}: " + ", ".join(f"{k} {v:.1f} s" for k, v in times.items()) + "\n")


def _vdu_servers(conn: Any, stack: str, vdu: str) -> list[str]:
    """The VDU's servers in the stack Tacker made, counted through Heat (every depth) and checked in Nova."""
    found = [r.physical_resource_id for r in conn.orchestration.resources(stack, nested_depth=5)
             if r.resource_type == "OS::Nova::Server" and r.name == vdu]
    assert all(conn.compute.get_server(s).status == "ACTIVE" for s in found)
    return found


def test_scale_out_and_in_by_one_step_via_tacker(conn: Any) -> None:
    """vnf-vrouter's aspect VDU_VROUTER_scale (1 to 2 vRouters): out by one step, a step beyond its maximum refused
    before Tacker is asked, in by one step; each checked, and Tacker's scale level equal to the servers Heat holds."""
    name, aspect = "it-scale-vrouter", "VDU_VROUTER_scale"
    nfvcat("terminate", "--via", "tacker", name)
    before = counts(conn)
    times: dict[str, float] = {}
    made, times["instantiate+check"] = _run("instantiate", "instantiate", "--via", "tacker", "vnfd/vnf-vrouter",
                                            "--vnf", name, "--host-access", "devcloud")
    stack = made["vnf"]["stack"]
    first = _vdu_servers(conn, stack, "VDU_VROUTER")
    assert len(first) == 1 and [v["server"] for v in made["vnf"]["vnfcs"]] == first

    out, times["scale out+check"] = _run("scale out", "scale", "--via", "tacker", name, "--aspect", aspect,
                                         "--host-access", "devcloud")
    assert out["ok"] and {v["status"] for v in out["verdicts"]} == {"pass"}, out["verdicts"]
    assert out["vnf"]["scale"] == {"aspect": aspect, "from": 0, "to": 1}
    servers = _vdu_servers(conn, stack, "VDU_VROUTER")
    assert len(servers) == 2 and first[0] in servers
    assert sorted(v["server"] for v in out["vnf"]["vnfcs"]) == sorted(servers)
    active = [v for v in out["verdicts"] if v["check"] == "server ACTIVE"]
    assert len(active) == 2 and len({v["vnf"] for v in active}) == 2, active  # check covers the new VNFC too
    (level,) = [v for v in out["verdicts"] if v["check"] == "scale level"]
    assert "level 1: the VNFD gives 2 instance(s); the stack has 2 server(s), Tacker reports 2" in level["detail"]

    beyond = nfvcat("scale", "--via", "tacker", name, "--aspect", aspect)
    assert beyond.returncode == 1 and "of at most 1 (max_scale_level)" in beyond.stderr, beyond.stderr
    assert "nothing sent" in beyond.stderr and "Traceback" not in beyond.stderr
    assert len(_vdu_servers(conn, stack, "VDU_VROUTER")) == 2

    back, times["scale in+check"] = _run("scale in", "scale", "--via", "tacker", name, "--aspect", aspect, "--in",
                                         "--host-access", "devcloud")
    assert back["ok"], back["verdicts"]
    assert back["vnf"]["scale"] == {"aspect": aspect, "from": 1, "to": 0}
    left = _vdu_servers(conn, stack, "VDU_VROUTER")
    assert len(left) == 1 and [v["server"] for v in back["vnf"]["vnfcs"]] == left

    gone, times["terminate"] = _run("terminate", "terminate", "--via", "tacker", name)
    assert gone["left_behind"] == [], gone
    assert counts(conn) == before
    sys.stderr.write("[tacker] scale: " + ", ".join(f"{k} {v:.1f} s" for k, v in times.items()) + "\n")
