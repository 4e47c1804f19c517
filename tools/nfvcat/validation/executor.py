"""Running engine jobs: one interface, two ways.

``run_jobs(engine, payloads) -> results`` (one result per payload, in order) or ``EngineUnavailable``
with the reason. ``OneShotExecutor`` starts a worker per engine for one validation, as a plain
``nfvcat validate`` does; ``WorkerPool`` keeps the workers alive between validations (the engine server),
restarting one that died, and spreads an engine's jobs over its warm workers (``NFVCAT_SERVER_WORKERS``
per engine, default 2 for Heat: the jobs an editor's changes make). Either way a worker that does not
answer within ``ENGINE_TIMEOUT`` is killed.
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

from nfvcat.validation.emitted import ENGINE_FAILURE
from nfvcat.validation.wire import engine_timeout

Payload = dict[str, Any]


class EngineUnavailable(Exception):
    """The engine did not run the jobs: the reason, for an E0009 finding."""


def unavailable(engine: str, reason: object) -> dict[str, Any]:
    """The result of a job its engine did not run: one E0009 finding saying why."""

    return {"findings": [{"id": ENGINE_FAILURE.id, "path": [], "message": f"{engine} engine did not run: {reason}",
                          "engine": engine}]}


def workers_per_engine() -> dict[str, int]:
    """How many warm workers each engine gets in the engine server: ``NFVCAT_SERVER_WORKERS`` (say
    ``heat=2,nova=1``), else 2 for Heat when there are two CPUs (an editor's changed templates are Heat
    jobs), 1 for the others; each extra worker costs its engine's memory again."""
    counts = {"heat": min(2, os.cpu_count() or 1)}
    for item in os.environ.get("NFVCAT_SERVER_WORKERS", "").split(","):
        name, _, count = item.partition("=")
        if name.strip() and count.strip().isdigit():
            counts[name.strip()] = max(1, int(count))
    return counts


class Executor(Protocol):
    streams: bool  # takes jobs one at a time as they are planned (``lanes`` of them at once)

    def lanes(self, engine: str) -> int:
        """How many of the engine's jobs it runs at once when it streams."""

    def start(self, engines: list[str]) -> None:
        """Have these engines' workers load their engine now, while the caller plans the other jobs."""

    def run_jobs(self, engine: str, payloads: list[Payload]) -> list[dict[str, Any]]: ...

    def close(self) -> None: ...


def _command(engine: str) -> list[str]:
    return [sys.executable, "-m", f"nfvcat.validation.engines.{engine}"]


def _env() -> dict[str, str]:
    """The engine workers' environment. Their string hashes are seeded (PYTHONHASHSEED=0): Heat stops a stack's
    validation at its first error, and which resource comes first can follow a set's order, which a random
    seed changes from run to run (a template with several unknown resource types was reported for one of
    them at random): the same files give the same findings, run after run, with or without the server."""
    return dict(os.environ, PYTHONWARNINGS="ignore", PYTHONHASHSEED="0")


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

    streams = False  # one request per engine, with every job

    def __init__(self) -> None:
        self.procs: dict[str, subprocess.Popen[bytes] | str] = {}

    def lanes(self, engine: str) -> int:
        return 1

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

    def __init__(self, engine: str, log_dir: Path, name: str | None = None):
        self.engine = engine
        self.name = name or engine
        self.log = log_dir / f"engine-{self.name}.log"
        self.lock = threading.Lock()
        self.proc: subprocess.Popen[bytes] | None = None
        self.started = 0.0
        self.restarts = 0
        self.busy = False  # a request is with the worker
        self.ready = False  # it has answered since it started: its engine is loaded

    def ensure(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            return
        self.ready = False
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
            self.ready = True
            return _results(line, len(payloads))

    def warm(self) -> None:
        """Start the worker and wait until its engine is loaded (an empty request answered)."""
        try:
            self.request([], engine_timeout())
        except EngineUnavailable:
            pass  # the next request restarts it and reports why

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
    """Persistent workers, started on first use and restarted when they die: ``workers`` by name, the
    engine's name for its first worker (``heat``), then ``heat-2``... for the extra ones (``counts``)."""

    streams = True  # a validation hands it each job as soon as the job is planned (``lanes`` at a time)

    def __init__(self, log_dir: Path, engines: tuple[str, ...], counts: dict[str, int] | None = None):
        counts = workers_per_engine() if counts is None else counts
        self.claiming = threading.Lock()
        self.claimed: set[str] = set()
        self.by_engine = {engine: [Worker(engine, log_dir, engine if i == 1 else f"{engine}-{i}")
                                   for i in range(1, max(1, counts.get(engine, 1)) + 1)] for engine in engines}
        self.workers = {w.name: w for ws in self.by_engine.values() for w in ws}

    def start(self, engines: list[str]) -> None:
        """Start each engine's first worker (the first request needs no more; ``warm`` loads the rest)."""
        for name in engines:
            worker = self.workers.get(name)
            if worker is not None:
                with worker.lock:
                    try:
                        worker.ensure()
                    except OSError:
                        pass  # reported by run_jobs

    def warm(self) -> None:
        """Load every worker's engine, one worker at a time (each loads on a CPU of its own)."""
        for worker in self.workers.values():
            worker.warm()

    def run_jobs(self, engine: str, payloads: list[Payload]) -> list[dict[str, Any]]:
        """The jobs over the engine's loaded workers (the first one always), the costliest first each to the
        least loaded; a worker that fails gives E0009 to its own jobs, all failing raises EngineUnavailable."""
        if not payloads:
            return []
        workers = [w for i, w in enumerate(self.by_engine.get(engine, [])) if i == 0 or w.ready]
        if not workers:
            raise EngineUnavailable(f"no engine {engine!r}")
        shares = _spread(payloads, len(workers))
        if len(shares) == 1:
            worker, claimed = self._claim(workers)
            try:
                return worker.request(payloads, engine_timeout())
            finally:
                if claimed:
                    with self.claiming:
                        self.claimed.discard(worker.name)
        results: list[dict[str, Any] | None] = [None] * len(payloads)
        failures: list[EngineUnavailable] = []

        def run(worker: Worker, share: list[int]) -> None:
            try:
                answers = worker.request([payloads[i] for i in share], engine_timeout())
            except EngineUnavailable as exc:
                failures.append(exc)
                answers = [unavailable(engine, exc) for _ in share]
            for i, answer in zip(share, answers, strict=True):
                results[i] = answer

        threads = [threading.Thread(target=run, args=(w, share), daemon=True)
                   for w, share in zip(workers, shares, strict=False)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if len(failures) == len(threads):
            raise failures[0]
        return [r if r is not None else unavailable(engine, "no answer") for r in results]

    def lanes(self, engine: str) -> int:
        """How many of the engine's jobs can run at once: its loaded workers (the first one always)."""
        return sum(1 for i, w in enumerate(self.by_engine.get(engine, [])) if i == 0 or w.ready)

    def _claim(self, workers: list[Worker]) -> tuple[Worker, bool]:
        """A worker no other request of this pool holds, claimed; the first one, unclaimed, when all are."""
        with self.claiming:
            for worker in workers:
                if worker.name not in self.claimed:
                    self.claimed.add(worker.name)
                    return worker, True
            return workers[0], False

    def close(self) -> None:
        """Workers stay: the pool outlives one validation (``stop`` ends them)."""

    def stop(self) -> None:
        for worker in self.workers.values():
            worker.stop()


def _cost(payload: Payload) -> int:
    """What a job costs, roughly: the size of the file it validates (a nested chain is the largest)."""
    try:
        return os.path.getsize(str(payload.get("file", "")))
    except OSError:
        return 0


def _spread(payloads: list[Payload], workers: int) -> list[list[int]]:
    """Payload indexes per worker (those with none left out), each costliest job to the least loaded."""
    shares: list[list[int]] = [[] for _ in range(max(1, min(workers, len(payloads))))]
    loads = [0] * len(shares)
    for i in sorted(range(len(payloads)), key=lambda i: -_cost(payloads[i])):
        least = loads.index(min(loads))
        shares[least].append(i)
        loads[least] += _cost(payloads[i]) + 1
    return [sorted(share) for share in shares if share]
