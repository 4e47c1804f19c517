"""Sub-commands. Each module defines ``register(subparsers)``, which adds its parser and sets
``func`` to a callable taking the parsed arguments and returning the exit code. Other distributions add
theirs through the ``nfvcat.commands`` entry points (``nfvcat.core.plugins``): ``nfvcat-testbeds`` adds
``devcloud``."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
from collections.abc import Callable


def register_all(subparsers: argparse._SubParsersAction, only: str | None = None) -> None:
    """Every sub-command; with ``only``, just the module of that name when there is one (each command's
    module is named after it), else the plugin of that name: a command does not pay for importing the others."""
    from nfvcat.core import plugins

    own = bool(only and only.isidentifier() and not only.startswith("_"))
    if own and importlib.util.find_spec(f"{__name__}.{only}"):
        registers: list[Callable[[argparse._SubParsersAction], None] | None] = [
            getattr(importlib.import_module(f"{__name__}.{only}"), "register", None)]
    else:
        plugin = plugins.load(plugins.COMMANDS, str(only)) if only else None
        if plugin is not None:
            registers = [plugin]
        else:
            import pkgutil

            registers = [getattr(importlib.import_module(f"{__name__}.{i.name}"), "register", None)
                         for i in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name)]
            registers += [plugins.load(plugins.COMMANDS, name) for name in plugins.names(plugins.COMMANDS)]
    for register in registers:
        if register is not None:
            register(subparsers)
