"""Benchmark: the engine server against a fresh process running Heat's own engine, on changed templates.

Inputs: the catalog copied to a temporary directory, each Heat entry keeping one example
environment (its first). Before every timed call a comment is appended to the templates it validates, so
no result cache answers on either side. Arms, alternated sample by sample after a warm-up of each:
- ``server``: ``nfvcat validate`` with the warm engine server;
- ``fresh``:  ``nfvcat validate --no-server --no-cache`` (new worker processes import Heat each call);
- ``api``:    with ``--os-cloud CLOUD``: ``openstack orchestration template validate`` per file against the
  live Heat API (the dev cloud), a client process per file as an editor or a hook would run it; and
  ``api, one process``: one Python process (heatclient on openstacksdk's session) sending every file to
  the same API, start included. Without ``--os-cloud`` these arms are skipped with a note.
Figures: the templates in one call, one file per call (each of them), the first call (server start),
the whole catalog cold (empty cache), and the memory of the running server (server + engine workers).
Prints figures; asserts nothing about time. Goals: changed 6 <= 0.3 s warm, first call <= 6 s.
Run: .venv/bin/python tests/bench/bench_server.py [--runs 5] [--os-cloud CLOUD] [--only-six]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
# The command as users run it: the console script pip installs beside this Python (``python -m nfvcat``
# also imports runpy, 4 ms of every call's start-up).
_SCRIPT = Path(sys.executable).with_name("nfvcat")
NFVCAT = [str(_SCRIPT)] if _SCRIPT.is_file() else [sys.executable, "-m", "nfvcat"]
CATALOG_DIRS = ("flavors", "templates", "vnfd", "hooks")


def copy_catalog(dest: Path, without: tuple[str, ...] = ()) -> list[tuple[Path, Path]]:
    """The catalog in ``dest``; (template, its one example environment) for each Heat entry (but those
    named in ``without``)."""
    for name in CATALOG_DIRS:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, dest / name)
    pairs = []
    for entry in sorted((dest / "templates" / "heat").iterdir()):
        meta = entry / "entry.yaml"
        if not meta.is_file() or entry.name in without:
            continue
        template = next(line.split(":", 1)[1].strip() for line in meta.read_text().splitlines()
                        if line.startswith("template:"))
        examples = sorted((entry / "examples").glob("*.yaml"))
        for extra in examples[1:]:
            extra.unlink()
        pairs.append((entry / template, examples[0]))
    return pairs


class Bench:
    def __init__(self, root: Path, pairs: list[tuple[Path, Path]], cache: Path):
        self.root = root
        self.pairs = pairs
        self.files = [str(t.relative_to(root)) for t, _ in pairs]
        self.env = {**os.environ, "NFVCAT_CACHE_DIR": str(cache), "NFVCAT_NO_SERVER": "0"}
        self.stamp = 0
        self.last_stderr = ""
        self.inside: list[float] = []

    def change(self, files: list[str]) -> None:
        self.stamp += 1
        for f in files:
            with open(self.root / f, "a") as out:
                out.write(f"# bench run {self.stamp}\n")

    def call(self, args: list[str], env: dict[str, str] | None = None) -> float:
        started = time.monotonic()
        proc = subprocess.run([*NFVCAT, *args], cwd=self.root, capture_output=True, text=True,
                              env=env or self.env)
        seconds = time.monotonic() - started
        if proc.returncode not in (0, 2):
            raise SystemExit(f"nfvcat {' '.join(args)}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
        self.last_stderr = proc.stderr
        return seconds

    def server(self, files: list[str]) -> float:
        """The wall time of the call; the server's own time for it (``--timings``' total) is kept in
        ``inside`` so that the client's share (start-up, arguments, the socket, printing) shows."""
        self.change(files)
        seconds = self.call(["validate", "--timings", *files])
        total = [line.split()[1] for line in self.last_stderr.splitlines() if line.strip().startswith("total ")]
        if total:
            self.inside.append(float(total[0]))
        return seconds

    def fresh(self, files: list[str]) -> float:
        self.change(files)
        return self.call(["validate", "--no-server", "--no-cache", *files])

    def api(self, cloud: str, files: list[str]) -> float:
        """One ``openstack`` client process per file, as an editor or a hook would run it."""
        self.change(files)
        total = 0.0
        for f in files:
            env_file = next(str(e) for t, e in self.pairs if str(t.relative_to(self.root)) == f)
            started = time.monotonic()
            proc = subprocess.run([str(Path(sys.executable).with_name("openstack")), "--os-cloud", cloud,
                                   "orchestration", "template", "validate", "-t", f, "-e", env_file, "-f", "json"],
                                  cwd=self.root, capture_output=True, text=True)
            total += time.monotonic() - started
            if proc.returncode != 0:
                raise SystemExit(f"openstack template validate {f}: {proc.stderr.strip()[-500:]}")
        return total

    def api_one(self, cloud: str, files: list[str]) -> float:
        """One Python process (heatclient on openstacksdk's session) validating every file against the live
        Heat API, process start included: the cheapest way to ask the live API about several files."""
        self.change(files)
        pairs = [(f, next(str(e) for t, e in self.pairs if str(t.relative_to(self.root)) == f)) for f in files]
        code = ("import json, sys, openstack\n"
                "from heatclient import client\n"
                "from heatclient.common import template_utils\n"
                "heat = client.Client('1', session=openstack.connect(cloud=sys.argv[1]).session)\n"
                "for t, e in json.loads(sys.argv[2]):\n"
                "    files, tpl = template_utils.get_template_contents(template_file=t)\n"
                "    env_files, env = template_utils.process_multiple_environments_and_files(env_paths=[e])\n"
                "    heat.stacks.validate(template=tpl, files={**files, **env_files}, environment=env)\n")
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-c", code, cloud, json.dumps(pairs)], cwd=self.root,
                              capture_output=True, text=True)
        seconds = time.monotonic() - started
        if proc.returncode != 0:
            raise SystemExit(f"live Heat API (one process): {proc.stderr.strip()[-500:]}")
        return seconds

    def status(self) -> dict[str, Any]:
        proc = subprocess.run([*NFVCAT, "server", "status", "--format", "json"], cwd=self.root,
                              capture_output=True, text=True, env=self.env)
        return json.loads(proc.stdout)["status"] or {}

    def stop(self) -> None:
        subprocess.run([*NFVCAT, "server", "stop"], cwd=self.root, capture_output=True, env=self.env)

    def warm(self, timeout: float = 300) -> float:
        """Wait until every worker of the server has loaded its engine (after the first call, the server
        loads the engines that call did not need, and Heat's second worker); the seconds waited."""
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            workers = self.status().get("workers", {})
            if workers and all(w.get("ready") for w in workers.values()):
                break
            time.sleep(0.5)
        return time.monotonic() - started


def alternate(arms: dict[str, Callable[[], float]], runs: int) -> dict[str, list[float]]:
    for arm in arms.values():  # warm-up, not counted
        arm()
    samples: dict[str, list[float]] = {name: [] for name in arms}
    for i in range(runs):
        order = list(arms) if i % 2 == 0 else list(reversed(arms))
        for name in order:
            samples[name].append(arms[name]())
    return samples


def line(label: str, values: list[float]) -> str:
    return (f"  {label:<34} median {statistics.median(values):6.3f} s  "
            f"(min {min(values):.3f}, max {max(values):.3f}, n={len(values)})")


def ratios(samples: dict[str, list[float]], base: str) -> str:
    mine = statistics.median(samples[base])
    return ", ".join(f"{name} / {base} = {statistics.median(v) / mine:.1f}x"
                     for name, v in samples.items() if name != base)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--os-cloud", help="also time the live Heat API of this cloud (clouds.yaml)")
    parser.add_argument("--only-six", action="store_true",
                        help="only the first call and the changed templates in one call (a shared cloud's time)")
    parser.add_argument("--without", default="", metavar="ENTRY,...",
                        help="leave these Heat entries out (say vrouter-ha-pair: the 6 of the issue's figures)")
    args = parser.parse_args()
    # Both arms start Python processes: from byte-code, as an installed nfvcat does (pip compiles it; this
    # checkout's may be stale where PYTHONDONTWRITEBYTECODE is set).
    import compileall

    compileall.compile_dir(str(ROOT / "tools" / "nfvcat"), quiet=1)
    with tempfile.TemporaryDirectory(prefix="nfvcat-bench-") as tmp:
        root = Path(tmp) / "catalog"
        root.mkdir()
        pairs = copy_catalog(root, tuple(e for e in args.without.split(",") if e))
        bench = Bench(root, pairs, Path(tmp) / "cache")
        try:
            print(f"{len(pairs)} Heat entries, one example each, {os.cpu_count()} CPUs, load average "
                  f"{os.getloadavg()[0]:.1f}; {args.runs} samples per arm, arms alternated after a warm-up")
            print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")

            first = []
            for _ in range(3):
                bench.stop()
                first.append(bench.server(bench.files))
            print(f"first call (starts the server, loads Heat), the {len(bench.files)} changed templates:")
            print(line("first call", first))
            print(f"  then {bench.warm():.1f} s until every worker of the server had loaded its engine")

            arms: dict[str, Callable[[], float]] = {"server": lambda: bench.server(bench.files),
                                                    "fresh": lambda: bench.fresh(bench.files)}
            if args.os_cloud:
                arms["api"] = lambda: bench.api(args.os_cloud, bench.files)
                arms["api, one process"] = lambda: bench.api_one(args.os_cloud, bench.files)
            bench.inside.clear()
            six = alternate(arms, args.runs)
            inside = bench.inside[-len(six["server"]):]
            print(f"the {len(bench.files)} changed templates in one call:")
            for name, values in six.items():
                print(line(name, values))
            print(line("of the server arm: the server's own", inside))
            print(f"  ratios: {ratios(six, 'server')}")
            if args.only_six:
                print(f"uptime at the end: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
                return

            per_file: dict[str, list[float]] = {}  # the arms that take one file: not "api, one process"
            for f in bench.files:
                one: dict[str, Callable[[], float]] = {
                    "server": lambda f=f: bench.server([f]),  # type: ignore[misc]
                    "fresh": lambda f=f: bench.fresh([f])}  # type: ignore[misc]
                if args.os_cloud:
                    one["api"] = lambda f=f: bench.api(args.os_cloud, [f])  # type: ignore[misc]
                for name, values in alternate(one, max(3, args.runs // 2 + 1)).items():
                    per_file.setdefault(name, []).append(statistics.median(values))
            print(f"one file per call (median per file, then summed over the {len(bench.files)} files):")
            for name, values in per_file.items():
                print(f"  {name:<34} per call median {statistics.median(values):6.3f} s, all calls "
                      f"{sum(values):6.3f} s")
            print("  ratios (all calls): " + ", ".join(
                f"{n} / server = {sum(v) / sum(per_file['server']):.1f}x" for n, v in per_file.items()
                if n != "server"))
            if not args.os_cloud:
                print("note: live Heat API arm skipped (give --os-cloud CLOUD with the dev cloud running)")

            status = bench.status()
            print(f"memory of the running server (server + engine workers, RSS): "
                  f"{int(status.get('rss_kib', 0)) / 1024:.0f} MiB; workers: "
                  + ", ".join(f"{n} {'loaded' if w['pid'] else 'not loaded'}"
                              for n, w in status.get("workers", {}).items()))

            whole: dict[str, list[float]] = {"server, warm, empty cache": [], "fresh process, empty cache": []}
            for i in range(3):
                for name in (list(whole) if i % 2 == 0 else list(reversed(whole))):
                    if name.startswith("server"):
                        whole[name].append(bench.call(["validate", "--no-cache"]))
                    else:
                        whole[name].append(bench.call(["validate", "--no-server", "--no-cache"]))
            bench.stop()
            cold_start = []
            for _ in range(3):
                bench.stop()
                with tempfile.TemporaryDirectory(prefix="nfvcat-bench-cache-") as cache:
                    env = {**bench.env, "NFVCAT_CACHE_DIR": cache}
                    cold_start.append(bench.call(["validate"], env=env))
                    subprocess.run([*NFVCAT, "server", "stop"], cwd=root, capture_output=True, env=env)
            whole["first call (server start), empty cache"] = cold_start
            print("whole catalog, cold (every engine job runs):")
            for name, values in whole.items():
                print(line(name, values))
            print(f"uptime at the end: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
        finally:
            bench.stop()


if __name__ == "__main__":
    main()
