"""Running engine jobs: one interface, two ways.

``run_jobs(engine, payloads) -> results`` (one result per payload, in order) or ``EngineUnavailable``
with the reason. ``OneShotExecutor`` starts a worker per engine for one validation, as a plain
``nfvcat validate`` does; ``WorkerPool`` keeps the workers alive between validations (the engine server),
restarting one that died. Either way a worker that does not answer within ``ENGINE_TIMEOUT`` is killed.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Protocol

Payload = dict[str, Any]


def engine_timeout() -> float:
    return float(os.environ.get("NFVCAT_ENGINE_TIMEOUT", "900"))


class EngineUnavailable(Exception):
    """The engine did not run the jobs: the reason, for an E0009 finding."""


class Executor(Protocol):
    def start(self, engines: list[str]) -> None:
        """Have these engines' workers load their engine now, while the caller runs the rules."""

    def run_jobs(self, engine: str, payloads: list[Payload]) -> list[dict[str, Any]]: ...

    def close(self) -> None: ...


def _command(engine: str) -> list[str]:
    return [sys.executable, "-m", f"nfvcat.engines.{engine}"]


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONWARNINGS="ignore")


def _request(payloads: list[Payload]) -> bytes:
    return (json.dumps({"jobs": payloads, "cwd": os.getcwd()}) + "\n").encode()


def _results(line: bytes, count: int) -> list[dict[str, Any]]:
    try:
        results = json.loads(line).get("results")
    except (ValueError, AttributeError) as exc:
        raise EngineUnavailable(f"unreadable output: {exc}") from None
    if not isinstance(results, list) or len(results) != count:
        raise EngineUnavailable("bad result count")
    return results


def _last_line(text: str, code: int | None) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else f"exit code {code}"


class OneShotExecutor:
    """A worker process per engine for one validation; each gets one request, then end of input."""

    def __init__(self) -> None:
        self.procs: dict[str, subprocess.Popen[bytes] | str] = {}

    def start(self, engines: list[str]) -> None:
        for name in engines:
            if name not in self.procs:
                try:
                    self.procs[name] = subprocess.Popen(_command(name), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                        stderr=subprocess.PIPE, env=_env())
                except OSError as exc:
                    self.procs[name] = str(exc)

    def run_jobs(self, engine: str, payloads: list[Payload]) -> list[dict[str, Any]]:
        self.start([engine])
        proc = self.procs.pop(engine)
        if isinstance(proc, str):
            raise EngineUnavailable(proc)
        if not payloads:  # every job's document was kept from the engines by a rule
            proc.kill()
            proc.wait()
            return []
        timeout = engine_timeout()
        try:
            out, err = proc.communicate(_request(payloads), timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise EngineUnavailable(f"timed out after {timeout:.0f} s") from None
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if proc.returncode != 0:
            raise EngineUnavailable(_last_line(err.decode(errors="replace"), proc.returncode))
        return _results(out.splitlines()[0] if out.strip() else b"", len(payloads))

    def close(self) -> None:
        for proc in self.procs.values():
            if not isinstance(proc, str) and proc.poll() is None:
                proc.kill()
                proc.wait()
        self.procs.clear()


class Worker:
    """One persistent engine worker: requests and answers over its pipes, stderr to a log file."""

    def __init__(self, engine: str, log_dir: Path):
        self.engine = engine
        self.log = log_dir / f"engine-{engine}.log"
        self.lock = threading.Lock()
        self.proc: subprocess.Popen[bytes] | None = None
        self.started = 0.0
        self.restarts = 0
        self.busy = False  # a request is with the worker

    def ensure(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            return
        if self.proc is not None:
            self.restarts += 1
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(_command(self.engine), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=log, env=_env())
        self.started = time.monotonic()

    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None and self.proc.poll() is None else None

    def request(self, payloads: list[Payload], timeout: float) -> list[dict[str, Any]]:
        with self.lock:
            try:
                self.ensure()
            except OSError as exc:
                raise EngineUnavailable(str(exc)) from None
            proc = self.proc
            assert proc is not None and proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write(_request(payloads))
                proc.stdin.flush()
                self.busy = True
                line = self._readline(proc, timeout)
            except (BrokenPipeError, EngineUnavailable) as exc:
                self.kill()  # restarted by the next request
                reason = str(exc) if isinstance(exc, EngineUnavailable) else "worker exited"
                raise EngineUnavailable(f"{reason}; {self._log_tail()}") from None
            finally:
                self.busy = False
            return _results(line, len(payloads))

    def _readline(self, proc: subprocess.Popen[bytes], timeout: float) -> bytes:
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        buf = b""
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while not buf.endswith(b"\n"):
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    raise EngineUnavailable(f"timed out after {timeout:.0f} s")
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    proc.wait()
                    raise EngineUnavailable(f"worker exited with code {proc.returncode}")
                buf += chunk
        return buf

    def _log_tail(self) -> str:
        try:
            text = self.log.read_text(errors="replace")[-4000:]
        except OSError:
            return "no log"
        return f"last log line: {_last_line(text, None)}" if text.strip() else f"log {self.log} is empty"

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            assert self.proc.stdin is not None
            try:
                self.proc.stdin.close()  # end of input: the worker's loop ends
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.kill()


class WorkerPool:
    """Persistent workers, one per engine, started on first use and restarted when they die."""

    def __init__(self, log_dir: Path, engines: tuple[str, ...]):
        self.workers = {name: Worker(name, log_dir) for name in engines}

    def start(self, engines: list[str]) -> None:
        for name in engines:
            worker = self.workers.get(name)
            if worker is not None:
                with worker.lock:
                    try:
                        worker.ensure()
                    except OSError:
                        pass  # reported by run_jobs

    def run_jobs(self, engine: str, payloads: list[Payload]) -> list[dict[str, Any]]:
        if not payloads:
            return []
        worker = self.workers.get(engine)
        if worker is None:
            raise EngineUnavailable(f"no engine {engine!r}")
        return worker.request(payloads, engine_timeout())

    def close(self) -> None:
        """Workers stay: the pool outlives one validation (``stop`` ends them)."""

    def stop(self) -> None:
        for worker in self.workers.values():
            worker.stop()
