"""Each VNF package through Tacker's v2 VNF LCM on the dev cloud: `nfvcat instantiate --via tacker`, `check`
passes, one VNFC healed by the vnfcInstanceId Tacker reports (and checked again), `nfvcat terminate --via
tacker`, and nothing left: no stack, server, port, network, flavor or VNF instance. Each step's time is printed
(run with -s to see them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from nfvcat.cloud.verdicts import PASSING
from tests.integration.conftest import CLOUD, NFVCAT, ROOT, counts, nfvcat

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
                            params={"filter": f"(eq,vnfInstanceName,{name})", "fields": "metadata"})
    return list(resp.json())


def _fresh(conn: Any, name: str, entry: str, *extra: str) -> tuple[Any, dict[str, float], dict[str, Any]]:
    """The package of ``entry`` instantiated anew through Tacker as ``name`` (what a failed earlier run may have
    left terminated first) and checked: the cloud's counts before it, the timings so far, instantiate's JSON."""
    nfvcat("terminate", "--via", "tacker", name)
    before = counts(conn)
    times: dict[str, float] = {}
    made, times["instantiate+check"] = _run("instantiate", "instantiate", "--via", "tacker", f"vnfd/{entry}",
                                            "--vnf", name, "--host-access", "devcloud", *extra)
    return before, times, made


@pytest.mark.parametrize("entry", sorted(PACKAGES))
def test_instantiate_heal_terminate_via_tacker(conn: Any, entry: str) -> None:
    vdu, server_name, ext_cps, extra = PACKAGES[entry]
    name = f"it-{entry}"
    before, times, made = _fresh(conn, name, entry, *extra)
    vnf = made["vnf"]
    assert made["ok"] and {v["status"] for v in made["verdicts"]} <= set(PASSING), made["verdicts"]
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
    body = conn.orchestration.get(f"/stacks/{stack}/resources?nested_depth=5").json()
    found = [r["physical_resource_id"] for r in body["resources"]
             if r["resource_type"] == "OS::Nova::Server" and r["resource_name"] == vdu]
    assert all(conn.compute.get_server(s).status == "ACTIVE" for s in found)
    return found


def test_scale_out_and_in_by_one_step_via_tacker(conn: Any) -> None:
    """vnf-vrouter's aspect VDU_VROUTER_scale (1 to 2 vRouters): out by one step, a step beyond its maximum refused
    before Tacker is asked, in by one step; each checked, and Tacker's scale level equal to the servers Heat holds."""
    name, aspect = "it-scale-vrouter", "VDU_VROUTER_scale"
    before, times, made = _fresh(conn, name, "vnf-vrouter")
    stack = made["vnf"]["stack"]
    first = _vdu_servers(conn, stack, "VDU_VROUTER")
    assert len(first) == 1 and [v["server"] for v in made["vnf"]["vnfcs"]] == first

    out, times["scale out+check"] = _run("scale out", "scale", "--via", "tacker", name, "--aspect", aspect,
                                         "--host-access", "devcloud")
    assert out["ok"] and {v["status"] for v in out["verdicts"]} <= set(PASSING), out["verdicts"]
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


def later_package(clone: Path) -> str:
    """In a clone of the repository: everything released as it is, then vnf-vrouter one patch version on (its
    VNFD identity and README by `nfvcat docs`), released too; the new version."""
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    env = {**os.environ, "NFVCAT_CATALOG_DIR": str(clone)}

    def run(*cmd: str) -> None:
        res = subprocess.run([*NFVCAT, *cmd], cwd=clone, env=env, capture_output=True, text=True, check=False)
        assert res.returncode == 0, f"{cmd}: {res.stdout[-1500:]}{res.stderr[-1500:]}"

    def commit(msg: str) -> None:
        for git in (["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-qm", msg]):
            subprocess.run(["git", *git], cwd=clone, check=True)

    run("release", "--no-tag")
    commit("release")
    d = clone / "vnfd" / "vnf-vrouter"
    old = str(yaml.safe_load((d / "entry.yaml").read_text())["version"])
    major, minor, patch = (int(x) for x in old.split("."))
    new = f"{major}.{minor}.{patch + 1}"
    (d / "entry.yaml").write_text((d / "entry.yaml").read_text().replace(f"version: {old}", f"version: {new}", 1))
    log = d / "CHANGELOG.md"
    head, sep, rest = log.read_text().partition("\n## ")
    log.write_text(f"{head}\n## {new}\n\n- A package made by the integration test of change_vnfpkg.\n\n{sep[1:]}{rest}")
    run("docs")
    run("release", "--no-tag")
    commit(new)
    return new


def _tacker_get(conn: Any, path: str) -> Any:
    endpoint = conn.session.get_endpoint(service_type="nfv-orchestration", interface="public").rstrip("/")
    return conn.session.get(f"{endpoint}{path}", headers={"Version": "2.0.0"}).json()


def test_change_vnfpkg_to_a_later_package_then_checked(conn: Any, tmp_path: Path) -> None:
    """vnf-vrouter instantiated from this tree, then `nfvcat upgrade --via tacker` to a later version released in a
    clone: its package onboarded beside the running one, Tacker's change_vnfpkg, the mark moved, check passing;
    Tacker reports the new vnfdId and the stack runs the new package's BaseHOT."""
    from nfvcat.catalog import vnfd_ids

    name = "it-upgrade-vrouter"
    before, times, made = _fresh(conn, name, "vnf-vrouter")
    old_id = made["vnf"]["vnfdId"]
    clone = tmp_path / "clone"
    t0 = time.monotonic()
    new = later_package(clone)
    times["clone+release"] = time.monotonic() - t0
    env = {"NFVCAT_CATALOG_DIR": str(clone)}
    full = {**os.environ, "OS_CLOUD": CLOUD, **PSK, **env}

    def in_clone(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*NFVCAT, *args], cwd=clone, env=full, capture_output=True, text=True, timeout=1200,
                              check=False)

    dry = in_clone("upgrade", "--via", "tacker", name, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"-> {new} through Tacker's change_vnfpkg" in dry.stdout and "RollingUpdate of VDU_VROUTER" in dry.stdout
    t0 = time.monotonic()
    res = in_clone("upgrade", "--via", "tacker", name, "--yes", "--host-access", "devcloud", "--format", "json")
    times["change_vnfpkg+check"] = time.monotonic() - t0
    assert res.returncode == 0, f"{res.stderr[-3000:]}\n{res.stdout[-2000:]}"
    out = json.loads(res.stdout)
    new_id = vnfd_ids.descriptor_id("vnf-vrouter", new)
    assert new_id != old_id and out["ok"] and out["vnf"]["upgrade"]["to"] == new and out["vnf"]["vnfdId"] == new_id
    inst = _instances(conn, name)[0]
    assert inst["vnfdId"] == new_id and inst["metadata"]["nfvcat"] == f"nfvcat:vnf-vrouter@{new}"
    template = conn.orchestration.get_stack_template(conn.orchestration.find_stack(out["vnf"]["stack"]))
    assert str(template["description"]).startswith(f"vnf-vrouter {new},"), template["description"]
    listed = in_clone("list", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    assert {(r["name"], r["version"]) for r in json.loads(listed.stdout)} >= {(name, new)}
    again = in_clone("upgrade", "--via", "tacker", name, "--yes", "--no-check")  # converged: nothing to do
    assert again.returncode == 0 and "already runs vnfdId" in again.stderr, again.stderr

    gone, times["terminate"] = _run("terminate", "terminate", "--via", "tacker", name)
    assert gone["left_behind"] == [], gone
    for pkg in _tacker_get(conn, f"/vnfpkgm/v1/vnf_packages?filter=(eq,vnfdId,{new_id})"):
        base = conn.session.get_endpoint(service_type="nfv-orchestration", interface="public").rstrip("/")
        url = f"{base}/vnfpkgm/v1/vnf_packages/{pkg['id']}"
        conn.session.patch(url, json={"operationalState": "DISABLED"})
        assert conn.session.delete(url).status_code == 204
    assert counts(conn) == before
    sys.stderr.write("[tacker] change_vnfpkg: " + ", ".join(f"{k} {v:.1f} s" for k, v in times.items()) + "\n")
