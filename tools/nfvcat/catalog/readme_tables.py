"""Parameter and output tables of a HOT entry, generated from its template into the entry's README.md.

The tables live between two marker lines; everything else in the README is the author's. ``nfvcat docs``
rewrites the part between the markers, ``nfvcat docs --check`` only reports entries whose README differs
from what the template says (drift).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nfvcat.catalog import entries
from nfvcat.core import yamlpos
from nfvcat.core.errors import UserError

BEGIN = "<!-- BEGIN nfvcat tables -->"
END = "<!-- END nfvcat tables -->"
_LONG_VALUE = 60  # a default longer than this is summarised instead of printed


class ReadmeError(Exception):
    """The README or template cannot be processed (one line, shown to the user)."""


@dataclass
class HotEntry:
    name: str
    directory: str  # absolute
    template: str  # absolute path of the main template

    @property
    def readme(self) -> str:
        return os.path.join(self.directory, "README.md")


def _cell(text: str) -> str:
    """Text made safe for one Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _code(text: str) -> str:
    text = _cell(text)
    fence = "``" if "`" in text else "`"
    pad = " " if fence == "``" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(", ", ": "))


def format_default(spec: dict[str, Any]) -> str:
    if spec.get("hidden") and "default" not in spec:
        return "(required, hidden)"
    if "default" not in spec:
        return "(required)"
    default = spec["default"]
    if spec.get("hidden"):
        return "(hidden)"
    if default == "" or default is None:
        return '`""`'
    text = _value(default)
    if len(text) > _LONG_VALUE and isinstance(default, (list, dict)):
        return f"{len(default)} {'items' if isinstance(default, list) else 'keys'} (see template)"
    return _code(text)


def format_constraints(spec: dict[str, Any]) -> str:
    parts: list[str] = []
    for c in spec.get("constraints") or []:
        if not isinstance(c, dict):
            continue
        if "range" in c and isinstance(c["range"], dict):
            lo, hi = c["range"].get("min"), c["range"].get("max")
            parts.append(f"range {'' if lo is None else _value(lo)}..{'' if hi is None else _value(hi)}")
        elif "length" in c and isinstance(c["length"], dict):
            lo, hi = c["length"].get("min"), c["length"].get("max")
            parts.append(f"length {'' if lo is None else _value(lo)}..{'' if hi is None else _value(hi)}")
        elif "modulo" in c and isinstance(c["modulo"], dict):
            modulo = c["modulo"]
            parts.append(f"modulo {_value(modulo.get('step'))} offset {_value(modulo.get('offset'))}")
        elif "allowed_values" in c:
            values = c["allowed_values"] if isinstance(c["allowed_values"], list) else [c["allowed_values"]]
            parts.append("one of " + ", ".join(_code(_value(v)) for v in values))
        elif "allowed_pattern" in c:
            parts.append("pattern " + _code(str(c["allowed_pattern"])))
        elif "custom_constraint" in c:
            parts.append(_code(str(c["custom_constraint"])))
    return "; ".join(parts)


def render(template: Any) -> str:
    """The Markdown between the markers (without them) for a parsed HOT template."""
    if not isinstance(template, dict):
        raise ReadmeError("the template is not a mapping")
    params = template.get("parameters") or {}
    outputs = template.get("outputs") or {}
    if not isinstance(params, dict) or not isinstance(outputs, dict):
        raise ReadmeError("parameters and outputs must be mappings")
    lines = ["### Parameters", ""]
    if params:
        lines += ["| Name | Type | Default | Constraints | Description |", "|---|---|---|---|---|"]
        for name, spec in params.items():
            spec = spec if isinstance(spec, dict) else {}
            lines.append(
                f"| `{_cell(name)}` | {_cell(spec.get('type', ''))} | {format_default(spec)} | "
                f"{format_constraints(spec)} | {_cell(spec.get('description', ''))} |"
            )
    else:
        lines.append("None.")
    lines += ["", "### Outputs", ""]
    if outputs:
        lines += ["| Name | Description |", "|---|---|"]
        for name, spec in outputs.items():
            spec = spec if isinstance(spec, dict) else {}
            lines.append(f"| `{_cell(name)}` | {_cell(spec.get('description', ''))} |")
    else:
        lines.append("None.")
    return "\n".join(lines) + "\n"


def replace_tables(readme: str, tables: str) -> str:
    """``readme`` with the text between the markers replaced by ``tables``."""
    begin, end = readme.find(BEGIN), readme.find(END)
    if begin < 0 or end < 0:
        raise ReadmeError(f"markers missing ({BEGIN} ... {END})")
    if end < begin or readme.count(BEGIN) != 1 or readme.count(END) != 1:
        raise ReadmeError("markers out of order or repeated")
    head = readme[: begin + len(BEGIN)]
    tail = readme[end:]
    return f"{head}\n{tables}{tail}"


def new_readme(entry: HotEntry, description: str, tables: str) -> str:
    return (
        f"# {entry.name}\n\n{description.strip()}\n\n## Parameters and outputs\n\n"
        f"{BEGIN}\n{tables}{END}\n"
    )


def load_yaml(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            data, _ = yamlpos.load(f.read())
    except OSError as exc:
        raise ReadmeError(f"cannot read {path}: {exc.strerror or exc}") from None
    except yamlpos.DocumentError as exc:
        raise ReadmeError(f"{path}:{exc.line}:{exc.column}: {exc.message}") from None
    return data


def find_hot_entries(root: str) -> Iterator[HotEntry]:
    """Every entry of kind heat under ``root``, in path order."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in ("node_modules",))
        if "entry.yaml" not in filenames:
            continue
        try:
            entry = entries.load(Path(dirpath))
            template = entry.template
        except UserError:
            continue  # the validator reports broken entry metadata
        if entry.kind == "heat":
            yield HotEntry(name=entry.name, directory=str(entry.dir), template=str(template))


@dataclass
class Outcome:
    entry: HotEntry
    status: str  # "ok", "updated", "drift", "error"
    message: str = ""


def process(entry: HotEntry, write: bool) -> Outcome:
    """Generate (``write``) or check one entry's README tables."""
    try:
        template = load_yaml(entry.template)
        tables = render(template)
        description = template.get("description", "") if isinstance(template, dict) else ""
        try:
            with open(entry.readme, encoding="utf-8") as f:
                current: str | None = f.read()
        except FileNotFoundError:
            current = None
        if current is None:
            wanted = new_readme(entry, str(description), tables)
        elif write and BEGIN not in current and END not in current:
            wanted = current.rstrip("\n") + f"\n\n## Parameters and outputs\n\n{BEGIN}\n{tables}{END}\n"
        else:
            wanted = replace_tables(current, tables)
    except ReadmeError as exc:
        return Outcome(entry, "error" if write else "drift", str(exc))
    if wanted == current:
        return Outcome(entry, "ok")
    if not write:
        why = "README.md is missing" if current is None else "tables differ from the template"
        return Outcome(entry, "drift", why)
    with open(entry.readme, "w", encoding="utf-8") as f:
        f.write(wanted)
    return Outcome(entry, "updated")

