"""Benchmark: place VNFs onto two-socket hosts with `nfvcat plan`'s planner, 1,000 hosts / 10,000 VNFs and
10,000 / 100,000 by default (goal for the latter: <= 60 s, inventory plus placement; add 50000x500000 with
--sizes). Each size runs in its own process: wall times, Nova fits computed and memoised, ms per VNF, the
process's peak RSS and the load average when it started. ``--compare`` alternates the memoised planner with
the un-memoised one and says whether their placements are identical. ``--warm``: a chain plan on the
reference inventory in-process and through a warm engine server, alternated.

Prints figures only; no timed assertions. Run: .venv/bin/python tests/bench/bench_plan.py [--sizes 1000x10000]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from nfvcat.catalog import inventory
from nfvcat.plan import novaenv
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


def one(hosts: int, vnfs: int, strategy: str, memo: bool) -> dict[str, Any]:
    """One size in this process: timings, fit counts and this process's peak RSS."""
    t0 = time.perf_counter()
    novaenv.nova()
    t1 = time.perf_counter()
    inv = inventory.from_data(host_inventory(hosts), "bench")
    planner = Planner(inv, strategy, memo=memo)
    t2 = time.perf_counter()
    result = planner.place_chain(chain(vnfs))
    t3 = time.perf_counter()
    placed, failed = len(result.placements), len(result.failures)
    return {"hosts": len(inv.hosts), "vnfs": placed + failed, "placed": placed, "import": t1 - t0,
            "inventory": t2 - t1, "placement": t3 - t2, "total": t3 - t0, "fits": planner.exact_fits,
            "memoised": planner.fits_memoised, "fit_seconds": planner.fit_seconds,
            "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "digest": hashlib.sha256(repr([(p.instance, p.host, p.numa_cells, p.pinned_cpus, p.emulator_cpus,
                                             p.pci_devices) for p in result.placements]).encode()).hexdigest()[:16]}


def sample(hosts: int, vnfs: int, strategy: str, memo: bool) -> dict[str, Any]:
    """One size in a fresh process (its own peak RSS, Nova imported there too)."""
    cmd = [sys.executable, __file__, "--one", f"{hosts}x{vnfs}", "--strategy", strategy] + ([] if memo else
                                                                                           ["--reference"])
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return {**json.loads(out), "load": load}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="1000x10000,10000x100000", help="HOSTSxVNFS,... (each in its own process)")
    ap.add_argument("--samples", type=int, default=1, help="runs per size and arm (medians printed)")
    ap.add_argument("--reference", action="store_true", help="the un-memoised planner only")
    ap.add_argument("--compare", action="store_true", help="both planners, alternated; placements compared")
    ap.add_argument("--strategy", default="spread")
    ap.add_argument("--warm", action="store_true", help="a chain plan through the warm engine server instead")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.warm:
        warm(max(3, args.samples))
        return
    if args.one:
        h, v = map(int, args.one.split("x"))
        print(json.dumps(one(h, v, args.strategy, not args.reference)))
        return
    arms = [True, False] if args.compare else [not args.reference]
    for size in args.sizes.split(","):
        h, v = map(int, size.split("x"))
        runs: dict[bool, list[dict[str, Any]]] = {a: [] for a in arms}
        for _ in range(args.samples):
            for arm in arms:
                runs[arm].append(sample(h, v, args.strategy, arm))
        for arm in arms:
            report(arm, runs[arm])
        if args.compare:
            same = {r["digest"] for a in arms for r in runs[a]}
            ratio = median(runs[False], "total") / median(runs[True], "total")
            print(f"  placements identical: {'yes' if len(same) == 1 else 'NO'}; "
                  f"total ratio reference/memoised {ratio:.1f}")


def warm(samples: int) -> None:
    """``nfvcat plan`` of chain-vrouter on the reference inventory: in-process against a warm engine server's
    (a private server in a temporary cache directory, stopped at the end), alternated."""
    root = Path(__file__).resolve().parents[2]
    chain_args = ["plan", "templates/heat/chain-vrouter/chain-vrouter.yaml", "-e",
                  "templates/heat/chain-vrouter/examples/sriov.env.yaml"]
    with tempfile.TemporaryDirectory(prefix="bench-plan-") as cache:
        env = {**os.environ, "NFVCAT_CACHE_DIR": cache, "NFVCAT_NO_SERVER": "0"}

        def call(*extra: str) -> tuple[float, str]:
            t = time.perf_counter()
            out = subprocess.run([sys.executable, "-m", "nfvcat", *chain_args, *extra], cwd=root, env=env,
                                 check=True, capture_output=True, text=True).stdout
            return time.perf_counter() - t, out

        try:
            call()  # starts the server: the warm-up
            times: dict[str, list[float]] = {"in-process (--no-server)": [], "engine server, warm": []}
            outs = set()
            for _ in range(samples):
                for arm, extra in (("in-process (--no-server)", ("--no-server",)), ("engine server, warm", ())):
                    with open("/proc/loadavg") as f:
                        load = f.read().split()[0]
                    seconds, out = call(*extra)
                    times[arm].append(seconds)
                    outs.add(out)
                    print(f"  {arm}: {seconds:.3f} s (load average {load})")
        finally:
            subprocess.run([sys.executable, "-m", "nfvcat", "server", "stop"], cwd=root, env=env, check=False,
                           capture_output=True)
    for arm, ts in times.items():
        print(f"{arm}: median {statistics.median(ts):.3f} s of {len(ts)}")
    ratio = statistics.median(times["in-process (--no-server)"]) / statistics.median(times["engine server, warm"])
    print(f"ratio {ratio:.1f}; output identical: {'yes' if len(outs) == 1 else 'NO'}")


def median(runs: list[dict[str, Any]], key: str) -> float:
    return float(statistics.median(r[key] for r in runs))


def report(memo: bool, rs: list[dict[str, Any]]) -> None:
    r0 = rs[0]
    loads = ", ".join(r["load"] for r in rs)
    print(f"{'memoised' if memo else 'reference'} {r0['hosts']} hosts, {r0['vnfs']} VNFs ({r0['placed']} placed), "
          f"median of {len(rs)} (load average {loads}): total {median(rs, 'total'):.2f} s = Nova import "
          f"{median(rs, 'import'):.2f} s + inventory and Nova host objects {median(rs, 'inventory'):.2f} s + "
          f"placement {median(rs, 'placement'):.2f} s; {1000 * median(rs, 'placement') / max(1, r0['vnfs']):.3f} "
          f"ms per VNF; Nova fits computed {r0['fits']}, memoised {r0['memoised']}; peak RSS "
          f"{median(rs, 'rss_mib'):.0f} MiB; placements {r0['digest']}")

if __name__ == "__main__":
    main()
