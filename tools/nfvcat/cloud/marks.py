"""The mark nfvcat leaves on what it deploys: ``nfvcat:NAME@VERSION``, the catalog entry and its version, as one
of a Heat stack's tags and in a Tacker VNF instance's ``metadata`` (and its description, for people)."""

from __future__ import annotations

from typing import Any

from nfvcat.catalog import history

PREFIX = "nfvcat:"
METADATA_KEY = "nfvcat"


def mark(name: str, version: str) -> str:
    """The mark of entry ``name`` at ``version``: ``nfvcat:chain-vrouter@1.1.1`` (a Heat tag holds no comma)."""
    return f"{PREFIX}{name}@{version}"


def parse_mark(values: Any) -> tuple[str, str] | None:
    """(entry, version) of the first nfvcat mark among ``values`` (a stack's tags, a string or a list)."""
    items = values.split(",") if isinstance(values, str) else list(values or [])
    for item in items:
        item = str(item).strip()
        if item.startswith(PREFIX):
            name, version = history.split(item[len(PREFIX):])
            if version is not None:
                return name, version
    return None


def stack_tags(tags: Any, name: str, version: str) -> list[str]:
    """A stack's tags with its nfvcat mark set to ``name@version`` (other tags kept)."""
    kept = [str(t) for t in (tags.split(",") if isinstance(tags, str) else tags or []) if not str(t).startswith(PREFIX)]
    return [*kept, mark(name, version)]
