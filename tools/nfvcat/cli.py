"""The ``nfvcat`` command: its parser (every sub-command's, from nfvcat.commands) and its one-line errors."""

from __future__ import annotations

import os
import sys

from nfvcat.core.errors import EXIT_ENGINE, EXIT_USAGE, UserError

TYPE_CHECKING = False  # typing's import is start-up time of every warm `nfvcat validate`
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from typing import Any, NoReturn


DESCRIPTION = ("nfvcat validates, plans, packages and deploys a versioned catalog of OpenStack Heat and TOSCA "
               "templates for NFV, with Heat's, Nova's, tosca-parser's, tacker's and cloud-init's own code. "
               "'nfvcat COMMAND --help' shows what a command takes.")
EPILOG = ("Exit codes: 0 ok; 1 usage error; 2 errors found or a check failed; 3 an engine or the cloud could not "
          "be used (the answer is unknown, not negative).")


def terminal(text: str | None) -> str | None:
    """Help text as a terminal shows it: the docstrings the commands describe themselves with are
    reStructuredText, whose inline literals (two backquotes each side) are printed as the plain text."""
    if not text:
        return text
    import re

    return re.sub(r"``(.+?)``", r"\1", text, flags=re.S)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``command``, only that sub-command's (when it exists), so it starts faster."""
    import argparse

    from nfvcat import __version__
    from nfvcat.commands import register_all

    class _Parser(argparse.ArgumentParser):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            for text in ("description", "epilog"):
                kwargs[text] = terminal(kwargs.get(text))
            super().__init__(*args, **kwargs)

        def error(self, message: str) -> None:  # type: ignore[override]
            self.print_usage(sys.stderr)
            print(f"{self.prog}: error: {message}", file=sys.stderr)
            raise SystemExit(EXIT_USAGE)

    parser = _Parser(prog="nfvcat", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"nfvcat {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    groups = register_all(sub, command)
    if command is not None and command not in sub.choices:
        return build_parser()
    if command is None:
        _grouped(parser, sub, groups)
    return parser


def _grouped(parser: argparse.ArgumentParser, sub: argparse._SubParsersAction, groups: dict[str, str]) -> None:
    """``nfvcat --help`` lists the commands by the groups a user works in (author and validate, plan, package
    and release, deploy and operate, test campaigns, the dev cloud, plugins), not as one flat list."""
    from nfvcat.commands import _guide

    parser._positionals._group_actions.remove(sub)
    order = [*_guide.GROUPS, *sorted(set(groups.values()) - set(_guide.GROUPS) - {_guide.PLUGINS}), _guide.PLUGINS]
    pseudo = {a.dest: a for a in sub._choices_actions}
    for title in order:
        names = [n for n in _guide.GROUPS.get(title, ()) if n in pseudo] or sorted(
            n for n, g in groups.items() if g == title and n in pseudo)
        if names:
            group = parser.add_argument_group(title)
            group._group_actions.extend(pseudo[n] for n in names)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] in (["validate"], ["plan"]):  # a warm engine server parses, runs and prints it (editor speed)
            from nfvcat.validation import client

            served = client.run_command_line(argv[1:], argv[0])
            if served is not None:
                code, out, err = served
                sys.stdout.write(out)
                sys.stderr.write(err)
                _answered[:] = [True]
                return code
        args = build_parser(argv[0] if argv and not argv[0].startswith("-") else None).parse_args(argv)
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


_answered: list[bool] = []  # the engine server answered this process's call


def run() -> NoReturn:
    """The command (the ``nfvcat`` script, ``python -m nfvcat``): ``main``'s exit code. A call the engine
    server answered ends at once when its output is flushed: it opened nothing else, and Python's
    finalisation (modules, the garbage collector) was 3 of a warm call's 23 ms."""
    code = main()
    if _answered:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (BrokenPipeError, ValueError):  # a reader that went away; a closed stream
            pass
        os._exit(code)
    sys.exit(code)

