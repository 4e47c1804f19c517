"""E5001: networking-sfc port pair on a network its driver does not steer."""

from __future__ import annotations

from collections.abc import Iterator

from nfvcat.core import hot
from nfvcat.core.documents import Document
from nfvcat.core.findings import RawFinding
from nfvcat.validation.rules.base import Context, Rule


class PortPairNetworkType(Rule):
    id = "E5001"
    shortdesc = "networking-sfc port pair on a network its driver does not steer"
    description = ("networking-sfc's OVS driver programs a port pair's flows only for ports of VXLAN networks "
                   "(OVSSfcDriver._get_port_detail_info: 'Currently only support vxlan network'); on a VLAN or "
                   "flat network it programs nothing and the chain carries no traffic through the service "
                   "function. The site profile names the driver (`sfc: {driver: ovs}`, ovs by default); the "
                   "network's type comes from the template's provider network or the catalog's networks.")
    source_url = "https://docs.openstack.org/networking-sfc/latest/contributor/ovs_driver_and_agent_workflow.html"
    engine = "networking-sfc"
    kinds = ("hot",)
    follows_nesting = True

    def check(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        if ctx.site.sfc_driver() != "ovs":
            return
        for name, body in hot.resources(doc.data, "OS::Neutron::PortPair"):
            p = hot.props(body)
            for key in ("ingress", "egress"):
                target = hot.follow(doc.data, p.get(key), ctx.parameters, ctx.outer, "OS::Neutron::Port")
                if not isinstance(target, tuple):
                    continue
                scope, port = target
                net = hot.network_of(scope, port, ctx.parameters if scope is doc.data else {}, ctx.networks)
                ntype = net.get("network_type") if net else None
                if isinstance(ntype, str) and ntype != "vxlan":
                    yield self.finding(("resources", name, "properties", key),
                                       f"port pair '{name}': its {key} port is on a {ntype} network; the site's "
                                       "networking-sfc driver (ovs) steers only ports of VXLAN networks, so the "
                                       "chain's flows are never programmed")
