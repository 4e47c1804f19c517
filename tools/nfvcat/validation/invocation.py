"""One ``nfvcat validate`` from its arguments to its output and exit code.

The arguments are the command's parsed options as plain data (``vars()`` of its namespace, plus ``stdin``:
the buffer ``--stdin-filename`` names), so that the engine server can run an invocation for the command's
thin client and print exactly what the command would print in-process: the same code renders both.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from nfvcat.core.errors import EXIT_ENGINE, EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, UserError
from nfvcat.validation.model import Options, Report

if TYPE_CHECKING:
    from nfvcat.core.documents import Document
    from nfvcat.validation.executor import Executor


@dataclass
class Invocation:
    paths: list[str]
    options: Options
    strict: bool
    args: dict[str, Any]


def prepare(args: dict[str, Any]) -> Invocation:
    """The paths and Options of a call made in the current directory (``.nfvcat.yaml`` read from it)."""
    from nfvcat.core import confine
    from nfvcat.validation import project

    for env in args.get("environment") or []:
        try:
            confine.check_regular(env)  # stat only: a FIFO given as -e is not opened (it would block)
        except confine.Refused as exc:
            raise UserError(f"environment file {env}: {exc.why}") from None
        except OSError as exc:
            raise UserError(f"environment file {env}: {exc.strerror}") from None
    paths = [str(p) for p in args.get("paths") or []]
    overlays = {}
    if args.get("stdin_filename"):
        if paths:
            raise UserError("--stdin-filename validates standard input as that file: give no PATH", EXIT_USAGE)
        overlays[os.path.abspath(args["stdin_filename"])] = str(args.get("stdin") or "")
        paths = [str(args["stdin_filename"])]
    for name, text in (args.get("buffers") or {}).items():  # '-', <(cmd): read by the command
        overlays[os.path.abspath(name)] = str(text)
    proj = project.load()
    options = Options(environments=list(args.get("environment") or []),
                      parameters={str(k): str(v) for k, v in args.get("parameter") or []},
                      site=args.get("site") or proj.site, use_cache=not args.get("no_cache"), project=proj,
                      skip_unknown=bool(args.get("skip_unknown")), require_signed=bool(args.get("require_signed")),
                      trust_ca=args.get("trust_ca"), overlays=overlays,
                      allow_roots=[*(args.get("allow_root") or []), *proj.allow_roots],
                      max_bytes=args.get("max_file_size") or proj.max_bytes)
    return Invocation(paths, options, bool(args.get("strict")) or proj.strict, args)


def render(report: Report, inv: Invocation, out: TextIO, err: TextIO) -> int:
    """Print the report as asked; the exit code."""
    from nfvcat.validation import report as output

    fmt = inv.args.get("format")
    if fmt == "json":
        text = output.as_json(report.findings, report.files, report.skipped, report.excluded, report.suppressed)
    elif fmt == "sarif":
        from nfvcat.validation.rules import all_rules

        text = output.sarif(report.findings, all_rules(), report.suppressed)
    elif fmt == "junit":
        text = output.junit(report.findings, report.checked, report.timings.get("total", 0.0))
    else:
        text = output.text(report.findings, report.files, len(report.skipped), len(report.excluded),
                           report.suppressed, bool(inv.args.get("show_suppressed")))
    out.write(text + "\n")
    if inv.args.get("timings"):
        err.write(timings_text(report) + "\n")
    return exit_code(report, inv.strict)


def execute(args: dict[str, Any], out: TextIO, err: TextIO, executor: Executor | None = None,
            reader: Callable[[str], Document] | None = None) -> int:
    """Validate as asked (engines in one-shot workers unless an executor is given) and print the result."""
    from nfvcat.core import documents
    from nfvcat.validation.pipeline import validate_paths

    inv = prepare(args)
    return render(validate_paths(inv.paths, inv.options, executor, reader or documents.read), inv, out, err)


def exit_code(report: Report, strict: bool) -> int:
    if report.engine_failed:
        return EXIT_ENGINE
    failing = {"error", "warning"} if strict else {"error"}
    return EXIT_FINDINGS if any(f.severity in failing for f in report.findings) else EXIT_OK


def timings_text(report: Report) -> str:
    lines = [f"timings: {report.files} file(s), {sum(report.jobs.values())} engine job(s), "
             f"{report.cache_hits} from cache"]
    for name, seconds in sorted(report.timings.items(), key=lambda kv: (kv[0] == "total", kv[0])):
        jobs = report.jobs.get(name.removeprefix("engine "), "")
        lines.append(f"  {name:<16} {seconds:7.3f} s" + (f"  ({jobs} job(s))" if jobs else ""))
    return "\n".join(lines)
