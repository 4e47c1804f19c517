"""E3003: vhost-user port without a huge-page flavor."""

from __future__ import annotations

from collections.abc import Iterator

from nfvcat.core import hot
from nfvcat.core.documents import Document
from nfvcat.core.findings import RawFinding
from nfvcat.validation.rules.base import Context, Rule


class DpdkNeedsHugepages(Rule):
    id = "E3003"
    shortdesc = "vhost-user port without a huge-page flavor"
    description = ("A port on an OVS-DPDK physnet is plugged as vhost-user, which shares guest memory with "
                   "the switch: the guest's memory must be backed by huge pages (`hw:mem_page_size`), or the "
                   "VM gets no traffic. Which physnet is OVS-DPDK comes from the site profile.")
    source_url = "https://docs.openstack.org/neutron/latest/admin/config-ovs-dpdk.html"
    kinds = ("hot",)
    follows_nesting = True

    def check(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        for name, server in hot.resources(doc.data, "OS::Nova::Server"):
            dpdk_ports = []
            for port_name, port in hot.server_ports(doc.data, server):
                net = hot.network_of(doc.data, port, ctx.parameters, ctx.networks, ctx.outer)
                physnet = net.get("physical_network") if net else None
                vnic = hot.resolve(doc.data, hot.props(port).get("binding:vnic_type", "normal"), ctx.parameters)
                if ctx.site.physnet_type(physnet) == "ovs-dpdk" and vnic == "normal":
                    dpdk_ports.append(port_name)
            if not dpdk_ports:
                continue
            specs = hot.flavor_specs(doc.data, server, ctx.parameters, ctx.flavors, ctx.outer)
            if specs is not None and "hw:mem_page_size" not in specs:
                yield self.finding(("resources", name, "properties", "flavor"),
                                   f"ports {', '.join(dpdk_ports)} are vhost-user (OVS-DPDK) but the flavor "
                                   "has no hw:mem_page_size")
