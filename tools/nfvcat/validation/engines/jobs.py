"""What an engine is asked to do: each engine module plans its own jobs for a document (``jobs(doc, ctx)``).

A job's ``payload`` is what the engine's worker receives (and, with the engine's version and the files it
names, the result cache's key); ``handover`` adds to what the worker receives what it may take instead of
computing it again (not part of the job's identity: the cache key); ``prefix`` is the key path in the
document that the engine's finding paths are relative to (a flavor's ``extra_specs``, say).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from nfvcat.core.documents import Document
from nfvcat.validation.rules.base import Context

ENGINES = ("heat", "nova", "tosca")  # those that run in a worker process of their own


@dataclass
class EngineJob:
    engine: str
    doc: Document
    payload: dict[str, Any]
    prefix: tuple[Any, ...] = ()
    result: dict[str, Any] | None = None
    handover: Callable[[], dict[str, Any]] | None = None

    def request(self) -> dict[str, Any]:
        """What the worker receives: the payload, and what the handover adds (made when it is sent)."""
        return {**self.payload, **self.handover()} if self.handover else self.payload


@dataclass
class JobContext:
    """What the planners need besides the document."""

    rules: Context  # the site, the catalog's flavors and networks, -e/-P parameters merged
    environments: list[str] = field(default_factory=list)  # -e, as given
    parameters: dict[str, str] = field(default_factory=dict)  # -P
    examples: list[str] = field(default_factory=list)  # the example environments of an entry's template
    read: Callable[[str], Document] | None = None  # the run's reader of other documents (a nested template)
