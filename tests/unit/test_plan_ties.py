"""Where Nova's weights do not decide its choice, the plan says so: hosts whose total weight (Nova's weighers,
Nova's normalisation, the same float operations) equals the chosen host's are a tie, which nova-scheduler breaks
in its own order of host states (a set's, per scheduler process); ``host_subset_size`` N > 1 widens the choice to
Nova's N best. The per-host weights themselves are compared with Nova's own weight handler, bit for bit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from nfvcat.catalog import inventory
from nfvcat.plan import filters, novaenv, weigher
from nfvcat.plan.planner import TIE_NAMES, Placement, Planner
from nfvcat.plan.request import Flavor, Vnf
from tests.conftest import nfvcat
from tests.unit.test_plan_equivalence import random_inventory, random_vnfs

PINNED = {"hw:cpu_policy": "dedicated", "hw:mem_page_size": "1GB"}


def _cell(i: int) -> dict[str, Any]:
    base = 16 * i
    return {"id": i, "socket": i, "cpu_shared_set": f"{base}-{base + 1}",
            "cpu_dedicated_set": f"{base + 2}-{base + 15}",
            "memory_mb": 32768, "hugepages": [{"size": "1G", "total": 16}]}


def host(name: str, cells: int = 2) -> dict[str, Any]:
    return {"name": name, "role": "compute", "numa_cells": [_cell(i) for i in range(cells)]}


def inv_of(hosts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"kind": "nfvcat/inventory", "hosts": hosts}


def place_all(planner: Planner, vnfs: list[Vnf], policy: str | None = None) -> list[Placement]:
    out = []
    for v in vnfs:
        for i in range(v.count):
            got = planner.place(planner.demand(v), f"{v.name}-{i + 1}", v.server_group, policy)
            assert isinstance(got, Placement), got
            out.append(got)
    return out


VNF = Vnf("fw", Flavor("pinned", 4, 4096, extra_specs=PINNED))


@pytest.mark.parametrize("memo", [True, False])
def test_identical_hosts_tie(memo: bool) -> None:
    """Three identical hosts: the first VNF's host ties with the other two; the plan names all three."""
    planner = Planner(inventory.from_data(inv_of([host("a"), host("b"), host("c")]), "ties"), memo=memo)
    first, second = place_all(planner, [Vnf("fw", VNF.flavor, count=2)])
    assert first.host == "a"
    assert (first.tie, first.tie_hosts) == (["a", "b", "c"], 3)
    assert first.tie_reason == weigher.TIE
    # a's free resources are now below b's and c's: spread weighs them higher, and they tie with each other
    assert second.host == "b" and (second.tie, second.tie_hosts) == (["b", "c"], 2)


@pytest.mark.parametrize("memo", [True, False])
def test_weights_that_decide_are_no_tie(memo: bool) -> None:
    """A bigger host outweighs a smaller one (RAM and CPU weighers): no tie to report."""
    planner = Planner(inventory.from_data(inv_of([host("small", 1), host("big", 2)]), "ties"), memo=memo)
    got, = place_all(planner, [VNF])
    assert got.host == "big" and (got.tie, got.tie_hosts, got.tie_reason) == ([], 0, "")


def test_anti_affinity_leaves_members_hosts_out_of_the_tie() -> None:
    """Identical hosts, an anti-affinity group: the host its first member took is no candidate, so not tied."""
    planner = Planner(inventory.from_data(inv_of([host("a"), host("b"), host("c")]), "ties"))
    ha = Vnf("ha", VNF.flavor, count=2, server_group="ha")
    first, second = place_all(planner, [ha], "anti-affinity")
    assert first.host == "a" and first.tie == ["a", "b", "c"]
    assert second.host == "b" and second.tie == ["b", "c"]


def test_a_tie_of_many_hosts_lists_the_first_and_counts_all() -> None:
    planner = Planner(inventory.from_data(inv_of([{**host("h{index:03d}"), "count": TIE_NAMES + 10}]), "ties"))
    got, = place_all(planner, [VNF])
    assert got.tie_hosts == TIE_NAMES + 10
    assert got.tie == [f"h{i:03d}" for i in range(1, TIE_NAMES + 1)]  # {index} counts from 1


def test_host_subset_size_widens_the_choice() -> None:
    """host_subset_size 2: Nova picks at random between its two best even when their weights differ."""
    planner = Planner(inventory.from_data(inv_of([host("small", 1), host("big", 2)]), "ties"),
                      weighing={"host_subset_size": "2"})
    got, = place_all(planner, [VNF])
    assert got.host == "big" and got.tie == ["small", "big"] and got.tie_hosts == 2
    assert got.tie_reason.startswith("host_subset_size 2: Nova picks at random among its 2 best")
    Planner(inventory.from_data(inv_of([host("a")]), "ties"))  # the next planner has Nova's default again
    assert novaenv.nova().CONF.filter_scheduler.host_subset_size == 1


def test_ties_are_equal_totals_of_novas_own_weight_handler() -> None:
    """On random inventories, at every step: the hosts the plan reports tied are exactly the hosts whose total
    weight, as Nova's HostWeightHandler computes it over the same host states, equals the best one."""
    n = novaenv.nova()
    handler = n.scheduler_weights.HostWeightHandler()
    checked = ties = 0
    twins = inventory.from_data(inv_of([host("a"), host("small", 1), host("b"), host("c"), host("tiny", 1)]), "twins")
    for seed, inv in ((11, random_inventory(11, 6)), (12, twins)):
        planner = Planner(inv, "spread", memo=False)
        for vnf in random_vnfs(seed, 40):
            d = planner.demand(vnf)
            if d.invalid:
                continue
            passing = [hs for hs in planner.hosts if filters.exact_fit(d, hs)[0] and not filters.static_reason(d, hs)
                       and not filters.resource_reason(d, hs) and filters.cpu_policy_ok(d, hs)]
            views = [planner.weighers.view(hs) for hs in passing]  # the host states before the choice
            weighed = handler.get_weighed_objects(planner.weighers.weighers, views, weigher.REQUEST)
            got = planner.place(d, vnf.name)
            if not isinstance(got, Placement) or len(passing) < 2:
                continue
            top = weighed[0].weight
            want = [hs.name for hs, v in zip(passing, views, strict=True)
                    if next(w.weight for w in weighed if w.obj is v) == top]
            assert got.tie == (want if len(want) > 1 else []), (seed, vnf.flavor.extra_specs)
            checked += 1
            ties += len(want) > 1
    assert checked > 20 and ties > 0 and ties < checked, (checked, ties)


# multipliers that are not powers of two: a different order of the float operations shows in the last bits
ODD = {"ram_weight_multiplier": "0.3", "cpu_weight_multiplier": "1.7", "io_ops_weight_multiplier": "-0.7",
       "pci_weight_multiplier": "0.9", "num_instances_weight_multiplier": "-0.13"}


@pytest.mark.parametrize(("seed", "strategy", "weighing"), [(21, "spread", None), (22, "pack", None),
                                                            (23, "spread", ODD), (24, "pack", ODD)])
def test_per_host_weights_are_novas_bit_for_bit(seed: int, strategy: str, weighing: dict[str, str] | None) -> None:
    """Weighers.weights (what best and the tie use) against Nova's own HostWeightHandler and weigher classes on
    the same host states, every placement of a random fill-up: equal floats, bit for bit (float.hex)."""
    n = novaenv.nova()
    handler = n.scheduler_weights.HostWeightHandler()
    planner = Planner(random_inventory(seed, 8), strategy, memo=False, weighing=weighing)
    w = planner.weighers
    compared = 0
    for vnf in random_vnfs(seed, 60):
        hosts = planner.hosts
        views = [w.view(hs) for hs in hosts]
        ours = w.weights([(hs.index, *w.inputs(hs)) for hs in hosts])
        weighed = handler.get_weighed_objects(w.weighers, views, weigher.REQUEST)
        novas = [next(x.weight for x in weighed if x.obj is v) for v in views]
        assert [float(x).hex() for x in ours] == [float(x).hex() for x in novas]
        compared += len(set(ours)) > 1
        planner.place(planner.demand(vnf), vnf.name)
    assert compared > 30, "the weights must differ between hosts most of the time"


def test_plan_output_names_the_tie(tmp_path: Path) -> None:
    """Text and JSON: the tied hosts and why; a placement the weights decide has no tie key."""
    inv = tmp_path / "inventory.yaml"
    inv.write_text(yaml.safe_dump(inv_of([host("a"), host("b"), host("small", 1)])))
    request = tmp_path / "request.yaml"
    flavor = {"name": "pinned", "vcpus": 4, "ram": 4096, "extra_specs": PINNED}
    request.write_text(yaml.safe_dump({"kind": "nfvcat/placement-request",
                                       "vnfs": [{"name": "fw", "flavor": flavor, "count": 2}]}))
    proc = nfvcat("plan", str(request), "--inventory", str(inv), "--format", "json", "--no-server")
    assert proc.returncode == 0, proc.stderr
    first, second = json.loads(proc.stdout)["placements"]
    assert (first["host"], first["tie"], first["tie_hosts"]) == ("a", ["a", "b"], 2)
    assert first["tie_reason"] == weigher.TIE
    assert second["host"] == "b" and "tie" not in second and "tie_reason" not in second
    text = nfvcat("plan", str(request), "--inventory", str(inv), "--no-server").stdout
    assert f"fw-1: tie: Nova may take any of 2 hosts [a, b], not necessarily a ({weigher.TIE})" in text
    assert "fw-2: tie" not in text


def test_nova_conf_host_subset_size_is_read(tmp_path: Path) -> None:
    conf = tmp_path / "nova.conf"
    conf.write_text("[filter_scheduler]\nhost_subset_size = 3\nshuffle_best_same_weighed_hosts = maybe\n")
    request = tmp_path / "request.yaml"
    request.write_text(yaml.safe_dump({"kind": "nfvcat/placement-request",
                                       "vnfs": [{"name": "fw", "flavor": {"vcpus": 1, "ram": 512}}]}))
    inv = tmp_path / "inventory.yaml"
    inv.write_text(yaml.safe_dump(inv_of([host("a")])))
    proc = nfvcat("plan", str(request), "--inventory", str(inv), "--nova-conf", str(conf), "--no-server")
    assert proc.returncode == 1 and "shuffle_best_same_weighed_hosts = maybe" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
