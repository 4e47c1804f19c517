"""Soak of the engine server on its Unix socket: 1,000 requests from 8 clients at once, mixing valid templates,
hostile inputs (a FIFO, /dev/zero, a 100 MB file, a socket, /proc/self/environ, a get_file outside the project)
and clients killed mid-request. Each request is a real ``nfvcat validate`` (the thin client: Python's start-up
and a round trip), so its latency is what a user waits.

Afterwards: no request lost (every client not killed got the answer its input calls for), the server's peak
RSS (its process and its engine workers, sampled every 0.2 s; and the server process's own VmHWM), p50 and
p99 latency. Bounded: NFVCAT_SOAK_REQUESTS (1,000) requests, NFVCAT_SOAK_SECONDS (900) seconds at most.
Exit 1 if a request was lost or answered wrongly. Everything it starts (the server, its clients) it stops.

    python tests/bench/bench_soak.py
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NFVCAT = [sys.executable, "-m", "nfvcat"]
CLIENTS = 8
HOT = "heat_template_version: 2021-04-16\nresources:\n"


def _rss_kib(pid: int, field: str = "VmRSS") -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (the engine workers)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return out


def inputs(work: Path) -> list[tuple[str, list[str], int, str | None]]:
    """(name, validate's arguments, the exit code it calls for, the finding id it calls for)."""
    proj = work / "proj"
    (proj / ".git").mkdir(parents=True)
    (work / "outside.txt").write_text("SOAK-CANARY\n")
    good = proj / "good.yaml"
    good.write_text(HOT + "  net: {type: OS::Neutron::Net}\n")
    bad = proj / "bad.yaml"
    bad.write_text(HOT + "  net: {type: OS::Neutron::Nett}\n")
    leak = proj / "leak.yaml"
    leak.write_text(HOT + "  c:\n    type: OS::Heat::SoftwareConfig\n"
                    "    properties: {config: {get_file: ../outside.txt}}\n")
    fifo = proj / "fifo.yaml"
    os.mkfifo(fifo)
    big = proj / "big.yaml"
    with open(big, "wb") as f:
        f.truncate(100 * 1000 * 1000)
    sock = proj / "sock.yaml"
    return [("valid", [str(good)], 0, None), ("finding", [str(bad)], 2, "E1001"),
            ("get_file outside", [str(leak)], 2, "E0015"), ("fifo", [str(fifo)], 2, "E0016"),
            ("/dev/zero", ["/dev/zero"], 2, "E0016"), ("100 MB", [str(big)], 2, "E0004"),
            ("socket", [str(sock)], 2, "E0016"), ("/proc/self/environ", ["/proc/self/environ"], 2, "E0016"),
            ("catalog entry", ["--allow-root", str(ROOT), str(ROOT / "templates" / "heat" / "vnf-vrouter")], 0, None)]


def main() -> int:
    total = int(os.environ.get("NFVCAT_SOAK_REQUESTS", "1000"))
    limit = float(os.environ.get("NFVCAT_SOAK_SECONDS", "900"))
    work = Path(tempfile.mkdtemp(prefix="nfvcat-soak-"))
    env = {**os.environ, "NFVCAT_CACHE_DIR": str(work / "cache"), "NFVCAT_NO_SERVER": "0",
           "NFVCAT_SERVER_IDLE": "600"}
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    cases = inputs(work)
    listener.bind(cases[6][1][0])
    rng = random.Random(int(os.environ.get("NFVCAT_SOAK_SEED", "39")))
    plan = [(rng.choice(cases), rng.random() < 0.1) for _ in range(total)]  # 10 %: the client is killed
    latencies: list[float] = []
    errors: list[str] = []
    killed = answered = 0
    lock = threading.Lock()
    peak = [0]
    deadline = time.monotonic() + limit
    try:
        for case in cases:  # warm: the server starts, engines load, results cached
            subprocess.run([*NFVCAT, "validate", *case[1]], env=env, cwd=work / "proj", capture_output=True,
                           timeout=600)
        status = json.loads(subprocess.run([*NFVCAT, "server", "status", "--format", "json"], env=env,
                                           capture_output=True, text=True, timeout=60).stdout)["status"]
        pid = int(status["pid"])
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                peak[0] = max(peak[0], sum(_rss_kib(p) for p in _tree(pid)))
                time.sleep(0.2)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        todo = list(enumerate(plan))

        def client() -> None:
            nonlocal killed, answered
            while time.monotonic() < deadline:
                with lock:
                    if not todo:
                        return
                    n, ((name, args, code, rule), kill) = todo.pop()
                t0 = time.monotonic()
                proc = subprocess.Popen([*NFVCAT, "validate", "--format", "json", *args], env=env, cwd=work / "proj",
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                if kill:
                    time.sleep(random.uniform(0.01, 0.2))
                    proc.send_signal(signal.SIGKILL)
                    proc.communicate()
                    with lock:
                        killed += 1
                    continue
                try:
                    out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.communicate()
                    with lock:
                        errors.append(f"#{n} {name}: no answer before the soak's deadline")
                    continue
                took = time.monotonic() - t0
                try:
                    found = [f["id"] for f in json.loads(out)["findings"]]
                except (ValueError, KeyError):
                    found = None
                ok = proc.returncode == code and found is not None and ((rule is None and not found) or found == [rule])
                with lock:
                    if ok and "Traceback" not in err and "SOAK-CANARY" not in out + err:
                        answered += 1
                        latencies.append(took)
                    else:
                        errors.append(f"#{n} {name}: exit {proc.returncode}, {found}, {err.strip()[-200:]}")

        started = time.monotonic()
        threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - started
        stop.set()
        sampler.join()
        hwm = _rss_kib(pid, "VmHWM")
        alive = subprocess.run([*NFVCAT, "server", "status", "--format", "json"], env=env, capture_output=True,
                               text=True, timeout=60)
        same = json.loads(alive.stdout)["status"]["pid"] == pid
    finally:
        subprocess.run([*NFVCAT, "server", "stop"], env=env, capture_output=True, timeout=60)
        listener.close()
        shutil.rmtree(work, ignore_errors=True)
    lost = total - killed - answered - len(errors)
    latencies.sort()
    p50 = statistics.median(latencies) if latencies else float("nan")
    p99 = latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))] if latencies else float("nan")
    print(f"soak: {total} requests from {CLIENTS} clients in {elapsed:.1f} s: {answered} answered as expected, "
          f"{killed} clients killed mid-request, {len(errors)} errors, {lost} not run (deadline)")
    print(f"soak: server peak RSS {peak[0] / 1024:.0f} MiB (server and engine workers, sampled), server process "
          f"VmHWM {hwm / 1024:.0f} MiB; latency p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms; "
          f"the same server afterwards: {same}")
    for e in errors[:10]:
        print("soak: error", e)
    return 0 if not errors and not lost and same else 1


if __name__ == "__main__":
    sys.exit(main())
