"""E3001: VLAN segmentation id outside 1-4094."""

from __future__ import annotations

from collections.abc import Iterator

from nfvcat.core import hot
from nfvcat.core.documents import Document
from nfvcat.core.findings import RawFinding
from nfvcat.validation.rules.base import Context, Rule


class VlanId(Rule):
    id = "E3001"
    shortdesc = "VLAN segmentation id outside 1-4094"
    description = ("An 802.1Q VLAN id is 12 bits with 0 and 4095 reserved. Heat's OS::Neutron::ProviderNet "
                   "and OS::Neutron::Segment, and an OS::Neutron::Net's provider value_specs, take any "
                   "integer; Neutron refuses it only when the stack is created.")
    source_url = "https://docs.openstack.org/neutron/latest/admin/config-ml2.html"
    kinds = ("hot",)
    follows_nesting = True

    def check(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        for name, body, paths in hot.provider_resources(doc.data):
            values = hot.provider_values(doc.data, body, ctx.parameters)
            if values["network_type"] != "vlan" or "segmentation_id" not in paths:
                continue
            vid = values["segmentation_id"]
            if vid is hot.UNRESOLVED or vid is None or isinstance(vid, bool):
                continue
            try:
                number = int(vid)
            except (TypeError, ValueError):
                continue  # not a number: Heat says so
            if not 1 <= number <= 4094:
                yield self.finding(("resources", name, *paths["segmentation_id"]),
                                   f"VLAN segmentation_id {number} is outside 1-4094")
