"""Every engine's jobs for a document: each engine module plans its own (``jobs(doc, ctx)``); this module asks
them all. Apart from jobs.py (the job model the engines import), so that no engine imports its caller."""

from __future__ import annotations

from collections.abc import Callable

from nfvcat.core.documents import Document
from nfvcat.validation.engines import heat, nova, tosca
from nfvcat.validation.engines.jobs import EngineJob, JobContext


def planners() -> dict[str, Callable[[Document, JobContext], list[EngineJob]]]:
    return {"heat": heat.jobs, "nova": nova.jobs, "tosca": tosca.jobs}


def plan(doc: Document, ctx: JobContext) -> list[EngineJob]:
    """Every engine's jobs for one document."""
    return [job for planner in planners().values() for job in planner(doc, ctx)]
