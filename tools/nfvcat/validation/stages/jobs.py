"""Stage 4, engine jobs: what reading a document found, and each engine's jobs for it (planned by the engine
modules), with an editor's unsaved buffers handed to the engines that read through them; then the results the
cache already holds."""

from __future__ import annotations

from dataclasses import dataclass, field

from nfvcat.core.documents import Document
from nfvcat.core.findings import RawFinding
from nfvcat.validation import cache
from nfvcat.validation.emitted import UNKNOWN_KIND
from nfvcat.validation.engines.jobs import EngineJob, JobContext
from nfvcat.validation.engines.planning import plan
from nfvcat.validation.executor import unavailable
from nfvcat.validation.model import Options
from nfvcat.validation.rules.base import Context
from nfvcat.validation.stages.context import Examples
from nfvcat.validation.stages.read import Library

# Engines that take a document's unsaved content: Heat and tosca-parser read every file through the job's
# overlay (nested templates, get_file and imports of the buffer too); Nova's jobs carry their data. A
# package (CSAR) is read from the disk.
OVERLAID_ENGINES = {"heat", "nova", "tosca"}
READS_THROUGH_OVERLAY = {"heat", "tosca"}

Pending = dict[str, list[tuple[str, EngineJob]]]  # by engine: (cache key, job)


@dataclass
class Prepared:
    raw: list[RawFinding] = field(default_factory=list)  # what reading found, or that the kind is unknown
    jobs: list[EngineJob] = field(default_factory=list)
    go_on: bool = True  # False: nothing more runs on the document (unreadable, unknown)


def prepare(doc: Document, ctx: Context, library: Library, examples: Examples, options: Options,
            explicit: set[str]) -> Prepared:
    out = Prepared(list(doc.problems))
    if any(p.rule_id.startswith("E") for p in doc.problems) and doc.kind != "csar":
        out.go_on = False
        return out
    if doc.kind == "unknown":
        if doc.abspath in explicit:
            out.raw.append(RawFinding(
                UNKNOWN_KIND.id, (), "not a Heat template (HOT or CloudFormation format), Heat environment, TOSCA "
                "template, SOL001 VNFD, CSAR, cloud-config, or catalog entry/flavor/site profile/inventory"))
        out.go_on = False
        return out
    for job in plan(doc, JobContext(ctx, options.environments, options.parameters, examples.of(doc), library.doc)):
        if doc.abspath in options.overlays and (job.engine not in OVERLAID_ENGINES or doc.kind == "csar"):
            job.result = unavailable(job.engine, "it reads the saved file: unsaved changes are checked on save")
        elif options.overlays and job.engine in READS_THROUGH_OVERLAY:
            job.payload["overlay"] = options.overlays
        out.jobs.append(job)
    return out


def lookup(jobs: list[EngineJob], use_cache: bool) -> tuple[Pending, int]:
    """Cached results into their jobs; the rest by engine, with their cache keys; and the number of hits."""
    hits = 0
    pending: Pending = {}
    for job in jobs:
        if job.result is not None:  # decided without its engine
            continue
        key = cache.job_key(job.engine, job.payload)
        cached = cache.get(key) if use_cache else None
        if cached is not None:
            job.result = cached
            hits += 1
        else:
            pending.setdefault(job.engine, []).append((key, job))
    return pending, hits
