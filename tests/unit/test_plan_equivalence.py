"""The planner's search (sorted hosts, per-cell prefilter, first fit) gives exactly what a brute force gives:
Nova's ``numa_fit_instance_to_host`` on every host, the best weight among hosts that fit, then Nova's own
consumption. Same hosts, same NUMA cells, same pinned CPUs, same pages and devices, same host state after."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from nfvcat.catalog import inventory
from nfvcat.plan import demand, filters, hoststate, novaenv, weigher
from nfvcat.plan.planner import Failure, Planner
from nfvcat.plan.request import Chain, Flavor, Port, Vnf

ALIAS = [{"name": "qat", "vendor_id": "8086", "product_id": "37c9", "device_type": "type-VF"},
         {"name": "qatreq", "vendor_id": "8086", "product_id": "37c9", "device_type": "type-VF",
          "numa_policy": "required"}]


def _cell(i: int, rng: random.Random, cores: int) -> dict[str, Any]:
    base, off = i * cores, 2 * cores
    shared = f"{base}-{base + 1},{base + off}-{base + off + 1}"
    dedicated = f"{base + 2}-{base + cores - 1},{base + off + 2}-{base + off + cores - 1}"
    pinned = sorted(rng.sample(range(base + 2, base + cores), rng.randint(0, 3)))
    return {"id": i, "socket": i // 2 if rng.random() < 0.3 else i, "cpu_shared_set": shared,
            "cpu_dedicated_set": dedicated, "siblings": {"offset": off}, "memory_mb": 32768,
            "hugepages": [{"size": "1G", "total": rng.choice([0, 4, 8, 16]), "used": rng.choice([0, 0, 2])},
                          {"size": "2M", "total": rng.choice([0, 1024, 2048])}],
            "used": {"pinned_cpus": ",".join(map(str, pinned)), "cpu_usage": rng.randint(0, 2),
                     "memory_mb": 1024 * len(pinned)}}


def random_inventory(seed: int, n: int = 10) -> inventory.Inventory:
    rng = random.Random(seed)
    hosts = []
    for h in range(n):
        ncell = rng.choice([1, 2, 2, 2, 4])
        cores = 8
        devices = []
        if rng.random() < 0.7:
            for k in range(rng.randint(1, 3)):
                node = rng.choice([None, *range(ncell)]) if rng.random() < 0.2 else rng.randrange(ncell)
                devices.append({"address": f"0000:{0x10 + k:02x}:00.0", "vendor_id": "8086", "product_id": "1572",
                                "numa_node": node, "physnet": rng.choice(["sriov1", "sriov2"]),
                                "vfs": {"count": rng.randint(1, 4), "product_id": "154c", "used": 0}})
            if rng.random() < 0.5:
                devices.append({"address": "0000:3d:00.0", "vendor_id": "8086", "product_id": "37c8", "kind": "qat",
                                "numa_node": rng.randrange(ncell), "vfs": {"count": rng.randint(1, 3),
                                                                            "product_id": "37c9"}})
        cells = [_cell(i, rng, cores) for i in range(ncell)]
        if rng.random() < 0.3:  # SMT off: every CPU its own core
            for c in cells:
                del c["siblings"]
        hosts.append({"name": f"h{h:02d}", "role": rng.choice(["sriov", "ovs-dpdk"]), "ovs_physnets": ["dpdk1"],
                      "cpu_allocation_ratio": rng.choice([1.0, 2.0, 4.0]), "numa_cells": cells,
                      "pci_devices": devices})
    return inventory.from_data({"kind": "nfvcat/inventory", "pci": {"alias": ALIAS}, "hosts": hosts}, "random")


def random_vnfs(seed: int, n: int) -> list[Vnf]:
    rng = random.Random(seed)
    vnfs = []
    for i in range(n):
        specs: dict[str, str] = {}
        vcpus = rng.choice([1, 2, 3, 4, 6])
        ram = rng.choice([1024, 2048, 4096])
        kind = rng.choice(["shared", "numa-shared", "dedicated", "dedicated", "mixed"])
        if kind == "numa-shared":
            specs["hw:numa_nodes"] = rng.choice(["1", "2"])
            vcpus, ram = 4, 4096
        if kind in ("dedicated", "mixed"):
            specs["hw:cpu_policy"] = "dedicated" if kind == "dedicated" else "mixed"
            if kind == "mixed":
                specs["hw:cpu_dedicated_mask"] = "^0"
                vcpus = max(vcpus, 2)
            if rng.random() < 0.3:
                specs["hw:cpu_thread_policy"] = rng.choice(["prefer", "require", "isolate"])
            if rng.random() < 0.2 and kind == "dedicated":
                specs["hw:emulator_threads_policy"] = "isolate"
            if rng.random() < 0.2:
                specs["hw:numa_nodes"] = "2"
                vcpus, ram = 4, 4096
        if kind != "shared" and rng.random() < 0.6:
            specs["hw:mem_page_size"] = rng.choice(["1GB", "2MB", "large", "any", "small"])
        ports = []
        if rng.random() < 0.4:
            ports.append(Port("direct", rng.choice(["sriov1", "sriov2"])))
            if kind != "shared" and rng.random() < 0.5:
                specs["hw:pci_numa_affinity_policy"] = rng.choice(["required", "legacy", "preferred", "socket"])
        if rng.random() < 0.2:
            specs["pci_passthrough:alias"] = rng.choice(["qat:1", "qatreq:1"])
        if rng.random() < 0.15:
            ports.append(Port("normal", "dpdk1"))
        vnfs.append(Vnf(name=f"v{i}", flavor=Flavor(f"f{i}", vcpus, ram, extra_specs=specs), ports=ports,
                        server_group="ha" if rng.random() < 0.1 else None))
    return vnfs


def brute_force(inv: inventory.Inventory, chain: Chain, strategy: str) -> tuple[list[Any], list[Any]]:
    """No prefilter, no grouping: Nova's fit on every host passing the scheduler filters, then Nova's own
    weight handler over those hosts (its weighers, normalised), its first host wins."""
    n = novaenv.nova()
    novaenv.configure(inv.pci_alias)
    hosts = [hoststate.build(h) for h in inv.hosts]
    weighers = weigher.Weighers(strategy)
    handler = n.scheduler_weights.HostWeightHandler()
    group_hosts: list[int] = []
    results: list[Any] = []
    for vnf in chain.vnfs:
        d = demand.build(vnf)
        if d.invalid:
            results.append(None)
            continue
        candidates = []
        for hs in hosts:
            if filters.static_reason(d, hs) or filters.resource_reason(d, hs) or not filters.cpu_policy_ok(d, hs):
                continue
            if vnf.server_group and hs.index in group_hosts:
                continue
            if d.topology is not None:
                fitted = n.hardware.numa_fit_instance_to_host(
                    hs.topology, d.topology.obj_clone(), None, limits=filters.limits(d, hs),
                    pci_requests=d.pci_requests or None, pci_stats=hs.pci)
                if fitted is None:
                    continue
            else:
                fitted = None
                if d.pci_requests and (hs.pci is None or not hs.pci.support_requests(d.pci_requests, None)):
                    continue
            candidates.append((hs, fitted))
        if not candidates:
            results.append(None)
            continue
        # Nova's own handler: its weighers normalised over these hosts, its stable descending sort
        views = [weighers.view(hs) for hs, _ in candidates]
        weighed = handler.get_weighed_objects(weighers.weighers, views, weigher.REQUEST)
        best, fitted = candidates[next(i for i, v in enumerate(views) if v is weighed[0].obj)]
        before = copy.deepcopy(best.topology)
        best.instances.append(vnf.name)
        best.consume(fitted, d.pci_requests, d.vcpus, d.pcpus, d.memory_mb, d.flavor.vcpus)
        if fitted is not None:  # consume is Nova's numa_usage_from_instance_numa, nothing else
            assert _topo(best.topology) == _topo(n.hardware.numa_usage_from_instance_numa(before, fitted))
        if vnf.server_group:
            group_hosts.append(best.index)
        results.append((best.name, _fitted(fitted)))
    return results, [_state(h) for h in hosts]


def _fitted(fitted: Any) -> Any:
    if fitted is None:
        return None
    return [(c.id, sorted((c.cpu_pinning or {}).items()), c.pagesize if "pagesize" in c else None)
            for c in fitted.cells]


def _topo(topology: Any) -> Any:
    return [(c.id, sorted(c.pinned_cpus), c.cpu_usage, c.memory_usage,
             [(p.size_kb, p.used) for p in c.mempages]) for c in topology.cells]


def _state(hs: hoststate.HostState) -> Any:
    pools = sorted((hoststate.pool_key(p), p["count"]) for p in hs.pci.pools) if hs.pci else []
    return (hs.name, _topo(hs.topology), pools, hs.vcpu_used, hs.pcpu_used, hs.mem_used)


def planned(inv: inventory.Inventory, chain: Chain, strategy: str) -> tuple[list[Any], list[Any]]:
    planner = Planner(inv, strategy)
    results: list[Any] = []
    for vnf in chain.vnfs:
        got = planner.place(planner.demand(vnf), vnf.name, vnf.server_group,
                            chain.server_groups.get(vnf.server_group or ""))
        if isinstance(got, Failure):
            results.append(None)
        else:
            fitted = planner.last_fitted
            results.append((got.host, _fitted(fitted)))
    return results, [_state(h) for h in planner.hosts]


@pytest.mark.parametrize(("seed", "strategy"), [(1, "spread"), (2, "pack"), (3, "spread"), (4, "pack")])
def test_planner_equals_brute_force_nova_fit(seed: int, strategy: str) -> None:
    inv = random_inventory(seed)
    vnfs = random_vnfs(seed, 120)
    chain = Chain(source="random", vnfs=vnfs, server_groups={"ha": "anti-affinity"})
    expected, expected_state = brute_force(inv, chain, strategy)
    got, got_state = planned(inv, chain, strategy)
    assert sum(1 for r in expected if r) > 20, "the workload must place something"
    assert sum(1 for r in expected if r is None) > 5, "and run some hosts full"
    for i, (e, g) in enumerate(zip(expected, got, strict=True)):
        assert e == g, f"VNF {i} ({vnfs[i].flavor.extra_specs}, ports {vnfs[i].ports})"
    assert got_state == expected_state


def test_reference_inventory_equivalence() -> None:
    inv = inventory.load(None)
    vnfs = random_vnfs(7, 150)
    chain = Chain(source="random", vnfs=vnfs, server_groups={"ha": "anti-affinity"})
    assert planned(inv, chain, "spread") == brute_force(inv, chain, "spread")


@pytest.mark.parametrize("seed", [5, 6])
def test_prefilter_never_rejects_a_host_nova_accepts(seed: int) -> None:
    """At every step of a random fill-up, on every host: Nova fits => may_fit (necessary condition)."""
    inv = random_inventory(seed, 8)
    planner = Planner(inv, "pack")
    checked = rejected = 0
    for vnf in random_vnfs(seed + 100, 100):
        d = planner.demand(vnf)
        if d.invalid:
            continue
        for hs in planner.hosts:
            fits = filters.exact_fit(d, hs)[0]
            may = filters.may_fit(d, hs)
            checked += 1
            rejected += not may
            assert may or not fits, f"{hs.name}: prefilter rejects what Nova fits ({vnf.flavor.extra_specs})"
        planner.place(d, vnf.name)
    assert rejected > checked // 10, "the prefilter must do some work"


@pytest.mark.parametrize(("seed", "strategy"), [(8, "spread"), (9, "pack")])
def test_repeated_vnfs_reuse_cached_verdicts_without_changing_results(seed: int, strategy: str) -> None:
    """The same VNFs again and again (as counts and --capacity do): cached per-host verdicts stay exact."""
    inv = random_inventory(seed)
    vnfs = random_vnfs(seed, 8) * 15
    chain = Chain(source="random", vnfs=vnfs, server_groups={"ha": "anti-affinity"})
    assert planned(inv, chain, strategy) == brute_force(inv, chain, strategy)
