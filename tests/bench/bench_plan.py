"""Benchmark: place 10,000 VNFs onto 1,000 two-socket hosts with `nfvcat plan`'s planner (goal <= 30 s).

Prints figures only; no timed assertions. Run: .venv/bin/python tests/bench/bench_plan.py [--hosts N --vnfs N]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from nfvcat.catalog import inventory
from nfvcat.plan.planner import Planner
from nfvcat.plan.request import Chain, Flavor, Port, Vnf


def cell(i: int, shared: str, pages: int) -> dict[str, Any]:
    base = 28 * i
    return {"id": i, "socket": i, "cpu_shared_set": shared,
            "cpu_dedicated_set": f"{base + 4}-{base + 27},{base + 60}-{base + 83}",
            "siblings": {"offset": 56}, "memory_mb": 196608,
            "hugepages": [{"size": "1G", "total": pages}, {"size": "2M", "total": 2048}]}


def host_inventory(n: int) -> dict[str, Any]:
    sriov = {"name": "sriov-{index}", "count": n - n * 2 // 5, "role": "sriov", "ovs_physnets": ["provider"],
             "numa_cells": [cell(0, "0-3,56-59", 128), cell(1, "28-31,84-87", 128)],
             "pci_devices": [
                 {"address": a, "vendor_id": "8086", "product_id": "1572", "numa_node": node, "physnet": net,
                  "vfs": {"count": 16, "product_id": "154c"}}
                 for a, node, net in [("0000:3b:00.0", 0, "sriov1"), ("0000:3b:00.1", 0, "sriov2"),
                                      ("0000:af:00.0", 1, "sriov1"), ("0000:af:00.1", 1, "sriov2")]] + [
                 {"address": a, "kind": "qat", "vendor_id": "8086", "product_id": "37c8", "numa_node": node,
                  "vfs": {"count": 16, "product_id": "37c9"}}
                 for a, node in [("0000:3d:00.0", 0), ("0000:b1:00.0", 1)]]}
    dpdk = {"name": "dpdk-{index}", "count": n * 2 // 5, "role": "ovs-dpdk", "ovs_physnets": ["dpdk1", "dpdk2"],
            "physnet_numa_nodes": {"dpdk1": [0], "dpdk2": [1]}, "tunneled_numa_nodes": [0],
            "numa_cells": [cell(0, "0-1,56-57", 160), cell(1, "28-29,84-85", 160)]}
    return {"kind": "nfvcat/inventory", "pci": {"alias": [{"name": "qat", "vendor_id": "8086", "product_id": "37c9",
                                                          "device_type": "type-VF"}]},
            "defaults": {"reserved_host_memory_mb": 4096}, "hosts": [dpdk, sriov]}


def chain(n: int) -> Chain:
    pinned = {"hw:cpu_policy": "dedicated", "hw:mem_page_size": "1GB"}
    kinds = [
        Vnf("vrouter", Flavor("dpdk", 6, 6144, extra_specs={**pinned, "hw:emulator_threads_policy": "isolate"}),
            ports=[Port("normal", "dpdk1"), Port("normal")]),
        Vnf("sriov-fw", Flavor("sriov", 4, 4096, extra_specs={**pinned, "hw:pci_numa_affinity_policy": "required"}),
            ports=[Port("direct", "sriov1"), Port("direct", "sriov2")]),
        Vnf("ipsec", Flavor("qat", 4, 4096, extra_specs={**pinned, "pci_passthrough:alias": "qat:1",
                                                          "hw:pci_numa_affinity_policy": "required"}),
            ports=[Port("direct", "sriov1")]),
        Vnf("mgmt", Flavor("small", 2, 2048)),
        Vnf("pinned", Flavor("pinned", 8, 8192, extra_specs={**pinned, "hw:numa_nodes": "1"})),
    ]
    per = n // len(kinds)
    for k in kinds:
        k.count = per
    return Chain(source="bench", vnfs=kinds)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=1000)
    ap.add_argument("--vnfs", type=int, default=10000)
    ap.add_argument("--strategy", default="spread")
    args = ap.parse_args()
    t0 = time.perf_counter()
    inv = inventory.from_data(host_inventory(args.hosts), "bench")
    planner = Planner(inv, args.strategy)
    t1 = time.perf_counter()
    result = planner.place_chain(chain(args.vnfs))
    t2 = time.perf_counter()
    placed, failed = len(result.placements), len(result.failures)
    print(f"hosts: {len(inv.hosts)}  VNFs: {placed + failed}  placed: {placed}  do not fit: {failed}")
    print(f"inventory + Nova host objects: {t1 - t0:.2f} s (Nova import included)")
    print(f"placement: {t2 - t1:.2f} s  ({1000 * (t2 - t1) / max(1, placed + failed):.2f} ms per VNF)")
    print(f"exact Nova fits: {planner.exact_fits}  ({1000 * planner.fit_seconds / max(1, planner.exact_fits):.2f} ms "
          f"per fit, {planner.fit_seconds:.2f} s in total)")
    print(f"strategy: {args.strategy}")


if __name__ == "__main__":
    main()
