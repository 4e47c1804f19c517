"""Onboard, instantiate, check and terminate the catalog's chains on the dev cloud, asserting on real API state."""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from nfvcat.cloud.verdicts import PASSING
from tests.integration.conftest import CLOUD, NFVCAT, ROOT, counts, nfvcat

PSK = {"NFVCAT_SECRET_PSK": "integration-psk-0123456789abcdef"}
pytestmark = pytest.mark.usefixtures("onboarded", "no_chains")


@pytest.fixture
def no_chains(devcloud: None) -> None:
    """Each test starts with no chain deployed (a failed earlier test may have left one)."""
    for stack in ("chain-vrouter", "chain-vrouter-ipsec"):
        assert nfvcat("terminate", stack).returncode == 0


def ports_of(conn: Any, stack: str) -> list[Any]:
    ports = []
    for server in conn.compute.servers(all_projects=True):
        if server.name.startswith(("chain-", "vrouter", "ipsec")):
            ports += list(conn.network.ports(device_id=server.id))
    return ports


def instantiate(chain: str, *args: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any], str]:
    res = nfvcat("instantiate", chain, "--format", "json", "--host-access", "devcloud", *args, env=env)
    data = json.loads(res.stdout) if res.stdout.strip().startswith("{") else {}
    return res.returncode, data, res.stderr


def terminate(conn: Any, stack: str) -> None:
    res = nfvcat("terminate", stack, "--format", "json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["left_behind"] == []
    assert conn.orchestration.find_stack(stack) is None


def test_onboard_is_idempotent(conn: Any, onboarded: list[str]) -> None:
    res = nfvcat("onboard", "--format", "json")
    assert res.returncode == 0, res.stderr
    plan = json.loads(res.stdout)
    assert plan["changes"] == 0, plan
    assert {a["name"] for a in plan["actions"] if a["kind"] == "image"} == set(onboarded)
    dry = nfvcat("onboard", "--dry-run")
    assert dry.returncode == 0 and "nothing to change" in dry.stdout
    flavor = conn.compute.find_flavor("nfv.sriov")
    assert flavor.extra_specs["hw:cpu_policy"] == "dedicated"
    net = conn.network.find_network("nfv-sriov-left")
    assert (net.provider_physical_network, net.provider_segmentation_id) == ("physnet_sriov", 110)
    assert {conn.image.find_image(name).status for name in onboarded} == {"active"}
    endpoint = conn.session.get_endpoint(service_type="nfv-orchestration", interface="public").rstrip("/")
    packages = conn.session.get(f"{endpoint}/vnfpkgm/v1/vnf_packages?all_fields").json()
    onboarded = {p["userDefinedData"]["nfvcat-entry"]: p["onboardingState"] for p in packages}
    assert onboarded == {"vnf-ipsec-gw": "ONBOARDED", "vnf-vrouter": "ONBOARDED"}


def test_glance_holds_the_product_images_of_the_locks(conn: Any, onboarded: list[str]) -> None:
    """Each catalog image in Glance is byte for byte the image its lock names: the sha256 of what Glance serves
    back is the lock's, Glance's own hash (os_hash_algo, sha512 by default) is that of the same bytes, and the
    image carries its entry's Glance properties (UEFI firmware, q35, virtio)."""
    from nfvcat.packaging.images import recipe, refs

    seen = set()
    for ref in refs.glance_images(ROOT):
        lock = recipe.read_lock(recipe.load(str(ref["image"]), ROOT))
        assert lock is not None and lock.version == ref["version"], ref
        records = conn.image.get(f"/images?name={ref['name']}").json()["images"]
        assert [r["status"] for r in records] == ["active"], (ref["name"], records)
        record = records[0]
        assert (record["size"], record["disk_format"]) == (lock.size, "qcow2"), record
        sha256, glance_hash = hashlib.sha256(), hashlib.new(record["os_hash_algo"])
        resp = conn.image.download_image(record["id"], stream=True)
        for chunk in resp.iter_content(1 << 20):
            sha256.update(chunk)
            glance_hash.update(chunk)
        assert sha256.hexdigest() == lock.sha256, (ref["name"], sha256.hexdigest(), lock.sha256)
        assert glance_hash.hexdigest() == record["os_hash_value"], ref["name"]
        props = {k: str(v) for k, v in (ref["properties"] or {}).items()}
        assert props.get("hw_firmware_type") == "uefi", props
        assert {k: str(record.get(k)) for k in props} == props, record
        provenance = {k: record.get(k) for k in ("nfvcat_entry", "nfvcat_version", "nfvcat_lock_sha256",
                                                 "nfvcat_sha256", "nfvcat_source", "nfvcat_differs")}
        assert provenance == {"nfvcat_entry": f"images/{ref['image']}", "nfvcat_version": lock.version,
                              "nfvcat_lock_sha256": lock.sha256, "nfvcat_sha256": lock.sha256,
                              "nfvcat_source": "catalog", "nfvcat_differs": "none"}, record
        seen.add(ref["name"])
    assert seen == set(onboarded) and {ref["image"] for ref in refs.glance_images(ROOT)} == {"vrouter", "ipsec-gw"}


# A version of libpam Debian replaced by a security update (1.5.2-6+deb12u3): images/vrouter 1.1.1's lock named it,
# with that build's sha256 and size (computed by `nfvcat image build vrouter`, commit 23a4ace).
GONE = "1.5.2-6+deb12u2"
GONE_LOCK = ("4210fe94f1adc7aebd3fea57ea7460a63013ae74e04260aa443deb8c93576eda", 280559616)
DRIFT_NAME = "nfvcat-drift-test-vrouter"


def test_onboarding_on_drift_uploads_the_verified_local_rebuild(conn: Any, tmp_path: Path) -> None:
    """Drift made to happen: a catalog whose vrouter lock names libpam versions the mirror no longer serves
    (GONE). Onboarding neither refuses nor uploads an unverified file: it takes the local rebuild from what the
    mirror serves (the image cache holds it already: builds are cached by their inputs), and Glance serves back
    the rebuild's sha256, which its record beside it in the cache holds, with the provenance properties naming
    both sha256s and the packages that differ."""
    import shutil

    from nfvcat.packaging.images import obtain, recipe

    cat = tmp_path / "catalog"
    shutil.copytree(ROOT / "images" / "vrouter", cat / "images" / "vrouter")
    shutil.copytree(ROOT / "templates" / "heat" / "vnf-vrouter", cat / "templates" / "heat" / "vnf-vrouter")
    (cat / "flavors").mkdir()
    r = recipe.load("vrouter", cat)
    lock = recipe.read_lock(r)
    assert lock is not None
    pam = sorted(p for p in lock.packages if p.startswith("libpam"))
    assert pam and all(lock.packages[p] != GONE for p in pam)
    lock.packages.update({p: GONE for p in pam})
    lock.sha256, lock.size = GONE_LOCK
    recipe.write_lock(r, lock)
    entry = cat / "templates" / "heat" / "vnf-vrouter" / "entry.yaml"
    glance = f"{DRIFT_NAME}-{r.version}"
    entry.write_text(entry.read_text().replace(f"name: nfvcat-vrouter-{r.version}", f"name: {glance}"))
    try:
        res = nfvcat("onboard", "--only", "images", env={"NFVCAT_CATALOG_DIR": str(cat)}, timeout=3600)
        assert res.returncode == 0, res.stderr[-3000:]
        assert "Debian's mirror no longer serves the packages of images/vrouter/image.lock" in res.stderr
        assert "local rebuild (cached)" in res.stderr, "the rebuild the tiers made is reused: nothing is built again"
        line = next(x for x in res.stdout.splitlines() if f" {glance} " in x)
        assert " create " in line and "local rebuild, verified against its build record" in line, line
        records = conn.image.get(f"/images?name={glance}").json()["images"]
        assert [i["status"] for i in records] == ["active"], records
        image = records[0]
        sha256 = hashlib.sha256()
        for chunk in conn.image.download_image(image["id"], stream=True).iter_content(1 << 20):
            sha256.update(chunk)
        assert image["nfvcat_sha256"] == sha256.hexdigest() != GONE_LOCK[0]
        assert image["nfvcat_lock_sha256"] == GONE_LOCK[0] and image["nfvcat_source"] == "rebuild"
        assert all(f"{p} {GONE} -> " in image["nfvcat_differs"] for p in pam), image["nfvcat_differs"]
        rebuilt = obtain.image("vrouter", lambda _m: None, cat)
        assert rebuilt.source == "rebuild" and rebuilt.lock.sha256 == sha256.hexdigest()
        assert obtain.verify(rebuilt, rebuilt.disk, sha256.hexdigest()) is None  # its own record holds it
    finally:
        for i in conn.image.get(f"/images?name={glance}").json()["images"]:
            conn.image.delete(f"/images/{i['id']}")


def test_one_vnf_sriov_chain_then_wrong_placement_is_caught(conn: Any, tmp_path: Path) -> None:
    rc, report, err = instantiate("chain-vrouter", "-e", "sriov")
    assert rc == 0, err
    assert report["ok"] and {v["status"] for v in report["verdicts"]} <= set(PASSING)
    server = next(s for s in conn.compute.servers(all_projects=True) if s.name == "chain-vrouter-1")
    assert server.status == "ACTIVE"
    vifs = {p.name: (p.binding_vnic_type, p.binding_vif_type, p.binding_host_id) for p in
            conn.network.ports(device_id=server.id)}
    assert vifs["chain-vrouter-1-left"][:2] == ("direct", "hw_veb")
    assert vifs["chain-vrouter-1-right"][:2] == ("direct", "hw_veb")
    assert {v[2] for v in vifs.values()} == {server.compute_host}
    topo = conn.compute.get(f"/servers/{server.id}/topology", microversion="2.78").json()
    assert topo["pagesize_kb"] == 1048576 and len(topo["nodes"]) == 1

    # the same deployment against an inventory whose NICs sit on the other NUMA node: the VFs' nodes come from
    # Nova's records (still affine), and check must fail the inventory's disagreement with them
    inv = yaml.safe_load((ROOT / "tools/testbeds/nfvcat_testbeds/devcloud/inventory.yaml").read_text())
    for host in inv["hosts"]:  # (the hosts share one device list in the file: copies, each flipped once)
        if "numa_cells" not in host:
            continue  # the real host (hypervisor: libvirt) reports the machine's own CPUs and has no devices
        host["pci_devices"] = [{**dev, "numa_node": 1 - dev["numa_node"]} for dev in host["pci_devices"]]
        host["numa_cells"] = [{**cell, "socket": 1 - cell["socket"]} for cell in host["numa_cells"]]
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(yaml.safe_dump(inv))
    res = nfvcat("check", "chain-vrouter", "--inventory", str(wrong), "--host-access", "devcloud", "--format", "json")
    assert res.returncode == 2, res.stdout + res.stderr
    failed = [v for v in json.loads(res.stdout)["verdicts"] if v["status"] == "FAIL"]
    assert {v["check"] for v in failed} == {"PCI NUMA node in the inventory"}, failed
    terminate(conn, "chain-vrouter")


def test_two_vnf_ovs_dpdk_chain(conn: Any) -> None:
    rc, report, err = instantiate("chain-vrouter-ipsec", "-e", "site-a", env=PSK)
    assert rc == 0, err
    assert PSK["NFVCAT_SECRET_PSK"] not in err + json.dumps(report)
    servers = {v["vnf"] for v in report["verdicts"]}
    assert servers == {"vrouter", "gateway"}
    data_ports = [p for p in ports_of(conn, "chain-vrouter-ipsec") if not p.name.endswith("-mgmt")]
    assert data_ports and {p.binding_vif_type for p in data_ports} == {"vhostuser"}
    terminate(conn, "chain-vrouter-ipsec")


def test_chain_that_cannot_fit_fails_cleanly(conn: Any) -> None:
    # more dedicated vCPUs on one NUMA node than any node has (Placement alone would find a host with enough)
    inv = yaml.safe_load((ROOT / "tools/testbeds/nfvcat_testbeds/devcloud/inventory.yaml").read_text())
    from nfvcat.catalog.inventory import from_data

    hosts = from_data(inv).hosts
    per_node = max(len(c.dedicated) for h in hosts for c in h.cells)
    assert max(sum(len(c.dedicated) for c in h.cells) for h in hosts) >= per_node + 2
    flavor = conn.compute.create_flavor(name="nfvcat-test.numa-exhausted", vcpus=per_node + 2, ram=2048, disk=20)
    conn.compute.create_flavor_extra_specs(flavor, {"hw:cpu_policy": "dedicated", "hw:numa_nodes": "1"})
    try:
        before = counts(conn)
        rc, _, err = instantiate("chain-vrouter", "-e", "ovs-dpdk", "-P", "flavor=nfvcat-test.numa-exhausted")
        assert rc == 2, err
        assert "No valid host" in err
        assert conn.orchestration.find_stack("chain-vrouter") is None
        assert counts(conn) == before
    finally:
        conn.compute.delete_flavor(flavor)


def test_interrupted_instantiate_converges(conn: Any) -> None:
    import os

    # Ctrl-C as a user's terminal sends it: the child starts with SIGINT's default action even when this run
    # was started in the background (a non-interactive shell's `cmd &` ignores SIGINT, which the child would
    # inherit: Python then installs no KeyboardInterrupt and the interrupt is never delivered).
    proc = subprocess.Popen([*NFVCAT, "instantiate", "chain-vrouter", "-e", "ovs-dpdk"], cwd=ROOT,
                            env={**os.environ, "OS_CLOUD": CLOUD}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while conn.orchestration.find_stack("chain-vrouter") is None and time.monotonic() < deadline:
        time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) in (130, -signal.SIGINT)
    rc, report, err = instantiate("chain-vrouter", "-e", "ovs-dpdk")
    assert rc == 0, err
    assert report["ok"]
    servers = [s for s in conn.compute.servers(all_projects=True) if s.name == "chain-vrouter-1"]
    assert len(servers) == 1
    # and once more: a complete stack is updated in place, nothing is duplicated
    rc, _, err = instantiate("chain-vrouter", "-e", "ovs-dpdk")
    assert rc == 0, err
    assert len([s for s in conn.compute.servers(all_projects=True) if s.name == "chain-vrouter-1"]) == 1
    terminate(conn, "chain-vrouter")
