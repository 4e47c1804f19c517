"""Extra specs as Nova stores them: every value a string. One conversion for the whole package.

YAML gives booleans and numbers where a flavor file writes ``true`` or ``2``; Nova's API wants the strings
``"true"`` and ``"2"`` (a Python ``str(True)`` is ``"True"``, which Nova's boolean validators refuse).
SOL001's ``compute_requirements`` is a map of strings, so a VNFD's ``nova_extra_specs`` may arrive as one
string holding a mapping: heat-translator reads it as YAML, and so do we.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml


def spec_str(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def stringify(specs: Mapping[Any, Any] | None) -> dict[str, str]:
    return {str(k): spec_str(v) for k, v in (specs or {}).items()}


def sol001_specs(value: Any) -> dict[Any, Any] | None:
    """A VNFD's ``nova_extra_specs`` (a mapping, or a YAML/JSON string of one) as a mapping; None if it is
    neither."""
    if isinstance(value, str):
        try:
            value = yaml.safe_load(value)
        except yaml.YAMLError:
            return None
    return value if isinstance(value, dict) else None
