"""Sub-commands. Each module defines ``register(subparsers)``, which adds its parser and sets
``func`` to a callable taking the parsed arguments and returning the exit code."""

from __future__ import annotations

import argparse
import importlib
import importlib.util


def register_all(subparsers: argparse._SubParsersAction, only: str | None = None) -> None:
    """Every sub-command; with ``only``, just the module of that name when there is one (each command's
    module is named after it): a command does not pay for importing the others."""
    own = bool(only and only.isidentifier() and not only.startswith("_"))
    names = [str(only)] if own and importlib.util.find_spec(f"{__name__}.{only}") else []
    if not names:
        import pkgutil

        names = sorted(i.name for i in pkgutil.iter_modules(__path__))
    for name in names:
        module = importlib.import_module(f"{__name__}.{name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(subparsers)
