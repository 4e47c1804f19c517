"""The ``nfvcat`` command."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from nfvcat import __version__
from nfvcat.commands import register_all
from nfvcat.errors import EXIT_ENGINE, EXIT_USAGE, UserError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``command``, only that sub-command's (when it exists), so it starts faster."""
    parser = _Parser(prog="nfvcat", description=__doc__)
    parser.add_argument("--version", action="version", version=f"nfvcat {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    register_all(sub, command)
    if command is not None and command not in sub.choices:
        return build_parser()
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(argv[0] if argv and not argv[0].startswith("-") else None).parse_args(argv)
    try:
        return int(args.func(args))
    except UserError as exc:
        print(f"nfvcat: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("nfvcat: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug of ours: one line, unless asked for the traceback
        if os.environ.get("NFVCAT_DEBUG"):
            raise
        print(f"nfvcat: internal error: {type(exc).__name__}: {exc} (NFVCAT_DEBUG=1 shows the traceback)",
              file=sys.stderr)
        return EXIT_ENGINE
