"""W3004: server with SR-IOV ports and no config drive."""

from __future__ import annotations

from collections.abc import Iterator

from nfvcat.core import hot
from nfvcat.core.documents import Document
from nfvcat.core.findings import RawFinding
from nfvcat.validation.rules.base import Context, Rule


class SriovWithoutConfigDrive(Rule):
    id = "W3004"
    shortdesc = "Server with SR-IOV ports and no config drive"
    description = ("A VF bypasses the virtual switch, so Neutron's DHCP and metadata proxy do not reach it: "
                   "a VNF whose only way out is a VF gets no address and no day-0 data. Deliver day-0 by "
                   "config drive (`config_drive: true`).")
    source_url = "https://docs.openstack.org/nova/latest/user/metadata.html#config-drives"
    kinds = ("hot",)
    follows_nesting = True

    def check(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        for name, server in hot.resources(doc.data, "OS::Nova::Server"):
            sriov = [p for p, body in hot.server_ports(doc.data, server)
                     if hot.resolve(doc.data, hot.props(body).get("binding:vnic_type"), ctx.parameters)
                     in hot.SRIOV_VNIC_TYPES]
            if not sriov:
                continue
            drive = hot.resolve(doc.data, hot.props(server).get("config_drive"), ctx.parameters)
            if drive is hot.UNRESOLVED or str(drive).lower() in ("true", "1", "yes", "on"):
                continue
            yield self.finding(("resources", name, "properties"),
                               f"server '{name}' has SR-IOV ports ({', '.join(sriov)}) and no config drive")
