"""PCI devices tracked in Placement (nova.conf [filter_scheduler] pci_in_placement, as the dev cloud runs Nova): the
device a flavor's alias gets, and with it the guest's NUMA cell, is the first allocation candidate in Placement's
order that Nova's NUMATopologyFilter keeps, not the cell Nova's fit would pick without a provider mapping. That
order is the iteration order of a Python set in Placement (its process's hash seed): the plan asks it from the
cloud (``--candidates-from``) or, offline, names the other cells Nova may choose."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from nfvcat.catalog import inventory
from nfvcat.core.errors import UserError
from nfvcat.plan import novaconf, pciplacement
from nfvcat.plan.planner import Placement, Planner
from nfvcat.plan.request import Chain, Port, Vnf, find_flavor
from tests.conftest import ROOT, nfvcat
from tests.unit.cloudfake import PLACEMENT, cloud, sent  # noqa: F401  (cloud: fixture)

DEVCLOUD = str(ROOT / "tools/testbeds/nfvcat_testbeds/devcloud/inventory.yaml")
QAT = {0: "0000:3d:00.0", 1: "0000:b1:00.0"}  # the dev cloud's QAT PFs by NUMA node
MGMT = [Port("normal", "physnet_mgmt")]


def qat_vnf(name: str = "qat") -> Vnf:
    return Vnf(name, find_flavor("nfv.qat.required", None), ports=MGMT)


def planner_with_order(first: int, inv: inventory.Inventory | None = None,
                       vnf: Vnf | None = None) -> tuple[Planner, Any]:
    """A planner whose Placement lists, on every host, the QAT PF of NUMA node ``first`` first."""
    planner = Planner(inv or inventory.load(DEVCLOUD), placement=pciplacement.Candidates({}))
    d = planner.demand(vnf or qat_vnf())
    (group, _), = pciplacement.groups(d.pci_requests)
    order = [QAT[first], QAT[1 - first]]
    planner.placement = pciplacement.Candidates({(pciplacement.key(d.pci_requests), hs.name): [
        {group: [pf]} for pf in order] for hs in planner.hosts})
    return planner, d


@pytest.mark.parametrize("first", [0, 1])
def test_the_qat_vf_comes_from_placements_first_candidate(first: int) -> None:
    planner, d = planner_with_order(first)
    got = planner.place(d, "qat")
    assert isinstance(got, Placement), got
    assert got.numa_cells == [first], "Nova claims the first candidate its NUMATopologyFilter keeps"
    assert [(dev["pf"], dev["numa_node"]) for dev in got.pci_devices] == [(QAT[first], first)]
    assert got.other_numa_cells == [], "the cloud's order is known: no alternative to name"
    # the host's PCI pools lost that PF's VF (Nova's apply_requests with the candidate's provider mapping)
    hs = next(h for h in planner.hosts if h.name == got.host)
    left = {p["address"]: p["count"] for p in hs.pci.pools if p.get("product_id") == "37c9"}
    assert left == {QAT[first]: 3, QAT[1 - first]: 4}
    # as the dev cloud's compute_nodes.pci_stats: a provider on the QAT pools, none on the SR-IOV NICs' (Neutron's)
    assert {p["address"]: p.get("rp_uuid") for p in hs.pci.pools} == {
        QAT[0]: QAT[0], QAT[1]: QAT[1], "0000:3b:00.0": None, "0000:af:00.0": None}


def test_a_guest_without_devices_follows_the_qat_cell() -> None:
    """Nova's fit puts a guest without PCI devices on the cell with the fewest free devices first: after the
    QAT VF, that is the QAT VF's cell, so the next guest's cell follows Placement's choice too."""
    for first in (0, 1):
        planner, d = planner_with_order(first)
        qat = planner.place(d, "qat")
        pinned = Vnf("ha", find_flavor("nfv.pinned.1g", None), ports=MGMT)
        got = planner.place(planner.demand(pinned), "ha")
        assert isinstance(qat, Placement) and isinstance(got, Placement)
        assert got.host == qat.host and got.numa_cells == [first], (qat, got)


def test_a_candidate_nova_filters_out_is_skipped(tmp_path: Path) -> None:
    """NUMATopologyFilter drops the candidate whose PF's cell cannot hold the guest (no 1 GiB page left on
    NUMA 1): the second candidate is the one claimed."""
    data: dict[str, Any] = json.loads(json.dumps(yaml.safe_load(Path(DEVCLOUD).read_text())))
    for host in data["hosts"]:
        for cell in host.get("numa_cells") or []:
            if cell["id"] == 1:
                cell["hugepages"] = [{**p, "used": p["total"]} if p["size"] == "1G" else p
                                     for p in cell["hugepages"]]
    path = tmp_path / "inv.yaml"
    path.write_text(json.dumps(data))
    planner, d = planner_with_order(1, inventory.load(str(path)))
    got = planner.place(d, "qat")
    assert isinstance(got, Placement) and got.numa_cells == [0], got


def test_offline_the_other_cells_nova_may_choose_are_named() -> None:
    planner = Planner(inventory.load(DEVCLOUD), placement=pciplacement.Candidates())
    got = planner.place(planner.demand(qat_vnf()), "qat")
    assert isinstance(got, Placement)
    assert got.numa_cells == [0] and got.other_numa_cells == [[1]], got


def test_without_pci_in_placement_nothing_changes(tmp_path: Path) -> None:
    """Nova's default (pci_in_placement false): Nova's own fit decides, and the JSON has no new key."""
    conf = tmp_path / "nova.conf"
    request = tmp_path / "request.yaml"
    request.write_text(json.dumps({"kind": "nfvcat/placement-request", "vnfs": [
        {"name": "qat", "flavor": "nfv.qat.required", "ports": [{"vnic_type": "normal", "physnet": "physnet_mgmt"}]}]}))
    docs = {}
    for setting in ("false", "true"):
        conf.write_text(f"[filter_scheduler]\npci_in_placement = {setting}\n")
        proc = nfvcat("plan", str(request), "--inventory", DEVCLOUD, "--nova-conf", str(conf), "--format", "json",
                      "--no-server")
        assert proc.returncode == 0, proc.stderr
        docs[setting] = json.loads(proc.stdout)["placements"][0]
    assert "other_numa_cells" not in docs["false"]
    assert docs["true"]["other_numa_cells"] == [[1]]
    assert {k: v for k, v in docs["true"].items() if k != "other_numa_cells"} == docs["false"]
    text = nfvcat("plan", str(request), "--inventory", DEVCLOUD, "--nova-conf", str(conf), "--no-server").stdout
    assert "qat: NUMA 0 if Placement lists that device's provider first, else NUMA 1" in text


def test_nova_conf_setting_is_read(tmp_path: Path) -> None:
    conf = tmp_path / "nova.conf"
    for value, want in (("True", True), ("0", False), ("on", True)):
        conf.write_text(f"[filter_scheduler]\npci_in_placement = {value}\n")
        assert novaconf.pci_in_placement(str(conf)) is want
    conf.write_text("[pci]\nalias = {}\n")
    assert novaconf.pci_in_placement(str(conf)) is False
    conf.write_text("[filter_scheduler]\npci_in_placement = maybe\n")
    with pytest.raises(UserError, match="is not a boolean"):
        novaconf.pci_in_placement(str(conf))
    conf.write_text("[filter_scheduler]\npci_in_placement = false\n")
    proc = nfvcat("plan", "--flavor", "nfv.qat.required", "--inventory", DEVCLOUD, "--nova-conf", str(conf),
                  "--candidates-from", "nowhere", "--no-server")
    assert proc.returncode == 1 and "does not track PCI devices in Placement" in proc.stderr


def test_ask_sends_novas_query_and_reads_placements_order(cloud: Any) -> None:  # noqa: F811
    m, conn = cloud
    planner = Planner(inventory.load(DEVCLOUD), placement=pciplacement.Candidates())
    d = planner.demand(qat_vnf())
    (group, _), = pciplacement.groups(d.pci_requests)
    roots = {"devcloud-smt": "r-smt", "devcloud-nosmt": "r-nosmt", "vm": "r-real"}
    rps = [{"uuid": u, "name": n, "root_provider_uuid": u} for n, u in roots.items()]
    for host, root in list(roots.items())[:2]:
        for node, pf in QAT.items():
            rps.append({"uuid": f"{root}-{node}", "name": f"{host}_{pf.upper()}", "root_provider_uuid": root})
    m.get(f"{PLACEMENT}/resource_providers", json={"resource_providers": rps})
    # Placement's order: smt's NUMA 1 PF, nosmt's NUMA 0 PF, smt's NUMA 0 PF, nosmt's NUMA 1 PF
    order = [("r-smt", 1), ("r-nosmt", 0), ("r-smt", 0), ("r-nosmt", 1)]
    m.get(f"{PLACEMENT}/allocation_candidates", json={"allocation_requests": [
        {"allocations": {root: {"resources": {"PCPU": 4}}, f"{root}-{node}": {"resources": {"X": 1}}},
         "mappings": {"": [root], group: [f"{root}-{node}"]}} for root, node in order]})

    got = pciplacement.ask(lambda path: conn.placement.get(path, microversion=pciplacement.MICROVERSION).json(),
                           [d], planner.hosts)
    k = pciplacement.key(d.pci_requests)
    assert got.known and got.asked == {(k, "devcloud-smt"): [{group: [QAT[1]]}, {group: [QAT[0]]}],
                                       (k, "devcloud-nosmt"): [{group: [QAT[0]]}, {group: [QAT[1]]}]}
    (asked,) = sent(m, "GET", "/allocation_candidates")
    query = parse_qs(urlsplit(asked.url).query)
    assert query["resources"] == ["DISK_GB:20,MEMORY_MB:4096,PCPU:4"]
    assert query[f"resources{group}"] == ["CUSTOM_PCI_8086_37C9:1"]
    assert asked.headers["OpenStack-API-Version"] == "placement 1.36"
    planner.placement = got
    placed = planner.place_chain(Chain(source="t", vnfs=[d.vnf]))
    assert [(p.host, p.numa_cells) for p in placed.placements] == [("devcloud-smt", [1])]


def test_placements_order_follows_its_hash_seed() -> None:
    """Why no inventory holds the order: Placement's candidates are a set whose hashes mix resource-class
    names, so two QAT PFs come out in an order that changes with PYTHONHASHSEED (Placement's own classes).
    If Placement ever sorts its candidates, this fails: model the sort then instead of asking."""
    code = """
from types import SimpleNamespace as NS
from placement.objects.allocation_candidate import AllocationRequest, AllocationRequestResource as ARR
root = NS(id=1, uuid="root", root_provider_uuid="root")
def areq(rp):
    return AllocationRequest(resource_requests=[ARR(root, "PCPU", 4), ARR(root, "MEMORY_MB", 4096),
                             ARR(rp, "CUSTOM_PCI_8086_37C9", 1)], anchor_root_provider_uuid="root",
                             mappings={"g": {rp.uuid}})
print([next(iter(a.mappings["g"])) for a in list({areq(NS(id=7, uuid="pf0")), areq(NS(id=9, uuid="pf1"))})])
"""
    orders = set()
    for seed in range(8):
        out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONHASHSEED": str(seed)},
                             capture_output=True, text=True, check=True).stdout
        orders.add(out.strip())
    assert orders == {"['pf0', 'pf1']", "['pf1', 'pf0']"}, orders
