"""The site profile (``templates/site-profile.yaml``, or ``--site FILE``): which physnet is SR-IOV, which
OVS-DPDK and which plain OVS, with their VLAN ranges, as Neutron's ML2 would say; the [pci] aliases the
catalog's flavors name; the kinds of compute host (an inventory's roles) with the virtual switch each runs;
and, optionally, the memory page sizes the site's compute hosts offer (``page_sizes: [4K, 2M, 1G]``, x86_64's
by default); the networking-sfc driver (``sfc: {driver: ovs}``, ovs by default)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nfvcat.catalog import SITE_PROFILE
from nfvcat.core import yamlpos
from nfvcat.core.errors import UserError

# The page sizes an x86_64 host offers (base pages, 2 MiB and 1 GiB huge pages), in KiB.
X86_64_PAGE_SIZES_KB = (4, 2048, 1048576)


@dataclass
class SiteProfile:
    path: str = ""
    physnets: dict[str, dict[str, Any]] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)  # the whole file, for keys other parts read
    page_sizes_kb: tuple[int, ...] = X86_64_PAGE_SIZES_KB

    def physnet_type(self, name: Any) -> str | None:
        entry = self.physnets.get(name) if isinstance(name, str) else None
        return entry.get("type") if isinstance(entry, dict) else None

    def pci_aliases(self) -> list[dict[str, Any]]:
        """The site's Nova [pci] alias entries (objects, as nova.conf's JSON): the catalog flavors name them."""
        pci = self.data.get("pci")
        aliases = pci.get("alias") if isinstance(pci, dict) else None
        return [dict(a) for a in aliases or [] if isinstance(a, dict)]

    def vswitch(self, role: str) -> str:
        """The virtual switch of a kind of host (an inventory role): ``ovs-dpdk`` or ``ovs`` (the default)."""
        kinds = self.data.get("host_kinds")
        kind = kinds.get(role) if isinstance(kinds, dict) else None
        return str(kind.get("vswitch") or "ovs") if isinstance(kind, dict) else "ovs"

    def sfc_driver(self) -> str:
        """The networking-sfc driver of the site (``sfc: {driver: ovs}``): ``ovs`` by default, the driver the
        catalog's service chains are made for."""
        sfc = self.data.get("sfc")
        driver = sfc.get("driver") if isinstance(sfc, dict) else None
        return str(driver or "ovs")

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
    data, _ = yamlpos.read_file(path, what="site profile")
    physnets = data.get("physnets") if isinstance(data, dict) else None
    if not isinstance(physnets, dict):
        raise UserError(f"site profile {path}: no 'physnets' mapping")
    return SiteProfile(str(path), physnets, data, _page_sizes(path, data.get("page_sizes")))


def _page_sizes(path: Path, value: Any) -> tuple[int, ...]:
    """``page_sizes`` in KiB, read as a host inventory's page sizes are (``4K``, ``2M``, ``1G``)."""
    from nfvcat.catalog.units import page_size_kib

    if value is None:
        return X86_64_PAGE_SIZES_KB
    try:
        if not isinstance(value, list) or not value:
            raise ValueError("must be a list of sizes such as [4K, 2M, 1G]")
        return tuple(sorted({page_size_kib(v, host=True) for v in value}))
    except ValueError as exc:
        raise UserError(f"site profile {path}: page_sizes: {exc}") from None


def of_catalog(root: Path | None, override: str | None = None) -> SiteProfile:
    """``--site FILE`` if given, else the catalog's own profile (none outside a catalog)."""
    if override:
        return load(Path(override), explicit=True)
    return load(root / SITE_PROFILE if root else None)
