"""``nfvcat lsp``: a Language Server over stdio for editors (VS Code, Neovim...): nfvcat's findings as
diagnostics on open and save, with the rule id and a link to its documentation. Uses the engine server
like ``nfvcat validate`` (NFVCAT_NO_SERVER=1: in-process). See README.md for the editor set-up."""

from __future__ import annotations

import argparse

from nfvcat.core.errors import EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("lsp", help="Language Server (stdio) showing findings as editor diagnostics",
                       description=__doc__)
    p.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (the default and only way)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nfvcat.validation.lsp import serve_stdio

    serve_stdio()
    return EXIT_OK
