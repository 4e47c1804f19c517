"""E4005: an SR-IOV connection point on an internal virtual link that is not a VLAN or flat network."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from nfvcat.core.documents import Document
from nfvcat.core.findings import RawFinding
from nfvcat.validation.rules.base import Context, Rule

SRIOV_VNIC_TYPES = ("direct", "direct-physical", "macvtap")
SRIOV_NETWORK_TYPES = ("vlan", "flat")


def _sriov_vnic(props: Any) -> tuple[str | None, tuple[Any, ...]]:
    """The CP's SR-IOV vnic type and where it is stated: ``vnic_type`` (SOL001 v2.6.1 allows
    direct-physical) or a ``virtual_network_interface_requirements`` entry naming a vnic_type."""
    if not isinstance(props, dict):  # tosca-parser reports a properties section that is no mapping
        return None, ()
    vnic = props.get("vnic_type")
    if vnic in SRIOV_VNIC_TYPES:
        return str(vnic), ("properties", "vnic_type")
    reqs = props.get("virtual_network_interface_requirements")
    for i, req in enumerate(reqs if isinstance(reqs, list) else []):
        wanted = req.get("network_interface_requirements") if isinstance(req, dict) else None
        if isinstance(wanted, dict) and wanted.get("vnic_type") in SRIOV_VNIC_TYPES:
            return str(wanted["vnic_type"]), ("properties", "virtual_network_interface_requirements", i)
    return None, ()


def _network_types(vl: dict[str, Any]) -> list[Any]:
    props = vl.get("properties")
    profile = (props.get("vl_profile") if isinstance(props, dict) else None) or {}
    data = profile.get("virtual_link_protocol_data") if isinstance(profile, dict) else None
    types = []
    for item in data if isinstance(data, list) else []:
        l2 = item.get("l2_protocol_data") if isinstance(item, dict) else None
        if isinstance(l2, dict) and "network_type" in l2:
            types.append(l2["network_type"])
    return types


class SriovVirtualLink(Rule):
    id = "E4005"
    shortdesc = "SR-IOV connection point on a virtual link that is not vlan or flat"
    description = ("A VduCp asking for an SR-IOV interface (vnic_type direct-physical, or a "
                   "virtual_network_interface_requirements entry with vnic_type direct, direct-physical or "
                   "macvtap) is linked to an internal VnfVirtualLink whose l2_protocol_data does not say "
                   "network_type vlan or flat. Tacker creates that network as a tenant network (vxlan or "
                   "geneve), which Neutron's sriovnicswitch mechanism driver cannot bind: the port ends in "
                   "binding_failed and the VNF instantiation fails.")
    source_url = "https://docs.openstack.org/neutron/latest/admin/config-sriov.html"
    kinds = ("vnfd",)

    def check(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        topo = doc.data.get("topology_template") if isinstance(doc.data, dict) else None
        nodes = topo.get("node_templates") if isinstance(topo, dict) else None
        if not isinstance(nodes, dict):
            return
        for name, node in nodes.items():
            if not isinstance(node, dict) or node.get("type") != "tosca.nodes.nfv.VduCp":
                continue
            vnic, _where = _sriov_vnic(node.get("properties") or {})
            reqs = node.get("requirements")
            if vnic is None or not isinstance(reqs, list):
                continue
            for i, req in enumerate(reqs):
                target = req.get("virtual_link") if isinstance(req, dict) else None
                if isinstance(target, dict):
                    target = target.get("node")
                vl = nodes.get(target) if isinstance(target, str) else None
                if not isinstance(vl, dict) or vl.get("type") != "tosca.nodes.nfv.VnfVirtualLink":
                    continue
                types = _network_types(vl)
                if not any(t in SRIOV_NETWORK_TYPES for t in types):
                    said = f"network_type {', '.join(map(str, types))}" if types else "no network_type"
                    yield self.finding(
                        ("topology_template", "node_templates", name, "requirements", i, "virtual_link"),
                        f"connection point {name} wants SR-IOV (vnic_type {vnic}) on virtual link {target}, "
                        f"whose l2_protocol_data has {said}; SR-IOV needs vlan or flat")
