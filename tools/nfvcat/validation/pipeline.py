"""Validation as a pipeline: read the documents -> each engine plans its jobs for each document
(``engines.<name>.jobs``) while the in-process rules run -> an executor runs the jobs not cached -> the
findings are located (key path to file:line:col) -> a Report, which ``report`` renders.

Engines run as worker processes in parallel (Heat and Nova cannot share one), only those the documents
need, and only for jobs whose result is not cached; the executor is either one-shot workers or the engine
server's persistent ones (``executor``).
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from nfvcat import catalog
from nfvcat.catalog import flavors as catalog_flavors
from nfvcat.catalog import site as site_profile
from nfvcat.core import documents
from nfvcat.core.documents import Document
from nfvcat.core.errors import UserError
from nfvcat.core.findings import Finding, RawFinding
from nfvcat.validation import cache, discovery, suppress
from nfvcat.validation.emitted import ENGINE_FAILURE, UNKNOWN_KIND
from nfvcat.validation.engines.jobs import EngineJob, JobContext
from nfvcat.validation.engines.planning import plan
from nfvcat.validation.executor import EngineUnavailable, Executor, OneShotExecutor, unavailable
from nfvcat.validation.model import Options, Report
from nfvcat.validation.project import Project
from nfvcat.validation.rules import all_rules
from nfvcat.validation.rules.base import Context, Rule

# Engines that take a document's unsaved content: Heat and tosca-parser read every file through the job's
# overlay (nested templates, get_file and imports of the buffer too); Nova's jobs carry their data. A
# package (CSAR) is read from the disk.
OVERLAID_ENGINES = {"heat", "nova", "tosca"}
READS_THROUGH_OVERLAY = {"heat", "tosca"}


def _env_parameters(env: Document) -> dict[str, Any]:
    params = env.data.get("parameters") if env.kind == "environment" else None
    return dict(params) if isinstance(params, dict) else {}


class _OnFirstUse(Mapping[str, dict[str, Any]]):
    """A mapping made when a rule first looks into it. The catalog's provider networks come from every Heat
    template of the catalog: made up front, a call that changed templates parsed them all before its first
    engine job; only the network rules, which run while the engines work, look."""

    def __init__(self, make: Callable[[], dict[str, dict[str, Any]]]):
        self._make = make
        self._made: dict[str, dict[str, Any]] | None = None

    def _data(self) -> dict[str, dict[str, Any]]:
        if self._made is None:
            self._made = self._make()
        return self._made

    def __getitem__(self, key: str) -> dict[str, Any]:
        return self._data()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data())

    def __len__(self) -> int:
        return len(self._data())


class Validation:
    def __init__(self, paths: list[str], options: Options, executor: Executor | None = None,
                 reader: Callable[[str], Document] = documents.read):
        self.options = options
        self.executor = executor or OneShotExecutor()
        self.reader = reader
        self.root = options.catalog_root or catalog.find_root()
        self.catalog_mode = not paths
        self.docs: dict[str, Document] = {}
        self.examples: dict[str, list[str]] = {}  # a main template's example environments, by its path
        self.raw: list[tuple[Document, RawFinding]] = []
        self.jobs: list[EngineJob] = []
        self.timings: dict[str, float] = {}
        self.rules = all_rules()
        self.blocking = {r.id for r in self.rules if r.blocks_engines}
        self.blocking_rules = [r for r in self.rules if r.blocks_engines]
        self.other_rules = [r for r in self.rules if not r.blocks_engines]
        self.nesting_rules = [r for r in self.rules if r.follows_nesting]
        self.explicit: set[str] = set()
        self.spawned: dict[str, float] = {}
        self.skipped: list[str] = []
        self.excluded: list[str] = []
        self.paths = self._expand(paths)

    def _expand(self, paths: list[str]) -> list[str]:
        if not paths:
            if self.root is None:
                raise UserError("no catalog here (no templates/ and flavors/ above the current directory); "
                                "give the files to validate")
            paths = [str(p) for p in catalog.catalog_files(self.root)]
        found = discovery.expand(paths, self.options.project or Project(Path.cwd()),
                                 self.options.skip_unknown or self.catalog_mode)
        self.explicit, self.excluded = found.explicit, found.excluded
        return found.paths

    def doc(self, path: str) -> Document:
        key = os.path.abspath(path)
        if key not in self.docs:
            text = self.options.overlays.get(key)
            self.docs[key] = self.reader(path) if text is None else documents.from_text(path, text)
        return self.docs[key]

    def run(self) -> Report:
        t0 = time.monotonic()
        envs = [self.doc(p) for p in self.options.environments]
        params: dict[str, Any] = {}
        for env in envs:
            params.update(_env_parameters(env))
        params.update(self.options.parameters)
        ctx = Context(site=site_profile.of_catalog(self.root, self.options.site), parameters=params,
                      flavors=catalog_flavors.by_name(self.root, self._data),
                      networks=_OnFirstUse(self._catalog_networks),
                      require_signed=self.options.require_signed,
                      trust_ca=Path(self.options.trust_ca) if self.options.trust_ca else None)
        # Document by document: read it, plan its jobs, run the rules that can keep it from the engines,
        # and hand its jobs over at once, so that the engines work while the next documents are read (an
        # executor that streams: the engine server's) or start loading their engine (one-shot workers).
        targets: list[Document] = []
        checked: list[Document] = []
        seen: set[str] = set()
        hits = 0
        engines = _Engines(self)
        try:
            for doc in self._documents(targets, envs):
                if doc.abspath in seen:
                    continue
                seen.add(doc.abspath)
                if not self._prepare(doc, ctx):
                    continue
                checked.append(doc)
                if self._rules(doc, ctx, self.blocking_rules):
                    self.jobs = [job for job in self.jobs if job.doc is not doc]
                    continue
                mine, found = self._lookup([job for job in self.jobs if job.doc is doc])
                hits += found
                engines.submit(mine)
            self.timings["read"] = time.monotonic() - t0
            t1 = time.monotonic()
            for doc in checked:
                self._rules(doc, ctx, self.other_rules)
            self.timings["rules"] = time.monotonic() - t1
            engines.finish()
        finally:
            engines.close_lanes()  # a validation that failed half-way leaves no lane waiting for jobs
            self.executor.close()
        findings = sorted(set(self._locate()))
        self.timings["total"] = time.monotonic() - t0
        jobs: dict[str, int] = {}
        for job in self.jobs:
            jobs[job.engine] = jobs.get(job.engine, 0) + 1
        failed = any(f.rule_id == ENGINE_FAILURE.id for f in findings)
        findings, suppressed = suppress.split(findings, self.docs, self.options.project)
        return Report(findings, len(targets), self.timings, jobs, hits, failed,
                      self.skipped, self.excluded, suppressed)

    def _documents(self, targets: list[Document], envs: list[Document]) -> Any:
        """The documents to check, each read when it is its turn: the paths (``targets`` gets those not
        skipped), then the environments."""
        for path in dict.fromkeys(self.paths):
            doc = self.doc(path)
            if discovery.skipped(doc, self.explicit):
                self.skipped.append(doc.path)
                continue
            targets.append(doc)
            yield doc
        yield from envs

    # -- in-process rules, then engine jobs -------------------------------------------------------
    def _prepare(self, doc: Document, ctx: Context) -> bool:
        """Record what reading found and plan the document's engine jobs; False when nothing more runs."""
        for problem in doc.problems:
            self.raw.append((doc, problem))
        if any(p.rule_id.startswith("E") for p in doc.problems) and doc.kind != "csar":
            return False
        if doc.kind == "unknown":
            if doc.abspath in self.explicit:
                self.raw.append((doc, RawFinding(
                    UNKNOWN_KIND.id, (), "not a Heat template (HOT or CloudFormation format), Heat environment, TOSCA "
                    "template, SOL001 VNFD, CSAR, cloud-config, or catalog entry/flavor/site profile/inventory")))
            return False
        for job in plan(doc, JobContext(ctx, self.options.environments, self.options.parameters,
                                         self._examples(doc), self.doc)):
            if doc.abspath in self.options.overlays and (job.engine not in OVERLAID_ENGINES or doc.kind == "csar"):
                job.result = unavailable(job.engine, "it reads the saved file: unsaved changes are checked on save")
            elif self.options.overlays and job.engine in READS_THROUGH_OVERLAY:
                job.payload["overlay"] = self.options.overlays
            self.jobs.append(job)
        return True

    def _rules(self, doc: Document, ctx: Context, rules: list[Rule]) -> bool:
        """Run ``rules`` (those of them for the document's kind; the nested templates' with the other
        rules); True when one of them keeps the document from the engines."""
        blocked = False
        contexts = [replace(ctx, parameters={**_env_parameters(self.doc(ex)), **self.options.parameters})
                    for ex in self._examples(doc)] or [ctx]
        for rule in rules:
            if doc.kind in rule.kinds:
                for each in contexts:  # an entry's template is checked with each of its examples
                    for raw in self._safe(rule, doc, each):
                        self.raw.append((doc, raw))
                        blocked = blocked or raw.rule_id in self.blocking
        if doc.kind == "hot" and rules is self.other_rules:
            for each in contexts:
                self._check_nested(doc, each, via=[])
        return blocked

    def _check_nested(self, parent: Document, ctx: Context, via: list[str]) -> None:
        """Run the rules that depend on parameters over each nested template, with what the parent
        passes it: a chain's networks and flavor reach the VNF template's ports and server."""
        if len(via) >= 5:
            return
        from nfvcat.core import hot

        for name, path, properties in hot.nested_templates(parent.data, os.path.dirname(parent.abspath)):
            child = self.doc(path)
            if child.kind != "hot" or child.problems:
                continue  # Heat's bundling (E1002) reports a nested template that cannot be read
            here = [*via, f"{parent.path} resource '{name}'"]
            child_ctx = replace(ctx, parameters=hot.child_parameters(parent.data, properties, ctx.parameters),
                                outer=(parent.data, *ctx.outer))
            for rule in self.nesting_rules:
                for raw in self._safe(rule, child, child_ctx):
                    self.raw.append((child, replace(raw, message=f"{raw.message} (as used by {' via '.join(here)})")))
            self._check_nested(child, child_ctx, here)

    def _data(self, path: Path) -> Any:
        """A catalog file's data as this run reads it; None when it does not read (reported elsewhere)."""
        doc = self.doc(str(path))
        return doc.data if not doc.problems else None

    def _catalog_networks(self) -> dict[str, dict[str, Any]]:
        return catalog.provider_networks(self.root, self._data)

    def _examples(self, doc: Document) -> list[str]:
        """The example environments of the entry whose main template ``doc`` is (none with -e); once per
        document and run (its jobs and both passes of rules ask)."""
        if doc.kind != "hot" or self.options.environments:
            return []
        if doc.abspath not in self.examples:
            self.examples[doc.abspath] = self._find_examples(doc)
        return self.examples[doc.abspath]

    def _find_examples(self, doc: Document) -> list[str]:
        entry_dir = catalog.entry_of(Path(doc.abspath))
        if entry_dir is None:
            return []
        entry = self.doc(str(entry_dir / "entry.yaml")).data
        if catalog.main_template(entry_dir, entry) != Path(doc.abspath):
            return []
        return [str(p) for p in catalog.examples_of(entry_dir)]

    def _safe(self, rule: Rule, doc: Document, ctx: Context) -> list[RawFinding]:
        try:
            return list(rule.check(doc, ctx))
        except Exception as exc:  # a rule bug must not hide the others' findings
            return [RawFinding(ENGINE_FAILURE.id, (), f"rule {rule.id} failed: {type(exc).__name__}: {exc}")]

    # -- engines --------------------------------------------------------------------------------
    def _lookup(self, jobs: list[EngineJob]) -> tuple[dict[str, list[tuple[str, EngineJob]]], int]:
        """Cached results into their jobs; the rest by engine, with their cache keys."""
        hits = 0
        pending: dict[str, list[tuple[str, EngineJob]]] = {}
        for job in jobs:
            if job.result is not None:  # decided without its engine
                continue
            key = cache.job_key(job.engine, job.payload)
            cached = cache.get(key) if self.options.use_cache else None
            if cached is not None:
                job.result = cached
                hits += 1
            else:
                pending.setdefault(job.engine, []).append((key, job))
        return pending, hits

    def _engine(self, name: str, batch: list[tuple[str, EngineJob]]) -> None:
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

    # -- mapping paths to lines -----------------------------------------------------------------
    def _locate(self) -> list[Finding]:
        out = [self._finding(doc, raw) for doc, raw in self.raw]
        for job in self.jobs:
            for data in (job.result or {}).get("findings", []):
                raw = RawFinding.from_json(data)
                if raw.file is None:
                    raw = RawFinding(raw.rule_id, job.prefix + raw.path, raw.message, raw.engine, None,
                                     raw.line, raw.column)
                out.append(self._finding(job.doc, raw))
        return out

    def _finding(self, doc: Document, raw: RawFinding) -> Finding:
        target = doc
        if raw.file and os.path.abspath(raw.file) != doc.abspath and os.path.isfile(raw.file):
            target = self.doc(raw.file)
        if raw.line is not None:
            line, col = raw.line, raw.column or 1
        else:
            line, col = target.locate(raw.path)
        shown = target.path if (target is not doc or not raw.file) else doc.path
        if raw.file and not os.path.isfile(raw.file):
            shown = raw.file  # a member of an archive, say
        return Finding(shown, line, col, raw.rule_id, raw.message, raw.engine)


class _Engines:
    """Hands a validation's engine jobs to its executor. One that streams (the engine server's pool) gets
    each job as soon as its document is planned, on as many lanes per engine as it has loaded workers;
    any other gets each engine's jobs in one request once every document is planned, its workers started
    at the first job (they load their engine meanwhile)."""

    def __init__(self, validation: Validation):
        self.v = validation
        self.streams = validation.executor.streams
        self.queues: dict[str, queue.SimpleQueue[tuple[str, EngineJob] | None]] = {}
        self.lanes: dict[str, list[threading.Thread]] = {}
        self.batches: dict[str, list[tuple[str, EngineJob]]] = {}
        self.closed: list[threading.Thread] = []

    def submit(self, pending: dict[str, list[tuple[str, EngineJob]]]) -> None:
        for name, batch in pending.items():
            if name not in self.v.spawned:
                self.v.spawned[name] = time.monotonic()
                self.v.executor.start([name])
                if self.streams:
                    self.queues[name] = queue.SimpleQueue()
                    count = max(1, self.v.executor.lanes(name))
                    self.lanes[name] = [threading.Thread(target=self._lane, args=(name, self.queues[name]),
                                                         daemon=True) for _ in range(count)]
                    for lane in self.lanes[name]:
                        lane.start()
            if self.streams:
                for item in batch:
                    self.queues[name].put(item)
            else:
                self.batches.setdefault(name, []).extend(batch)

    def _lane(self, name: str, jobs: queue.SimpleQueue[tuple[str, EngineJob] | None]) -> None:
        while (item := jobs.get()) is not None:
            self.v._engine(name, [item])

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
            threads.append(threading.Thread(target=self.v._engine, args=(name, batch), daemon=True))
            threads[-1].start()
        for t in threads:
            t.join()


def validate_paths(paths: list[str], options: Options | None = None, executor: Executor | None = None,
                   reader: Callable[[str], Document] = documents.read) -> Report:
    """Validate files (the whole catalog when none), engines in one-shot workers unless an executor is given;
    ``reader`` reads a document (the engine server's keeps parsed documents between calls)."""
    return Validation(list(paths), options or Options(), executor, reader).run()
