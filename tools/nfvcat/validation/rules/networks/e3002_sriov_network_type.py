"""E3002: SR-IOV port on a network that is not vlan or flat."""

from __future__ import annotations

from collections.abc import Iterator

from nfvcat.core import hot
from nfvcat.core.documents import Document
from nfvcat.core.findings import RawFinding
from nfvcat.validation.rules.base import Context, Rule


class SriovNetworkType(Rule):
    id = "E3002"
    shortdesc = "SR-IOV port on a network that is not vlan or flat"
    description = ("A VF (vnic_type direct, direct-physical or macvtap) is bound by the sriovnicswitch "
                   "mechanism driver, which supports only vlan and flat segments; on a vxlan or geneve network "
                   "the port ends in binding_failed and the server in ERROR.")
    source_url = "https://docs.openstack.org/neutron/latest/admin/config-sriov.html"
    kinds = ("hot",)
    follows_nesting = True

    def check(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        for name, port in hot.resources(doc.data, "OS::Neutron::Port"):
            vnic = hot.resolve(doc.data, hot.props(port).get("binding:vnic_type"), ctx.parameters)
            if vnic not in hot.SRIOV_VNIC_TYPES:
                continue
            net = hot.network_of(doc.data, port, ctx.parameters, ctx.networks, ctx.outer)
            ntype = net.get("network_type") if net else None
            if isinstance(ntype, str) and ntype not in ("vlan", "flat"):
                yield self.finding(("resources", name, "properties", "binding:vnic_type"),
                                   f"port '{name}' has vnic_type {vnic}, which needs a vlan or flat network; "
                                   f"its network is {ntype}")
