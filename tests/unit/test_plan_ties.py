"""Where Nova's weights do not decide its choice, the plan says so: hosts whose total weight (Nova's weighers,
Nova's normalisation, the same float operations) equals the chosen host's are a tie, which nova-scheduler breaks
in its own order of host states (a set's, per scheduler process); ``host_subset_size`` N > 1 widens the choice to
Nova's N best. The per-host weights themselves are compared with Nova's own weight handler, bit for bit."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from nfvcat.catalog import inventory
from nfvcat.plan import filters, novaenv, weigher
from nfvcat.plan.planner import UNDECIDED_NAMES, Placement, Planner, first_of
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
    assert (first.undecided, first.undecided_hosts) == (["a", "b", "c"], 3)
    assert first.undecided_reason == weigher.TIE
    # a's free resources are now below b's and c's: spread weighs them higher, and they tie with each other
    assert second.host == "b" and (second.undecided, second.undecided_hosts) == (["b", "c"], 2)


@pytest.mark.parametrize("memo", [True, False])
def test_weights_that_decide_are_no_tie(memo: bool) -> None:
    """A bigger host outweighs a smaller one (RAM and CPU weighers): no tie to report."""
    planner = Planner(inventory.from_data(inv_of([host("small", 1), host("big", 2)]), "ties"), memo=memo)
    got, = place_all(planner, [VNF])
    assert got.host == "big" and (got.undecided, got.undecided_hosts, got.undecided_reason) == ([], 0, "")


def test_anti_affinity_leaves_members_hosts_out_of_the_tie() -> None:
    """Identical hosts, an anti-affinity group: the host its first member took is no candidate, so not tied."""
    planner = Planner(inventory.from_data(inv_of([host("a"), host("b"), host("c")]), "ties"))
    ha = Vnf("ha", VNF.flavor, count=2, server_group="ha")
    first, second = place_all(planner, [ha], "anti-affinity")
    assert first.host == "a" and first.undecided == ["a", "b", "c"]
    assert second.host == "b" and second.undecided == ["b", "c"]


def test_a_tie_of_many_hosts_lists_the_first_and_counts_all() -> None:
    planner = Planner(inventory.from_data(inv_of([{**host("h{index:03d}"), "count": UNDECIDED_NAMES + 10}]), "ties"))
    got, = place_all(planner, [VNF])
    assert got.undecided_hosts == UNDECIDED_NAMES + 10
    assert got.undecided == [f"h{i:03d}" for i in range(1, UNDECIDED_NAMES + 1)]  # {index} counts from 1


def test_host_subset_size_widens_the_choice() -> None:
    """host_subset_size 2: Nova picks at random between its two best even when their weights differ."""
    planner = Planner(inventory.from_data(inv_of([host("small", 1), host("big", 2)]), "ties"),
                      weighing={"host_subset_size": "2"})
    got, = place_all(planner, [VNF])
    assert got.host == "big" and got.undecided == ["small", "big"] and got.undecided_hosts == 2
    assert got.undecided_reason.startswith("host_subset_size 2: Nova picks at random among its 2 best")
    Planner(inventory.from_data(inv_of([host("a")]), "ties"))  # the next planner has Nova's default again
    assert novaenv.nova().CONF.filter_scheduler.host_subset_size == 1


def passing_hosts(planner: Planner, d: Any) -> list[Any]:
    """The hosts that pass Nova's filters for demand ``d`` now, in the planner's host order."""
    return [hs for hs in planner.hosts if filters.exact_fit(d, hs)[0] and not filters.static_reason(d, hs)
            and not filters.resource_reason(d, hs) and filters.cpu_policy_ok(d, hs)]


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
            passing = passing_hosts(planner, d)
            views = [planner.weighers.view(hs) for hs in passing]  # the host states before the choice
            weighed = handler.get_weighed_objects(planner.weighers.weighers, views, weigher.REQUEST)
            got = planner.place(d, vnf.name)
            if not isinstance(got, Placement) or len(passing) < 2:
                continue
            top = weighed[0].weight
            want = [hs.name for hs, v in zip(passing, views, strict=True)
                    if next(w.weight for w in weighed if w.obj is v) == top]
            if weigher.IO_RACE in got.undecided_reason:  # the race's hosts too (test_io_race_...)
                assert set(want) <= set(got.undecided) if len(want) > 1 else got.host in got.undecided
            else:
                assert got.undecided == (want if len(want) > 1 else []), (seed, vnf.flavor.extra_specs)
            checked += 1
            ties += len(want) > 1
    assert checked > 20 and ties > 0 and ties < checked, (checked, ties)


@pytest.mark.parametrize("seed", [31, 32, 33])
def test_io_race_names_every_host_novas_handler_may_put_first(seed: int) -> None:
    """At every step of a random fill-up, for every way the hosts' periodic updates may have reset their build
    counts (num_io_ops: 0 or every server the plan put there, on each host independently), Nova's own
    HostWeightHandler puts first a host the plan names: the chosen one, or one of ``undecided``. Where it names
    the race, some such assignment does put another host first (the race is not claimed for nothing)."""
    n = novaenv.nova()
    handler = n.scheduler_weights.HostWeightHandler()
    planner = Planner(random_inventory(seed, 5), "spread", memo=False)
    w = planner.weighers
    raced = steps = 0
    for vnf in random_vnfs(seed, 40):
        d = planner.demand(vnf)
        if d.invalid:
            continue
        passing = passing_hosts(planner, d)
        views = [w.view(hs) for hs in passing]
        firsts = set()
        for mask in itertools.product((False, True), repeat=len(views)):
            for hs, v, reset in zip(passing, views, mask, strict=True):
                v.num_io_ops = 0 if reset else len(hs.instances)
            weighed = handler.get_weighed_objects(w.weighers, views, weigher.REQUEST)
            firsts |= {x.obj.host for x in weighed if x.weight == weighed[0].weight}
        got = planner.place(d, vnf.name)
        if not isinstance(got, Placement) or len(passing) < 2:
            continue
        steps += 1
        assert firsts <= {got.host, *got.undecided}, (seed, firsts, got.host, got.undecided, got.undecided_reason)
        if weigher.IO_RACE in got.undecided_reason:
            raced += 1
            assert len(firsts) > 1, (seed, got.undecided)
    assert steps > 10 and raced > 0, (steps, raced)


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
    assert (first["host"], first["undecided"], first["undecided_hosts"]) == ("a", ["a", "b"], 2)
    assert first["undecided_reason"] == weigher.TIE
    assert second["host"] == "b" and "undecided" not in second and "undecided_reason" not in second
    text = nfvcat("plan", str(request), "--inventory", str(inv), "--no-server").stdout
    assert f"fw-1: undecided: Nova may take any of 2 hosts [a, b], not necessarily a ({weigher.TIE})" in text
    assert "fw-2: undecided" not in text


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


def test_a_requested_host_is_the_only_one_filtered(tmp_path: Path) -> None:
    """``host:`` (Nova's requested host): the server goes there though the weights prefer another; when it does
    not fit there, the failure gives that host's reason only; a host not in the inventory is a one-line error."""
    inv = tmp_path / "inventory.yaml"
    inv.write_text(yaml.safe_dump(inv_of([host("small", 1), host("big", 2)])))
    flavor = {"name": "pinned", "vcpus": 4, "ram": 4096, "extra_specs": PINNED}
    big = {"name": "big-fw", "flavor": {**flavor, "vcpus": 20, "extra_specs": {**PINNED, "hw:numa_nodes": "2"}}}

    def plan(*vnfs: dict[str, Any]) -> Any:
        request = tmp_path / "request.yaml"
        request.write_text(yaml.safe_dump({"kind": "nfvcat/placement-request", "vnfs": list(vnfs)}))
        return nfvcat("plan", str(request), "--inventory", str(inv), "--format", "json", "--no-server")

    free = json.loads(plan({"name": "fw", "flavor": flavor}).stdout)["placements"][0]
    assert free["host"] == "big"
    proc = plan({"name": "fw", "flavor": flavor, "host": "small"})
    assert proc.returncode == 0 and json.loads(proc.stdout)["placements"][0]["host"] == "small", proc.stderr
    proc = plan({**big, "host": "small"})
    failure, = json.loads(proc.stdout)["failures"]
    assert proc.returncode == 2 and list(failure["hosts"]) == ["small"], proc.stdout
    assert json.loads(plan(big).stdout)["placements"][0]["host"] == "big"
    proc = plan({"name": "fw", "flavor": flavor, "host": "nowhere"})
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].endswith(
        f"request.yaml: VNF fw: requested host 'nowhere' is not in the inventory {inv}"), proc.stderr


@pytest.mark.parametrize("seed", range(5))
def test_first_of_is_the_head_of_the_merge(seed: int) -> None:
    """The undecided hosts listed: the first n of the lists' merge in host order, however many lists."""
    rng = random.Random(seed)
    hosts = rng.sample(range(5000), 3000)
    cuts = sorted(rng.sample(range(1, len(hosts)), rng.choice([1, 3, 60, 400])))
    lists = [sorted(hosts[a:b]) for a, b in zip([0, *cuts], [*cuts, len(hosts)], strict=True)]
    for n in (1, 7, UNDECIDED_NAMES):
        assert first_of(lists, n) == sorted(hosts)[:n]
