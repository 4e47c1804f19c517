"""A validation: the stages (``nfvcat.validation.stages``) composed for one call, document by document.

Each document is read, its engine jobs planned, the rules that can keep it from the engines run, and its
jobs handed to the engines at once, so that the engines work while the next documents are read (an executor
that streams: the engine server's) or start loading their engine (one-shot workers). Then the other rules,
the engines' results, every finding located, suppressed as the project says, and the Report.

Engines run as worker processes in parallel (Heat and Nova cannot share one), only those the documents need,
and only for jobs whose result is not cached; the executor is either one-shot workers or the engine
server's persistent ones (``executor``).
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from nfvcat import catalog
from nfvcat.core import confine, documents
from nfvcat.core.documents import Document
from nfvcat.validation import suppress
from nfvcat.validation.emitted import ENGINE_FAILURE
from nfvcat.validation.engines.jobs import EngineJob
from nfvcat.validation.executor import Executor, OneShotExecutor
from nfvcat.validation.model import Options, Report
from nfvcat.validation.rules.base import Context
from nfvcat.validation.stages import jobs as job_stage
from nfvcat.validation.stages import rules as rule_stage
from nfvcat.validation.stages.context import Examples, context
from nfvcat.validation.stages.locate import locate
from nfvcat.validation.stages.read import Library, targets, walk
from nfvcat.validation.stages.run import Engines


def validate_paths(paths: list[str], options: Options | None = None, executor: Executor | None = None,
                   reader: Callable[[str], Document] = documents.read) -> Report:
    """Validate files (the whole catalog when none), engines in one-shot workers unless an executor is given;
    ``reader`` reads a document (the engine server's keeps parsed documents between calls)."""
    options = options or Options()
    executor = executor or OneShotExecutor()
    root = options.catalog_root or catalog.find_root()
    with confine.applied(policy(paths, options, root)):  # what this call may read, in this thread and its jobs
        return _validate(paths, options, executor, reader, root)


def policy(paths: list[str], options: Options, root: Path | None) -> confine.Policy:
    """What a call may read (nfvcat.core.confine): the project, the catalog, the paths, -e, --site and
    --trust-ca it names, and the roots it allows; files up to its size cap."""
    given = [*paths, *options.environments, *(p for p in (options.site, options.trust_ca) if p)]
    given += list(options.overlays)  # an editor's buffer: its file's directory, saved or not
    allow = [*options.allow_roots, *([str(root)] if root else []), *release_trees(given)]
    return confine.Policy.for_call(given, allow, options.max_bytes)


def release_trees(given: list[str]) -> list[str]:
    """The released catalogs the paths lie in (``NAME@VERSION``: a commit's tree that ``catalog.history`` exported
    into the cache): each is a whole catalog, read as the working tree's is."""
    from nfvcat.catalog import entries

    cache = confine.real(str(entries.releases_cache()))
    trees = []
    for path in given:
        where = confine.real(path)
        if confine.inside(where, cache) and where != cache:
            trees.append(os.path.join(cache, os.path.relpath(where, cache).split(os.sep)[0]))
    return trees


def _validate(paths: list[str], options: Options, executor: Executor,
              reader: Callable[[str], Document], root: Path | None) -> Report:
    wanted = targets(list(paths), options, root)
    library = Library(reader, options.overlays)
    rules = rule_stage.RuleSet.every()
    t0 = time.monotonic()
    timings: dict[str, float] = {}
    ctx, envs = context(library, options, root)
    examples = Examples(library, options)
    found: rule_stage.Found = []
    jobs: list[EngineJob] = []
    checked: list[Document] = []  # the targets not skipped: the call's files
    ruled: list[Document] = []  # the documents that reached the rules
    seen: set[str] = set()
    reached: set[str] = set()  # templates the targets nest: checked on their own, without -P and -e
    own = (replace(ctx, parameters={}), replace(options, environments=[], parameters={}))

    def of(doc: Document) -> tuple[Context, Options]:
        return own if doc.abspath in reached else (ctx, options)

    hits = 0
    engines = Engines(executor)
    try:
        for doc in itertools.chain(walk(wanted, library, checked, reached), envs):  # targets, nested, -e
            if doc.abspath in seen:
                continue
            seen.add(doc.abspath)
            prepared = job_stage.prepare(doc, of(doc)[0], library, examples, of(doc)[1], wanted.explicit)
            found.extend((doc, raw) for raw in prepared.raw)
            if not prepared.go_on:
                continue
            ruled.append(doc)
            first = rule_stage.check(doc, of(doc)[0], rules.blocking, library, examples, of(doc)[1])
            found.extend(first)
            if rule_stage.blocked(first, rules.blocking):
                continue  # its jobs are not run
            jobs.extend(prepared.jobs)
            pending, found_hits = job_stage.lookup(prepared.jobs, options.use_cache)
            hits += found_hits
            engines.submit(pending)
        timings["read"] = time.monotonic() - t0
        t1 = time.monotonic()
        for doc in ruled:
            found.extend(rule_stage.check(doc, of(doc)[0], rules.other, library, examples, of(doc)[1]))
            found.extend(rule_stage.check_nested(doc, of(doc)[0], rules.nesting, library, examples, of(doc)[1]))
        timings["rules"] = time.monotonic() - t1
        engines.finish()
    finally:
        engines.close_lanes()  # a validation that failed half-way leaves no lane waiting for jobs
        executor.close()
    timings.update(engines.timings)
    findings = sorted(set(locate(found, jobs, library)))
    timings["total"] = time.monotonic() - t0
    per_engine: dict[str, int] = {}
    for job in jobs:
        per_engine[job.engine] = per_engine.get(job.engine, 0) + 1
    failed = any(f.rule_id == ENGINE_FAILURE.id for f in findings)
    findings, suppressed = suppress.split(findings, library.docs, options.project)
    return Report(findings, len(checked), timings, per_engine, hits, failed, wanted.skipped, wanted.excluded,
                  suppressed, [d.path for d in checked])
