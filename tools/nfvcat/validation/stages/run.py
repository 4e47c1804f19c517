"""Stage 5, run: the jobs not cached, on the executor. One that streams (the engine server's pool) gets each
job as soon as its document is planned, on as many lanes per engine as it has loaded workers; any other gets
each engine's jobs in one request once every document is planned, its workers started at the first job (they
load their engine meanwhile). Every job ends with a result: an engine that cannot run says why (E0009)."""

from __future__ import annotations

import queue
import threading
import time

from nfvcat.validation import cache
from nfvcat.validation.emitted import ENGINE_FAILURE
from nfvcat.validation.engines.jobs import EngineJob
from nfvcat.validation.executor import EngineUnavailable, Executor, unavailable
from nfvcat.validation.stages.jobs import Pending


class Engines:
    """Runs a validation's engine jobs; ``timings`` gets each engine's time from its first job to its last
    result (``engine <name>``)."""

    def __init__(self, executor: Executor):
        self.executor = executor
        self.streams = executor.streams
        self.timings: dict[str, float] = {}
        self.spawned: dict[str, float] = {}
        self.queues: dict[str, queue.SimpleQueue[tuple[str, EngineJob] | None]] = {}
        self.lanes: dict[str, list[threading.Thread]] = {}
        self.batches: dict[str, list[tuple[str, EngineJob]]] = {}
        self.closed: list[threading.Thread] = []

    def submit(self, pending: Pending) -> None:
        for name, batch in pending.items():
            if name not in self.spawned:
                self.spawned[name] = time.monotonic()
                self.executor.start([name])
                if self.streams:
                    self.queues[name] = queue.SimpleQueue()
                    count = max(1, self.executor.lanes(name))
                    self.lanes[name] = [threading.Thread(target=self.lane, args=(name, self.queues[name]),
                                                         daemon=True) for _ in range(count)]
                    for lane in self.lanes[name]:
                        lane.start()
            if self.streams:
                for item in batch:
                    self.queues[name].put(item)
            else:
                self.batches.setdefault(name, []).extend(batch)

    def lane(self, name: str, jobs: queue.SimpleQueue[tuple[str, EngineJob] | None]) -> None:
        while (item := jobs.get()) is not None:
            self.run(name, [item])

    def run(self, name: str, batch: list[tuple[str, EngineJob]]) -> None:
        """Run ``batch`` (one request to the executor) and keep its results in the jobs and the cache."""
        try:
            results = self.executor.run_jobs(name, [job.request() for _, job in batch])
        except EngineUnavailable as exc:
            results = [unavailable(name, exc) for _ in batch]
        except Exception as exc:  # never a job without a result: it says why it has none
            results = [unavailable(name, f"{type(exc).__name__}: {exc}") for _ in batch]
        else:
            for (key, _), result in zip(batch, results, strict=True):
                if not any(f.get("id") == ENGINE_FAILURE.id for f in result.get("findings", [])):
                    cache.put(key, result)
        for (_, job), result in zip(batch, results, strict=True):
            job.result = result
        if batch:  # from the engine's first job to its last result
            took = time.monotonic() - self.spawned.get(name, time.monotonic())
            self.timings[f"engine {name}"] = max(took, self.timings.get(f"engine {name}", 0.0))

    def close_lanes(self) -> None:
        """No more jobs: each lane ends after the jobs queued (idempotent; also when planning failed)."""
        for name, lanes in self.lanes.items():
            for _ in lanes:
                self.queues[name].put(None)
        self.closed, self.lanes = self.closed + [t for ts in self.lanes.values() for t in ts], {}

    def finish(self) -> None:
        """Wait for every job's result."""
        self.close_lanes()
        threads = list(self.closed)
        for name, batch in self.batches.items():
            threads.append(threading.Thread(target=self.run, args=(name, batch), daemon=True))
            threads[-1].start()
        for t in threads:
            t.join()
