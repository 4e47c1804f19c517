"""What networking-sfc costs the dev cloud (prints figures only, asserts nothing about time).

On a running dev cloud (the default state directory, `nfvcat devcloud up` done): the Neutron processes that
networking-sfc changes (neutron-api, neutron-rpc-server, neutron-periodic-workers and every host's Open vSwitch
agent) are stopped and `nfvcat devcloud up` starts them again, with networking-sfc on (`NFVCAT_DEVCLOUD_SFC=1`)
or off (`=0`); the other services stay up. Per arm: the seconds `up` takes (Neutron API ready, agents alive,
every compute usable) and, after a settle, the summed RSS of those processes (each process group). One warm-up of
each arm, then --samples rounds alternating which arm goes first; medians and differences. Leaves the dev cloud
with networking-sfc on.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
BIN = Path(sys.executable).parent
NEUTRON = ("neutron-api", "neutron-rpc-server", "neutron-periodic-workers")


def names(state: Any) -> list[str]:
    from nfvcat_testbeds.devcloud import procs

    return [n for n in procs.running(state) if n in NEUTRON or n.startswith("neutron-openvswitch-agent@")]


def rss_mib(pid: int) -> float:
    """RSS of a process and every process of its group (gunicorn's worker, privsep helpers)."""
    total = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if os.getpgid(int(proc.name)) != pid:
                continue
            for line in (proc / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except (OSError, ValueError):
            continue
    return total / 1024


def one(arm: str, settle: float) -> tuple[float, float]:
    from nfvcat_testbeds.devcloud import procs
    from nfvcat_testbeds.devcloud.state import State, default_dir

    state = State(default_dir())
    for name in names(state):
        procs.stop(state, name, grace=5)
    t0 = time.monotonic()
    res = subprocess.run([str(BIN / "nfvcat"), "devcloud", "up"], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "NFVCAT_DEVCLOUD_SFC": arm}, check=False, timeout=900)
    seconds = time.monotonic() - t0
    if res.returncode != 0:
        sys.exit(f"devcloud up (sfc={arm}) failed:\n{res.stderr[-2000:]}")
    time.sleep(settle)
    mib = sum(rss_mib(pid) for n in names(state) if (pid := procs.pid_of(state, n)))
    return seconds, mib


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--samples", type=int, default=3)
    ap.add_argument("--settle", type=float, default=20.0, help="seconds after up before RSS is read")
    args = ap.parse_args()
    results: dict[str, list[tuple[float, float]]] = {"1": [], "0": []}
    for arm in ("1", "0"):
        s, m = one(arm, args.settle)
        print(f"warm-up sfc={arm}: up {s:.1f} s, RSS {m:.0f} MiB", flush=True)
    for i in range(args.samples):
        for arm in (("1", "0") if i % 2 == 0 else ("0", "1")):
            s, m = one(arm, args.settle)
            results[arm].append((s, m))
            print(f"round {i + 1} sfc={arm}: up {s:.1f} s, RSS {m:.0f} MiB", flush=True)
    if (args.samples - 1) % 2 == 0:  # the last round ended with the arm off: leave networking-sfc on
        one("1", 0)
    med = {arm: (statistics.median(s for s, _ in r), statistics.median(m for _, m in r)) for arm, r in results.items()}
    print(f"median up (Neutron processes restarted): sfc on {med['1'][0]:.1f} s, off {med['0'][0]:.1f} s, "
          f"difference {med['1'][0] - med['0'][0]:+.1f} s, ratio {med['1'][0] / med['0'][0]:.2f}")
    print(f"median RSS of {', '.join(NEUTRON)} and the OVS agents: sfc on {med['1'][1]:.0f} MiB, off "
          f"{med['0'][1]:.0f} MiB, difference {med['1'][1] - med['0'][1]:+.0f} MiB, ratio "
          f"{med['1'][1] / med['0'][1]:.2f}")


if __name__ == "__main__":
    main()
