"""Benchmark: whole-catalog validation cold (empty cache), warm (unchanged files), per engine.

Prints figures; asserts nothing about time. Goals on the 2-core reference machine: cold <= 6 s,
warm <= 1 s. Run: .venv/bin/python tests/bench/bench_validate.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(cache: str) -> tuple[float, str, int]:
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "nfvcat", "validate", "--timings"], cwd=ROOT,
                          capture_output=True, text=True, env={**os.environ, "NFVCAT_CACHE_DIR": cache})
    return time.monotonic() - started, proc.stderr, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    cold, warm, engines = [], [], {}
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as cache:
            seconds, timings, code = run(cache)
            cold.append(seconds)
            for name, value in re.findall(r"engine (\S+)\s+([\d.]+) s", timings):
                engines.setdefault(name, []).append(float(value))
            warm.append(run(cache)[0])
    files = re.search(r"(\d+) file\(s\), (\d+) engine job", timings)
    print(f"catalog: {files.group(1) if files else '?'} files, {files.group(2) if files else '?'} engine jobs, "
          f"exit {code}, {os.cpu_count()} CPUs")
    print(f"cold (empty cache), whole catalog: median {statistics.median(cold):.2f} s "
          f"(min {min(cold):.2f}, max {max(cold):.2f}; goal <= 6 s)")
    print(f"warm (unchanged files, cached):    median {statistics.median(warm):.2f} s "
          f"(min {min(warm):.2f}, max {max(warm):.2f}; goal <= 1 s)")
    for name, values in sorted(engines.items()):
        print(f"  engine {name:<8} median {statistics.median(values):.2f} s (worker wall time incl. import)")


if __name__ == "__main__":
    main()
