"""``nfvcat validate [PATH ...]``: offline validation with Heat's, Nova's, tosca-parser's, tacker's and
cloud-init's own code, plus nfvcat's rules where none of them looks.

Exit codes: 0 no error (warnings allowed unless --strict); 1 usage error; 2 errors found (or warnings
with --strict); 3 an engine could not run, so the result is incomplete.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from typing import Any

from nfvcat.commands import options
from nfvcat.validation import client


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("validate", help="validate templates, VNFDs, packages, flavors and day-0 data offline",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    _arguments(p)
    p.set_defaults(func=run)


def parse_command_line(argv: list[str]) -> dict[str, Any]:
    """``nfvcat validate ARGV...``'s call as plain data (what the engine server runs for the command's thin
    client); SystemExit where the command would print usage, help or a usage error instead."""
    return _call(_own_parser().parse_args(argv))


@functools.cache
def _own_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="nfvcat validate")
    _arguments(p)
    return p


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="files or directories (default: the whole catalog); NAME@VERSION for a released version of an "
                        "entry")
    options.add_environments(p, "Heat environment file for the templates (repeatable)")
    options.add_parameters(p)
    options.add_format(p, "sarif", "junit")
    p.add_argument("--strict", action="store_true", help="warnings fail too")
    p.add_argument("--site", metavar="FILE", help="site profile: which physnet is SR-IOV, which OVS-DPDK")
    p.add_argument("--no-cache", action="store_true", help="run every engine, ignore cached results")
    options.add_no_server(p, "run the engines in this process's own workers, not in the engine server that the "
                             "first validate starts (also NFVCAT_NO_SERVER=1)")
    p.add_argument("--timings", action="store_true", help="print where the time went (stderr)")
    p.add_argument("--skip-unknown", action="store_true",
                   help="the paths are a list (a pre-commit hook's): skip files that are none of nfvcat's kinds")
    p.add_argument("--show-suppressed", action="store_true",
                   help="list the findings suppressed by templates, comments and .nfvcat.yaml")
    p.add_argument("--require-signed", action="store_true",
                   help="a VNF package without a signed manifest is an error (E4006)")
    p.add_argument("--stdin-filename", metavar="PATH",
                   help="validate standard input as the content of PATH, saved or not (an editor's buffer): "
                        "nested templates, get_file and examples are PATH's")
    p.add_argument("--trust-ca", metavar="FILE",
                   help="PEM CA certificate(s) a signed package's certificate must chain to (E4006)")
    options.add_confinement(p)


def _call(args: argparse.Namespace) -> dict[str, Any]:
    call = {k: v for k, v in vars(args).items() if k not in ("func", "command")}
    if any(not os.path.exists(p) for p in args.paths) and not args.skip_unknown and not args.stdin_filename:
        call["paths"] = [q for p in args.paths for q in _entries(p)]
    return call


def _stdin() -> Any:
    """Standard input's bytes (its text when the thin client already read it into a StringIO)."""
    return getattr(sys.stdin, "buffer", sys.stdin)


def _read_bounded(stream: Any, cap: int | None, what: str) -> str:
    """At most the size cap of a stream, as text; a one-line error when there is more."""
    from nfvcat.core import confine
    from nfvcat.core.errors import UserError

    limit = cap or confine.default_max_bytes()
    data = stream.read(limit + 1)
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    if len(data) > limit:
        raise UserError(f"{what}: larger than the {limit} byte limit (--max-file-size, {confine.MAX_BYTES_ENV})")
    return str(data.decode("utf-8", "surrogateescape"))


def _read_pipe(path: str, cap: int | None) -> str:
    """A shell's process substitution (``<(cmd)``: /dev/fd/N, a pipe), read to its end, bounded."""
    from nfvcat.core.errors import UserError

    try:
        with open(path, "rb") as f:
            return _read_bounded(f, cap, path)
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _entries(path: str) -> list[str]:
    """A PATH that is no file but an entry's NAME or NAME@VERSION: the entry directories it names (a release's
    from git history, its digests checked); vnf-vrouter names a heat entry and a vnfd entry."""
    import re

    if os.path.exists(path) or not re.fullmatch(r"[\w.-]+@[\w.+-]+|[\w/.-]+@[\w.+-]+|[A-Za-z0-9][\w.-]*", path) or (
            "@" not in path and path.endswith((".yaml", ".yml", ".json", ".zip", ".csar", ".cfg"))):
        return [path]  # a missing file is the pipeline's E0002
    from nfvcat import catalog
    from nfvcat.catalog import history

    root = catalog.find_root()
    return [str(d) for d in history.locate(root, path)] if root is not None else [path]


def run(args: argparse.Namespace) -> int:
    call = _call(args)
    if args.stdin_filename:
        call["stdin"] = _read_bounded(_stdin(), args.max_file_size, "standard input")
    buffers = {p: _read_bounded(_stdin(), args.max_file_size, "standard input") if p == "-"
               else _read_pipe(p, args.max_file_size) for p in args.paths if client.read_by_command(p)}
    if buffers:  # '-' and a shell's <(cmd): read here, validated as buffers (the server could not read them)
        call["buffers"] = buffers
    if not (args.no_server or client.disabled()):
        answer = client.run(call)
        if answer is not None:
            code, out, err = answer
            sys.stdout.write(out)
            sys.stderr.write(err)
            return code
    from nfvcat.validation import invocation

    return invocation.execute(call, sys.stdout, sys.stderr)
