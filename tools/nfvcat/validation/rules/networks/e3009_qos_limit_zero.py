"""E3009: QoS bandwidth limit of 0, which means no limit."""

from __future__ import annotations

from collections.abc import Iterator

from nfvcat.core import hot
from nfvcat.core.documents import Document
from nfvcat.core.findings import RawFinding
from nfvcat.validation.rules.base import Context, Rule

# What each kind of physnet's agent does with a bandwidth limit of 0 (neutron's QoS agent extensions)
_AGENT_READS = {
    "ovs": "the Open vSwitch agent sets ingress_policing_rate 0, which Open vSwitch reads as policing off",
    "ovs-dpdk": "the Open vSwitch agent sets ingress_policing_rate 0, which Open vSwitch reads as policing off",
    "sriov": "the SR-IOV agent sets the VF's max_tx_rate to 0, which the NIC reads as no rate limit",
}


class QosLimitZero(Rule):
    id = "E3009"
    shortdesc = "QoS bandwidth limit of 0, which means no limit"
    description = ("Neutron's API takes `max_kbps: 0` on a bandwidth limit rule, and its agents read 0 as no "
                   "limit: the OVS agent sets an interface's ingress_policing_rate (or a meter) to 0, which Open "
                   "vSwitch reads as policing off, and the SR-IOV agent sets a VF's max_tx_rate to 0, which is "
                   "no rate limit. A rule meant to block traffic lets all of it through. The reasons given are "
                   "those of the site profile's kinds of physnet. To block traffic use a security group or a "
                   "port that is down; for no limit leave the rule out.")
    source_url = "https://docs.openstack.org/neutron/latest/admin/config-qos.html"
    engine = "neutron"
    kinds = ("hot",)
    follows_nesting = True

    def check(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        kinds = sorted({str(v.get("type")) for v in ctx.site.physnets.values() if isinstance(v, dict)}
                       & set(_AGENT_READS)) or ["ovs", "sriov"]
        reasons = "; ".join(dict.fromkeys(_AGENT_READS[k] for k in kinds))
        for name, body in hot.resources(doc.data, "OS::Neutron::QoSBandwidthLimitRule"):
            p = hot.props(body)
            if "max_kbps" not in p:
                continue
            value = hot.resolve(doc.data, p["max_kbps"], ctx.parameters)
            if isinstance(value, bool) or value not in (0, "0"):
                continue
            yield self.finding(("resources", name, "properties", "max_kbps"),
                               f"QoS rule '{name}' has max_kbps 0, which Neutron's agents read as no limit, not as "
                               f"a block: at this site {reasons}")
