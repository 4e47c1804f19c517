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
