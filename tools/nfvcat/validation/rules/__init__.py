"""Every rule: the rule classes, discovered from the modules of this package (each holds its detection logic),
and the ids declared with the code that emits them (the reader's, ``nfvcat.core.problems``; the engines' and
the run's, ``nfvcat.validation.emitted``), as rules of their own that check nothing in-process."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from nfvcat.core import problems
from nfvcat.core.problems import Declared
from nfvcat.validation import emitted
from nfvcat.validation.rules.base import Rule

DECLARING = (problems, emitted)  # the modules whose Declared ids are rules too


def declared(module: ModuleType) -> list[Declared]:
    return [obj for obj in vars(module).values() if isinstance(obj, Declared)]


def as_rule(d: Declared, module: ModuleType) -> type[Rule]:
    """A declared id as a rule class (documentation only: its findings come from the code that declares it)."""
    return type(d.id, (Rule,), {"id": d.id, "shortdesc": d.shortdesc, "description": d.description,
                                "source_url": d.source_url, "engine": d.engine, "__module__": module.__name__})


def all_rules() -> list[Rule]:
    found: dict[str, type[Rule]] = {}

    def add(cls: type[Rule]) -> None:
        if cls.id in found and found[cls.id] is not cls:
            raise RuntimeError(f"rule id {cls.id} defined twice: {found[cls.id]} and {cls}")
        found[cls.id] = cls

    for info in pkgutil.walk_packages(__path__, prefix=__name__ + "."):
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, Rule) and obj.id and obj.__module__ == module.__name__:
                add(obj)
    for module in DECLARING:
        for d in declared(module):
            if d.id not in found:  # a rule class may take a declared id and add detection of its own (E0004)
                add(as_rule(d, module))
    return [found[k]() for k in sorted(found)]
