"""What the lifecycle commands read from the catalog: flavors, images of entries, Heat entries and the site."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from nfvcat.errors import UserError


def root() -> Path:
    env = os.environ.get("NFVCAT_CATALOG_DIR")
    if env:
        return Path(env).resolve()
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "templates" / "heat").is_dir() and (parent / "flavors").is_dir():
            return parent
    return Path.cwd()


def _yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise UserError(f"{path}: {exc}") from None


def flavors() -> list[dict[str, Any]]:
    out = []
    for path in sorted((root() / "flavors").glob("*/flavor.yaml")):
        data = _yaml(path)
        if isinstance(data, dict) and data.get("name"):
            out.append(data)
    return out


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
    """Every image some Heat entry needs, once per name."""
    seen: dict[str, dict[str, Any]] = {}
    for e in heat_entries():
        for img in e.meta.get("images") or []:
            if isinstance(img, dict) and img.get("name"):
                seen.setdefault(str(img["name"]), img)
    return list(seen.values())


def site() -> dict[str, dict[str, Any]]:
    """physnet -> {type, vlan_ranges} from templates/site-profile.yaml."""
    data = _yaml(root() / "templates" / "site-profile.yaml") or {}
    return dict(data.get("physnets") or {})
