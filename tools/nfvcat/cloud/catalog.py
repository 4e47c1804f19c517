"""What the lifecycle commands read from the catalog: flavors, images of entries, Heat entries and the site."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from nfvcat.catalog import find_root
from nfvcat.errors import UserError
from nfvcat.flavors import all_flavors


def root() -> Path:
    return find_root() or Path.cwd()


def _yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise UserError(f"{path}: {exc}") from None


def flavors() -> list[dict[str, Any]]:
    return [f.data for f in all_flavors(root()) if f.data.get("name")]


@dataclass
class HeatEntry:
    name: str
    dir: Path
    meta: dict[str, Any]

    @property
    def template(self) -> Path:
        return self.dir / str(self.meta.get("template") or f"{self.name}.yaml")

    def example(self, name: str) -> Path | None:
        for cand in (self.dir / "examples" / name, self.dir / "examples" / f"{name}.env.yaml",
                     self.dir / "examples" / f"{name}.yaml"):
            if cand.is_file():
                return cand
        return None


def heat_entries() -> list[HeatEntry]:
    out = []
    for path in sorted((root() / "templates" / "heat").glob("*/entry.yaml")):
        meta = _yaml(path)
        if isinstance(meta, dict):
            out.append(HeatEntry(str(meta.get("name") or path.parent.name), path.parent, meta))
    return out


def heat_entry(name: str) -> HeatEntry:
    for e in heat_entries():
        if e.name == name or e.dir.name == name:
            return e
    known = ", ".join(e.name for e in heat_entries())
    raise UserError(f"no catalog entry '{name}' in templates/heat (known: {known})")


def images() -> list[dict[str, Any]]:
    """Every image some entry needs, once per Glance name, resolved to its images/ entry and lock."""
    from nfvcat.images import refs

    return refs.glance_images(root())


def site() -> dict[str, dict[str, Any]]:
    """physnet -> {type, vlan_ranges} from templates/site-profile.yaml."""
    data = _yaml(root() / "templates" / "site-profile.yaml") or {}
    return dict(data.get("physnets") or {})
