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
                   "A provider network on a physnet the site does not have, or on a VLAN outside its range, "
                   "fails or lands on an unplumbed VLAN.")
    source_url = "https://docs.openstack.org/neutron/latest/configuration/ml2-conf.html"
    kinds = ("hot",)
    follows_nesting = True

    def check(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        if not ctx.site.physnets:
            return
        for name, body in hot.resources(doc.data, "OS::Neutron::ProviderNet"):
            p = hot.props(body)
            physnet = hot.resolve(doc.data, p.get("physical_network"), ctx.parameters)
            if not isinstance(physnet, str):
                continue
            where = ("resources", name, "properties", "physical_network")
            if physnet not in ctx.site.physnets:
                yield self.finding(where, f"physnet '{physnet}' is not in the site profile "
                                   f"({', '.join(sorted(ctx.site.physnets))})")
                continue
            vid = hot.resolve(doc.data, p.get("segmentation_id"), ctx.parameters)
            ranges = _ranges(ctx.site.physnets[physnet].get("vlan_ranges"))
            try:
                vid = int(vid)  # a -P value is a string
            except (TypeError, ValueError):
                continue
            if p.get("network_type") != "vlan" or not ranges:
                continue
            if not any(lo <= vid <= hi for lo, hi in ranges):
                yield self.finding(("resources", name, "properties", "segmentation_id"),
                                   f"VLAN {vid} is outside {physnet}'s ranges "
                                   f"{', '.join(f'{lo}-{hi}' for lo, hi in ranges)}")
