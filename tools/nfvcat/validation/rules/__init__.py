"""Every rule class, discovered from the modules of this package."""

from __future__ import annotations

import importlib
import pkgutil

from nfvcat.validation.rules.base import Rule


def all_rules() -> list[Rule]:
    found: dict[str, type[Rule]] = {}
    for info in pkgutil.walk_packages(__path__, prefix=__name__ + "."):
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, Rule) and obj.id and obj.__module__ == module.__name__:
                if obj.id in found and found[obj.id] is not obj:
                    raise RuntimeError(f"rule id {obj.id} defined twice: {found[obj.id]} and {obj}")
                found[obj.id] = obj
    return [found[k]() for k in sorted(found)]
