"""W3005: VLAN id outside the physnet's range in the site profile, or unknown physnet."""

from __future__ import annotations

from collections.abc import Iterator

from nfvcat.core import hot
from nfvcat.core.documents import Document
from nfvcat.core.findings import RawFinding
from nfvcat.validation.rules.base import Context, Rule


def _ranges(spec: object) -> list[tuple[int, int]]:
    out = []
    for item in spec if isinstance(spec, list) else []:
        lo, _, hi = str(item).partition(":")
        if lo.isdigit() and hi.isdigit():
            out.append((int(lo), int(hi)))
    return out


class VlanOutsidePhysnetRange(Rule):
    id = "W3005"
    shortdesc = "VLAN id outside the physnet's range in the site profile, or unknown physnet"
    description = ("The site profile states each provider physnet's VLAN ranges (ML2's network_vlan_ranges). "
                   "A provider network, a segment or a network with provider value_specs on a physnet the site "
                   "does not have, or on a VLAN outside its range, "
                   "fails or lands on an unplumbed VLAN.")
    source_url = "https://docs.openstack.org/neutron/latest/configuration/ml2-conf.html"
    kinds = ("hot",)
    follows_nesting = True

    def check(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        if not ctx.site.physnets:
            return
        for name, body, paths in hot.provider_resources(doc.data):
            values = hot.provider_values(doc.data, body, ctx.parameters)
            physnet = values["physical_network"]
            if not isinstance(physnet, str) or "physical_network" not in paths:
                continue
            if physnet not in ctx.site.physnets:
                yield self.finding(("resources", name, *paths["physical_network"]),
                                   f"physnet '{physnet}' is not in the site profile "
                                   f"({', '.join(sorted(ctx.site.physnets))})")
                continue
            ranges = _ranges(ctx.site.physnets[physnet].get("vlan_ranges"))
            try:
                vid = int(values["segmentation_id"])  # a -P value is a string
            except (TypeError, ValueError):
                continue
            if values["network_type"] != "vlan" or not ranges or "segmentation_id" not in paths:
                continue
            if not any(lo <= vid <= hi for lo, hi in ranges):
                yield self.finding(("resources", name, *paths["segmentation_id"]),
                                   f"VLAN {vid} is outside {physnet}'s ranges "
                                   f"{', '.join(f'{lo}-{hi}' for lo, hi in ranges)}")
