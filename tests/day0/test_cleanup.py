"""The lab removes what it started: daemons (also ones that left their process group), namespaces."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from nfvcat_testbeds.lab.netns import Lab, run

CHILD = r"""
import signal, sys, time
from pathlib import Path
from nfvcat_testbeds.lab.netns import Lab
def stop(signum, frame):
    raise KeyboardInterrupt
signal.signal(signal.SIGTERM, stop)
lab = Lab()
try:
    ns = lab.ns("victim")
    lab.spawn(["ip", "netns", "exec", ns, "sleep", "300"], Path(sys.argv[1]))
    print(ns, flush=True)
    time.sleep(300)
except KeyboardInterrupt:
    pass
finally:
    lab.close()
"""


def _namespaces() -> str:
    return run(["ip", "netns", "list"]).stdout


def _running(pid: str) -> bool:
    """Alive and not a zombie (an orphan waits for init to reap it)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def test_close_kills_daemons_and_deletes_namespaces(tmp_path: Path) -> None:
    lab = Lab(tag=f"{os.getpid()}x")
    ns = lab.ns("clean")
    proc = lab.spawn(["ip", "netns", "exec", ns, "sleep", "300"], tmp_path / "sleep.log")
    # a daemon that double-forks out of the process group lab.spawn made
    lab.sh(ns, "setsid sleep 301 >/dev/null 2>&1 < /dev/null &")
    time.sleep(0.3)
    pids = run(["ip", "netns", "pids", ns]).stdout.split()
    assert len(pids) >= 2
    lab.close()
    assert proc.poll() is not None
    assert ns not in _namespaces()
    time.sleep(0.2)
    assert not [p for p in pids if _running(p)]


def test_sigterm_cleans_up(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path / "d.log")], stdout=subprocess.PIPE,
                             text=True)
    assert child.stdout is not None
    ns = child.stdout.readline().strip()
    assert ns in _namespaces()
    child.send_signal(signal.SIGTERM)
    assert child.wait(30) == 0
    assert ns not in _namespaces()
