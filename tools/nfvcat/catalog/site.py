"""The site profile (``templates/site-profile.yaml``, or ``--site FILE``): which physnet is SR-IOV, which
OVS-DPDK and which plain OVS, with their VLAN ranges, as Neutron's ML2 would say."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nfvcat import yamlpos
from nfvcat.catalog import SITE_PROFILE
from nfvcat.errors import UserError


@dataclass
class SiteProfile:
    path: str = ""
    physnets: dict[str, dict[str, Any]] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)  # the whole file, for keys other parts read

    def physnet_type(self, name: Any) -> str | None:
        entry = self.physnets.get(name) if isinstance(name, str) else None
        return entry.get("type") if isinstance(entry, dict) else None

    def vlan_ranges(self, name: Any) -> list[str]:
        entry = self.physnets.get(name) if isinstance(name, str) else None
        ranges = entry.get("vlan_ranges") if isinstance(entry, dict) else None
        return [str(r) for r in ranges] if isinstance(ranges, list) else []


def load(path: Path | None, explicit: bool = False) -> SiteProfile:
    """The profile at ``path``; an empty one when the catalog has none, unless the user named the file."""
    if path is None or not path.is_file():
        if explicit:
            raise UserError(f"site profile {path}: no such file")
        return SiteProfile()
    try:
        data, _ = yamlpos.load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yamlpos.DocumentError) as exc:
        raise UserError(f"site profile {path}: {getattr(exc, 'message', exc)}") from None
    physnets = data.get("physnets") if isinstance(data, dict) else None
    if not isinstance(physnets, dict):
        raise UserError(f"site profile {path}: no 'physnets' mapping")
    return SiteProfile(str(path), physnets, data)


def of_catalog(root: Path | None, override: str | None = None) -> SiteProfile:
    """``--site FILE`` if given, else the catalog's own profile (none outside a catalog)."""
    if override:
        return load(Path(override), explicit=True)
    return load(root / SITE_PROFILE if root else None)
