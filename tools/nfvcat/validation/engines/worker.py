"""The harness every engine worker runs under: JSON jobs in, JSON results out, nothing else on stdout.

The protocol is request/response, one JSON document per line: the worker loads its engine at once,
then answers each request ``{"jobs": [JOB, ...], "cwd": DIR}`` with ``{"results": [RESULT, ...]}``
(one per job, in order) until its stdin ends. A one-shot run sends one request and closes stdin; the
engine server keeps the worker and sends more.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import logging
import os
import sys
import traceback
import warnings
from collections.abc import Callable
from typing import Any

from nfvcat.validation.emitted import ENGINE_FAILURE

Job = dict[str, Any]
Result = dict[str, Any]


def finding(rule_id: str, path: list[Any] | tuple[Any, ...], message: str, engine: str,
            file: str | None = None) -> dict[str, Any]:
    return {"id": rule_id, "path": list(path), "message": " ".join(str(message).split()),
            "engine": engine, "file": file}


def load_frozen(*names: str) -> list[Any]:
    """Modules an engine imports only for the jobs that need them: once imported, like the engine's own modules,
    out of the collector's reach (serve's gc.freeze), or every later collection walks them (Neutron's QoS
    objects and Nova's servers API are ~135,000 objects: 0.15 s per full collection)."""
    import importlib

    new = [n for n in names if n not in sys.modules]
    modules = [importlib.import_module(n) for n in names]
    if new:
        gc.freeze()
    return modules


def serve(engine: str, setup: Callable[[], None], check: Callable[[Job], Result]) -> None:
    """Run ``check`` on every job read from stdin; library chatter goes to stderr, never stdout."""
    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    setup()  # while the caller is still preparing the jobs
    # The engine's modules and set-up live as long as the worker: out of the collector's reach, so that a
    # collection walks only what jobs made (a loaded Heat is ~270,000 objects, ~0.1 s per full collection,
    # which used to land in the middle of a job now and then).
    gc.freeze()
    for line in iter(sys.stdin.readline, ""):
        if not line.strip():
            continue
        request = json.loads(line)
        if request.get("cwd"):
            os.chdir(request["cwd"])  # paths shown in messages are relative to the caller's directory
        results = [_one(engine, check, job) for job in request.get("jobs", [])]
        out.write(json.dumps({"results": results}, default=_plain) + "\n")
        out.flush()


def _plain(value: Any) -> Any:
    """A value JSON has no type for, as found in a result: a YAML ``!!binary`` key in a finding's path
    (bytes), a set, a date. Its text, so that one odd document never takes its batch's results down."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, (set, frozenset)):
        return sorted(map(str, value))
    return str(value)


def _one(engine: str, check: Callable[[Job], Result], job: Job) -> Result:
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            return check(job)
    except Exception as exc:  # an engine bug must not hide the other jobs' results
        tail = traceback.format_exception_only(type(exc), exc)[-1].strip()
        failed = finding(ENGINE_FAILURE.id, [], f"{engine} engine failed on this document: {tail}", engine)
        return {"findings": [failed], "deps": {}}
