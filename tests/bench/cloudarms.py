"""What the dev-cloud benchmarks that time nfvcat against the bare ``openstack`` command share: running a
command (exit on failure), timing it, the samples option and the line of medians and their ratio."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def run(*argv: str, env: dict[str, str], cwd: Path = ROOT) -> str:
    res = subprocess.run(list(argv), env=env, cwd=cwd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        sys.exit(f"failed: {' '.join(argv)}\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}")
    return res.stdout


def timed(*argv: str, env: dict[str, str], cwd: Path = ROOT) -> float:
    t = time.monotonic()
    run(*argv, env=env, cwd=cwd)
    return time.monotonic() - t


def arguments(description: str | None) -> tuple[argparse.Namespace, dict[str, str]]:
    """The parsed options (--samples, at least 3) and the environment with the dev cloud's OS_CLOUD."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--samples", type=int, default=3, help="samples per arm after the warm-up (at least 3)")
    args = ap.parse_args()
    if args.samples < 3:
        ap.error("--samples must be at least 3")
    return args, {**os.environ, "OS_CLOUD": os.environ.get("OS_CLOUD", "nfvcat-dev")}


def line(what: str, a: list[float], b: list[float]) -> None:
    ma, mb = statistics.median(a), statistics.median(b)
    print(f"{what}: nfvcat {ma:.2f} s, openstack {mb:.2f} s, ratio {ma / mb:.2f} "
          f"(samples nfvcat {' '.join(f'{x:.2f}' for x in a)}; openstack {' '.join(f'{x:.2f}' for x in b)})",
          flush=True)
