"""The mark nfvcat leaves on what it deploys: ``nfvcat:NAME@VERSION``, the catalog entry and its version, as one
of a Heat stack's tags and in a Tacker VNF instance's ``metadata`` (and its description, for people).

An upgrade sends the new mark with the update, and the version it comes from as ``nfvcat-from:NAME@VERSION``:
Heat's (convergence) rollback restores the template but not the tags, so a stack in a ROLLBACK_ state runs the
version it came from."""

from __future__ import annotations

from typing import Any

from nfvcat.catalog import history

PREFIX = "nfvcat:"
FROM = "nfvcat-from:"
METADATA_KEY = "nfvcat"


def mark(name: str, version: str) -> str:
    """The mark of entry ``name`` at ``version``: ``nfvcat:chain-vrouter@1.1.1`` (a Heat tag holds no comma)."""
    return f"{PREFIX}{name}@{version}"


def parse_mark(values: Any, status: str = "") -> tuple[str, str] | None:
    """(entry, version) that ``values`` (a stack's tags, a string or a list) say runs: the mark's, or after a
    rollback (``status`` ROLLBACK_...) the version the update came from."""
    items = [str(i).strip() for i in (values.split(",") if isinstance(values, str) else list(values or []))]
    prefixes = (FROM, PREFIX) if status.startswith("ROLLBACK_") else (PREFIX,)
    for prefix in prefixes:
        for item in items:
            if item.startswith(prefix):
                name, version = history.split(item[len(prefix):])
                if version is not None:
                    return name, version
    return None


def stack_tags(tags: Any, name: str, version: str, previous: str | None = None) -> list[str]:
    """A stack's tags with its mark set to ``name@version`` and, given ``previous``, the version an update comes
    from (else the one it had: an update run again after heat-engine lost it still comes from there)."""
    items = [str(t) for t in (tags.split(",") if isinstance(tags, str) else tags or [])]
    came = [f"{FROM}{name}@{previous}"] if previous else [t for t in items if t.startswith(FROM)]
    return [*(t for t in items if not t.startswith((PREFIX, FROM))), mark(name, version), *came]
