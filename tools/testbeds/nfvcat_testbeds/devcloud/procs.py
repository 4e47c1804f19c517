"""Processes the dev cloud starts: one pid file each under run/, logs under log/, stop escalating to SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from nfvcat.core.procs import alive
from nfvcat_testbeds.devcloud.state import State


def pidfile(state: State, name: str) -> Path:
    return state.run / f"{name}.pid"


def logfile(state: State, name: str) -> Path:
    return state.log / f"{name}.log"


def pid_of(state: State, name: str) -> int | None:
    try:
        pid = int(pidfile(state, name).read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if alive(pid) else None


def running(state: State) -> list[str]:
    """Names of the services with a pid file whose process is alive."""
    if not state.run.is_dir():
        return []
    return sorted(p.stem for p in state.run.glob("*.pid") if pid_of(state, p.stem))


def start(state: State, name: str, argv: list[str], env: dict[str, str] | None = None,
          cwd: Path | None = None) -> int:
    """Start ``argv`` in a session of its own (so stop can signal the whole group), detached from us."""
    existing = pid_of(state, name)
    if existing:
        return existing
    log = open(logfile(state, name), "ab")  # noqa: SIM115 - handed to the child
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=full_env,
                            cwd=str(cwd or state.root), start_new_session=True, close_fds=True)
    log.close()
    pidfile(state, name).write_text(f"{proc.pid}\n")
    return proc.pid


def stop(state: State, name: str, grace: float = 10.0) -> bool:
    """SIGTERM the process group, SIGKILL what is left after ``grace`` seconds. True if something ran."""
    pid = pid_of(state, name)
    pidfile(state, name).unlink(missing_ok=True)
    if not pid:
        return False
    _signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not alive(pid) and not _group_alive(pid):
            return True
        _reap(pid)
        time.sleep(0.2)
    _signal_group(pid, signal.SIGKILL)
    for _ in range(50):
        _reap(pid)
        if not alive(pid) and not _group_alive(pid):
            break
        time.sleep(0.1)
    return True


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def _group_alive(pgid: int) -> bool:
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            return True
    return False


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def tail(path: Path, lines: int = 25) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            data = f.read().decode("utf-8", "replace")
    except OSError:
        return "(no log)"
    return "\n".join(data.splitlines()[-lines:])
