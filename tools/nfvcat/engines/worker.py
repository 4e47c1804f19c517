"""The harness every engine worker runs under: JSON jobs in, JSON results out, nothing else on stdout."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import sys
import traceback
import warnings
from collections.abc import Callable
from typing import Any

from nfvcat.rules.parsing.e0009_engine_failure import EngineFailure

Job = dict[str, Any]
Result = dict[str, Any]


def finding(rule_id: str, path: list[Any] | tuple[Any, ...], message: str, engine: str,
            file: str | None = None) -> dict[str, Any]:
    return {"id": rule_id, "path": list(path), "message": " ".join(str(message).split()),
            "engine": engine, "file": file}


def serve(engine: str, setup: Callable[[], None], check: Callable[[Job], Result]) -> None:
    """Run ``check`` on every job read from stdin; library chatter goes to stderr, never stdout."""
    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    setup()  # while the caller is still preparing the jobs
    jobs = json.load(sys.stdin)
    results: list[Result] = []
    for job in jobs:
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                results.append(check(job))
        except Exception as exc:  # an engine bug must not hide the other jobs' results
            tail = traceback.format_exception_only(type(exc), exc)[-1].strip()
            results.append({"findings": [finding(
                EngineFailure.id, [], f"{engine} engine failed on this document: {tail}", engine)], "deps": {}})
    json.dump(results, out)
    out.flush()
