"""Sub-commands. Each module defines ``register(subparsers)``, which adds its parser and sets
``func`` to a callable taking the parsed arguments and returning the exit code."""

from __future__ import annotations

import argparse
import importlib
import pkgutil


def register_all(subparsers: argparse._SubParsersAction, only: str | None = None) -> None:
    """Every sub-command; with ``only``, just the module of that name when there is one (each command's
    module is named after it): a command does not pay for importing the others."""
    infos = sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name)
    chosen = [i for i in infos if i.name == only]
    for info in chosen or infos:
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(subparsers)
