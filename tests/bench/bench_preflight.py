"""Benchmark: ``nfvcat preflight``'s planning of the whole catalog (every Heat entry in each of its example
environments, as ``preflight`` judges them) on a collected inventory of N hosts (default 1,000: a third each
SR-IOV, OVS-DPDK and pinned, each with its own cells as host access reads them). The cloud's API reads are not
timed (they are the cloud's); the inventory's load and each round of plans are. Warm: a first round is not
counted; then ``--rounds`` rounds, the median quoted, with the load average beside it.

Prints figures only; no timed assertions. Run: PYTHONPATH=. .venv/bin/python tests/bench/bench_preflight.py [--hosts
1000] (tox -e bench sets it)
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

from nfvcat import catalog
from nfvcat.catalog import inventory as inventory_mod
from nfvcat.cloud import preflight
from nfvcat.cloud.cloudfacts import Estimated
from nfvcat.cloud.hostaccess import inventory_cells
from nfvcat.plan import collect
from tests.unit.preflightfake import cells

KINDS = ("sriov", "dpdk", "pinned")


def collected(n: int) -> dict[str, Any]:
    hosts = [f"h{i}" for i in range(n)]
    hvs = [{"name": h, "host": h, "vcpus": 32, "memory_mb": 65536,
            "cpu_info": {"topology": {"sockets": 2, "cores": 8, "threads": 2}}} for h in hosts]
    providers = {h: {"inventories": {"PCPU": {"total": 28}, "VCPU": {"total": 4, "allocation_ratio": 4.0},
                                     "MEMORY_MB": {"total": 65536}}, "traits": []} for h in hosts}
    agents = []
    for i, h in enumerate(hosts):
        kind = KINDS[i % 3]
        conf: dict[str, Any] = {"bridge_mappings": {"physnet_mgmt": "br-mgmt"}, "tunnel_types": ["vxlan"]}
        if kind == "dpdk":
            conf = {"bridge_mappings": {"physnet_mgmt": "br-mgmt", "physnet_dpdk": "br-dpdk"},
                    "datapath_type": "netdev", "tunnel_types": ["vxlan"]}
        agents.append({"host": h, "agent_type": collect.OVS_AGENT, "configurations": conf})
        if kind == "sriov":
            agents.append({"host": h, "agent_type": collect.SRIOV_AGENT,
                           "configurations": {"device_mappings": {"physnet_sriov": ["ens1f0"]}, "devices": 16}})
    measured = {h: ("bench", inventory_cells(cells())) for h in hosts}
    data = collect.build(hvs, providers, agents, measured)
    for i, host in enumerate(data["hosts"]):
        host["aggregate_metadata"] = {"nfv_class": f"{KINDS[i % 3]},pinned,qat,shared,realtime"}
    return data


class Facts:
    def __init__(self, inv: inventory_mod.Inventory) -> None:
        self.inventory = (inv, Estimated(set(), {h.name for h in inv.hosts}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    data = collected(args.hosts)
    t0 = time.perf_counter()
    inv = inventory_mod.from_data(data, "bench")
    load_s = time.perf_counter() - t0
    root = catalog.find_root()
    needs = [(e, env, preflight.needs(e, env)) for e, env in preflight.cases(root)]
    facts: Any = Facts(inv)

    def one_round() -> tuple[float, dict[str, int]]:
        t = time.perf_counter()
        verdicts: dict[str, int] = {}
        for e, env, need in needs:
            case = preflight.Case(e.name, e.version, str(env))
            if need.chain is not None:
                preflight._plan(case, need, facts)
            verdicts[case.verdict] = verdicts.get(case.verdict, 0) + 1
        return time.perf_counter() - t, verdicts

    cold, verdicts = one_round()
    times = [one_round()[0] for _ in range(args.rounds)]
    print(f"{len(needs)} cases on {args.hosts} hosts; load average at start {os.getloadavg()[0]:.1f}; "
          f"inventory load {load_s:.2f} s; first round {cold:.2f} s; warm rounds: median "
          f"{statistics.median(times):.2f} s (min {min(times):.2f}, max {max(times):.2f}); verdicts {verdicts}")


if __name__ == "__main__":
    main()
