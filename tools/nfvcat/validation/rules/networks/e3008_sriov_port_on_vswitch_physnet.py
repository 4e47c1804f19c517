"""E3008: SR-IOV port on a physnet the site profile gives to a virtual switch."""

from __future__ import annotations

from collections.abc import Iterator

from nfvcat.core import hot
from nfvcat.core.documents import Document, display_path
from nfvcat.core.findings import RawFinding
from nfvcat.validation.rules.base import Context, Rule


class SriovPortOnVswitchPhysnet(Rule):
    id = "E3008"
    shortdesc = "SR-IOV port on a physnet the site profile gives to a virtual switch"
    description = ("A VF port (vnic_type direct, direct-physical or macvtap) is bound by the sriovnicswitch "
                   "mechanism driver, which binds only on the physnets the SR-IOV agents map to a NIC "
                   "(physical_device_mappings). The site profile says which physnet is SR-IOV; on one it "
                   "declares OVS-DPDK (or OVS) no SR-IOV agent has a device, the port ends in binding_failed and "
                   "the server in ERROR.")
    source_url = "https://docs.openstack.org/neutron/latest/admin/config-sriov.html"
    kinds = ("hot",)
    follows_nesting = True

    def check(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        if not ctx.site.physnets:
            return
        sriov = sorted(n for n in ctx.site.physnets if ctx.site.physnet_type(n) == "sriov")
        for name, port in hot.resources(doc.data, "OS::Neutron::Port"):
            vnic = hot.resolve(doc.data, hot.props(port).get("binding:vnic_type"), ctx.parameters)
            if vnic not in hot.SRIOV_VNIC_TYPES:
                continue
            net = hot.network_of(doc.data, port, ctx.parameters, ctx.networks, ctx.outer)
            physnet = net.get("physical_network") if net else None
            kind = ctx.site.physnet_type(physnet)
            if kind is None or kind == "sriov":
                continue
            profile = display_path(ctx.site.path) if ctx.site.path else "given"
            yield self.finding(("resources", name, "properties", "binding:vnic_type"),
                               f"port '{name}' has vnic_type {vnic} on physnet '{physnet}', which the site profile "
                               f"({profile}) declares {kind}: no SR-IOV agent maps it to a "
                               f"NIC, so the port's binding fails; the site's SR-IOV physnets: "
                               f"{', '.join(sriov) or 'none'}")
