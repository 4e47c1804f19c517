"""What `nfvcat plan` takes from a cloud's Nova configuration (``--nova-conf nova.conf``): the scheduler's
``[filter_scheduler] enabled_filters``, its weighers and their multipliers, whether PCI devices are tracked in
Placement (``pci_in_placement``), and the ``[pci] alias`` entries,
so the filters and weighers plan models are the ones the cloud runs (the dev cloud's:
``.devcloud/etc/nova/nova.conf``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nfvcat.core.errors import UserError


def _values(path: Path) -> dict[tuple[str, str], list[str]]:
    """(section, key) -> values, in order (oslo.config repeats a key for multi-valued options)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"--nova-conf {path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    out: dict[tuple[str, str], list[str]] = {}
    section = "DEFAULT"
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            if not line.endswith("]"):
                raise UserError(f"{path}:{number}: malformed section header")
            section = line[1:-1].strip()
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise UserError(f"{path}:{number}: expected KEY = VALUE")
        out.setdefault((section, key.strip()), []).append(value.strip())
    return out


def read(path: str) -> tuple[list[str] | None, list[dict[str, Any]] | None]:
    """(enabled_filters, pci aliases), None for what the file does not set."""
    values = _values(Path(path))
    filters = values.get(("filter_scheduler", "enabled_filters"))
    aliases = values.get(("pci", "alias"))
    parsed: list[dict[str, Any]] | None = None
    if aliases:
        parsed = []
        for a in aliases:
            try:
                parsed.append(dict(json.loads(a)))
            except (ValueError, TypeError):
                raise UserError(f"{path}: [pci] alias {a!r} is not a JSON object") from None
    return ([f.strip() for f in filters[-1].split(",") if f.strip()] if filters else None), parsed


def weighing(path: str, names: tuple[str, ...]) -> dict[str, str]:
    """The ``[filter_scheduler]`` options among ``names`` (weight_classes, the multipliers) the file sets."""
    values = _values(Path(path))
    return {name: values[("filter_scheduler", name)][-1] for name in names if ("filter_scheduler", name) in values}


def pci_in_placement(path: str) -> bool:
    """``[filter_scheduler] pci_in_placement`` (oslo.config's boolean spellings; Nova's default false)."""
    raw = _values(Path(path)).get(("filter_scheduler", "pci_in_placement"))
    if not raw:
        return False
    value = raw[-1].lower()
    if value not in ("true", "1", "on", "yes", "false", "0", "off", "no"):
        raise UserError(f"--nova-conf {path}: [filter_scheduler] pci_in_placement = {raw[-1]!r} is not a boolean")
    return value in ("true", "1", "on", "yes")
