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
    """Every image some Heat entry needs, once per name."""
    seen: dict[str, dict[str, Any]] = {}
    for e in heat_entries():
        for img in e.meta.get("images") or []:
            if isinstance(img, dict) and img.get("name"):
                seen.setdefault(str(img["name"]), img)
    return list(seen.values())


def site_profile(path: Path | None = None) -> dict[str, Any]:
    """templates/site-profile.yaml (or ``path``): physnets, [pci] aliases, host kinds."""
    data = _yaml(path or root() / "templates" / "site-profile.yaml") or {}
    if not isinstance(data, dict):
        raise UserError(f"{path or 'templates/site-profile.yaml'}: not a site profile (expected a mapping)")
    return data


def site() -> dict[str, dict[str, Any]]:
    """physnet -> {type, vlan_ranges} from templates/site-profile.yaml."""
    return dict(site_profile().get("physnets") or {})


def pci_aliases() -> list[dict[str, Any]]:
    """The site's Nova [pci] alias entries (objects, as nova.conf's JSON)."""
    return [dict(a) for a in (site_profile().get("pci") or {}).get("alias") or [] if isinstance(a, dict)]


def vswitch(role: str) -> str:
    """The virtual switch a host of this kind (inventory role) runs: ovs-dpdk or ovs."""
    kinds = site_profile().get("host_kinds") or {}
    return str((kinds.get(role) or {}).get("vswitch") or "ovs")
