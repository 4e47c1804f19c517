"""Benchmark: does `nfvcat plan` gain from the machine's second core where the work splits without changing the
answer? Two candidate splits of the 10,000-host / 100,000-VNF run of bench_plan.py:

- the inventory: a forked child expands half the hosts and pickles its HostSpecs back while this process
  expands the other half (arms alternated with the serial expansion, after a warm-up);
- the placement loop: each VNF's choice depends on the previous ones (a host's free state, Nova's
  normalisation over the hosts that pass), so a split of its filtering/weighing across two processes needs at
  least one synchronous exchange per VNF. Printed: a pipe round trip between two processes against the
  placement time per VNF (median of bench_plan.py's `one` at 10k/100k).

Prints figures only, with the load average of each sample. Run: .venv/bin/python tests/bench/bench_plan_cores.py
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import pickle
import statistics
import time
from typing import Any

import bench_plan  # this directory (run as a script, like bench_plan.py): the same inventory and chain

from nfvcat.catalog import inventory


def load() -> str:
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def _half(data: dict[str, Any], which: int) -> dict[str, Any]:
    hosts = []
    for h in data["hosts"]:
        n = int(h["count"])
        lo, hi = (0, n // 2) if which == 0 else (n // 2, n)
        hosts.append({**h, "count": hi - lo, "name": h["name"].replace("{index}", f"{which}-{{index}}")})
    return {**data, "hosts": hosts}


def serial(data: dict[str, Any]) -> list[Any]:
    return list(inventory.from_data(data, "bench").hosts)


def two_processes(data: dict[str, Any]) -> list[Any]:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the second half, pickled back
        os.close(r)
        with os.fdopen(w, "wb") as f:
            f.write(pickle.dumps(inventory.from_data(_half(data, 1), "bench").hosts, protocol=5))
        os._exit(0)
    os.close(w)
    mine = list(inventory.from_data(_half(data, 0), "bench").hosts)
    with os.fdopen(r, "rb") as f:
        theirs = pickle.loads(f.read())
    os.waitpid(pid, 0)
    return mine + theirs


def _echo(conn: Any) -> None:
    while (msg := conn.recv()) is not None:
        conn.send(msg)


def round_trip(n: int = 20000) -> float:
    a, b = multiprocessing.Pipe()
    p = multiprocessing.get_context("fork").Process(target=_echo, args=(b,))
    p.start()
    msg = (1, 2.0, 3.0, 4.0)  # a host index and its weigher inputs
    for _ in range(1000):
        a.send(msg)
        a.recv()
    t = time.perf_counter()
    for _ in range(n):
        a.send(msg)
        a.recv()
    seconds = (time.perf_counter() - t) / n
    a.send(None)
    p.join()
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--hosts", type=int, default=10000)
    ap.add_argument("--vnfs", type=int, default=100000)
    ap.add_argument("--samples", type=int, default=5)
    args = ap.parse_args()
    data = bench_plan.host_inventory(args.hosts)
    serial(data), two_processes(data)  # warm-up
    times: dict[str, list[float]] = {"serial": [], "two processes": []}
    for i in range(args.samples):
        for arm, fn in (("serial", serial), ("two processes", two_processes)):
            before = load()
            t = time.perf_counter()
            hosts = fn(data)
            times[arm].append(time.perf_counter() - t)
            print(f"  sample {i + 1} {arm}: {times[arm][-1]:.2f} s, {len(hosts)} hosts (load average {before})")
    s, p = statistics.median(times["serial"]), statistics.median(times["two processes"])
    print(f"inventory of {args.hosts} hosts: serial median {s:.2f} s, two processes median {p:.2f} s, "
          f"ratio two/serial {p / s:.2f}")
    trips, per_vnf = [], []
    for i in range(min(3, args.samples)):
        before = load()
        trips.append(round_trip())
        per_vnf.append(bench_plan.sample(args.hosts, args.vnfs, "spread", True)["placement"] / args.vnfs)
        print(f"  sample {i + 1}: round trip {1e6 * trips[-1]:.1f} us, placement {1e6 * per_vnf[-1]:.1f} us per "
              f"VNF (load average {before})")
    rt, pv = statistics.median(trips), statistics.median(per_vnf)
    print(f"placement loop: {1e6 * pv:.1f} us per VNF in one process; a pipe round trip {1e6 * rt:.1f} us "
          f"(medians): splitting each VNF's work in two saves at most {1e6 * pv / 2:.1f} us and costs at least "
          f"one round trip")


if __name__ == "__main__":
    main()
