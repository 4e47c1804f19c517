"""Tacker 16's own v2 code (sol_refactored infra_drivers/openstack: _make_instantiated_vnf_info) reads the stack
of a built package and must report a vnfcResourceInfo/vnfcInfo for the VDU, an extCpInfo for each external CP
and the internal link's ports. The stack's resources are listed as Heat lists them with nested_depth (name,
type, parent_resource, required_by from the templates' get_resource/get_attr/depends_on), from the package's
generated BaseHOT; the catalog template as 1.x nested it (server, mgmt_port, ...) gives Tacker nothing."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from nfvcat.packaging import basehot
from nfvcat.packaging.csar import build, vnf_properties
from tests.conftest import ROOT

pytest.importorskip("tacker")

STACK = "http://heat/v1/p/stacks"
GROUP = "VDU_VROUTER_scale_group"


def _refs(node: Any) -> set[str]:
    found = {r for r in basehot.walk(node, "get_resource") if isinstance(r, str)}
    found |= {a[0] for a in basehot.walk(node, "get_attr") if isinstance(a, list) and a}
    return found


def _heat_resources(template: dict[str, Any], stack: str, parent: str | None) -> list[dict[str, Any]]:
    """A stack's resources as Heat's resource list shows them (required_by: who refers to each)."""
    resources = template["resources"]
    required_by: dict[str, list[str]] = {n: [] for n in resources}
    for name, res in resources.items():
        deps = _refs(res.get("properties") or {})
        dep = res.get("depends_on") or []
        deps |= {dep} if isinstance(dep, str) else set(dep)
        for d in deps & set(resources):
            required_by[d].append(name)
    out = []
    for name, res in resources.items():
        r = {"resource_name": name, "resource_type": res["type"], "physical_resource_id": f"{stack}-{name}",
             "required_by": required_by[name], "creation_time": "2026-11-23T10:00:00Z",
             "links": [{"rel": "stack", "href": f"{STACK}/{stack}/{stack}-id"}]}
        if parent:
            r["parent_resource"] = parent
        out.append(r)
    return out


class _Heat:
    def __init__(self, resources: list[dict[str, Any]], nfv: dict[str, Any]) -> None:
        self.resources, self.nfv = resources, nfv

    def get_resources(self, stack_name: str) -> list[dict[str, Any]]:
        return self.resources

    def get_parameters(self, stack_name: str) -> dict[str, str]:
        return {"nfv": json.dumps(self.nfv)}

    def get_template(self, stack_id: str) -> dict[str, Any]:
        """The scaling group's nested template, as Heat resolves it: each member with the group's properties
        (Tacker reads the member's ``flavor``)."""
        members = {r["resource_name"] for r in self.resources if r.get("parent_resource") == GROUP}
        return {"resources": {m: {"type": "vrouter.yaml", "properties": {"flavor": "flavor-id", "name": "vrouter"}}
                              for m in members}}


def _members(group: dict[str, Any], count: int) -> dict[str, Any]:
    """The nested stack Heat makes for an AutoScalingGroup: ``count`` members of its resource."""
    return {"resources": {f"m{i}": {"type": group["properties"]["resource"]["type"]} for i in range(count)}}


def _report(csar: Path, nested: dict[str, Any], members: int = 1) -> Any:
    from tacker.sol_refactored import objects
    from tacker.sol_refactored.common import vnfd_utils
    from tacker.sol_refactored.infra_drivers.openstack import openstack

    objects.register_all()
    top = yaml.safe_load((csar / "BaseHOT/default/vnf-vrouter.yaml").read_text())
    resources = _heat_resources(top, "vnf-inst", None)  # the VDU's group, each member a nested stack of its own
    resources += _heat_resources(_members(top["resources"][GROUP], members), f"vnf-inst-{GROUP}", GROUP)
    for i in range(members):
        resources += _heat_resources(nested, f"vnf-inst-m{i}", f"m{i}")
    vid = vnf_properties(csar, "Definitions/vnf-vrouter_top.vnfd.yaml")["descriptor_id"]
    vnfd = vnfd_utils.Vnfd(vid)
    vnfd.init_from_csar_dir(str(csar))
    cp = {"c": {"cpProtocolData": [{"layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": {  # as tacker_lcm sends
        "ipAddresses": [{"type": "IPV4", "numDynamicAddresses": 1}]}}]}}
    req = objects.InstantiateVnfRequest.from_dict({"flavourId": "default", "extVirtualLinks": [
        {"id": "wan", "resourceId": "net-left", "extCps": [{"cpdId": "CP_WAN", "cpConfig": cp}]},
        {"id": "lan", "resourceId": "net-right", "extCps": [{"cpdId": "CP_LAN", "cpConfig": cp}]}]})
    inst = objects.VnfInstanceV2(id="inst", vimConnectionInfo={"vim": objects.VimConnectionInfo(
        vimType="ETSINFV.OPENSTACK_KEYSTONE.V_3", accessInfo={"project": "admin"}, interfaceInfo={})})
    grant_req = objects.GrantRequestV1(operation="INSTANTIATE")
    nfv = {"VDU": {"VDU_VROUTER": {"image": "nfvcat-vrouter-1.0.0"}}, "CP": {}}
    openstack.Openstack()._make_instantiated_vnf_info(req, inst, grant_req, objects.GrantV1(), vnfd,
                                                     _Heat(resources, nfv), stack_id="vnf-inst-id")
    return inst.instantiatedVnfInfo.to_dict()


@pytest.fixture(scope="module")
def csar(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("csar")
    with zipfile.ZipFile(build(ROOT / "vnfd" / "vnf-vrouter", out / "dist")) as zf:
        zf.extractall(out / "x")
    return out / "x"


def test_tacker_reports_the_vdu_and_every_cp_of_the_generated_basehot(csar: Path) -> None:
    nested = yaml.safe_load((csar / "BaseHOT/default/nested/vrouter.yaml").read_text())
    info = _report(csar, nested)
    server = "vnf-inst-m0-VDU_VROUTER"
    assert [(r["vduId"], r["computeResource"]["resourceId"]) for r in info["vnfcResourceInfo"]] == \
        [("VDU_VROUTER", server)]
    assert [v["id"] for v in info["vnfcInfo"]] == [f"VDU_VROUTER-{server}"]  # the vnfcInstanceId heal takes
    cps = {c["cpdId"]: c for c in info["extCpInfo"]}
    assert set(cps) == {"CP_WAN", "CP_LAN"}
    assert all(c["associatedVnfcCpId"] == f"{c['cpdId']}-{server}" for c in cps.values())
    (vl,) = info["vnfVirtualLinkResourceInfo"]
    assert vl["vnfVirtualLinkDescId"] == "VL_MGMT"
    assert [p["cpInstanceType"] for p in vl["vnfLinkPorts"]] == ["VNFC_CP"]  # CP_MGMT, linked to the VNFC
    assert "virtualStorageResourceInfo" not in info  # the VNFD declares no storage the stack lacks


def test_the_catalog_template_nested_unrenamed_gives_tacker_nothing(csar: Path) -> None:
    catalog = yaml.safe_load((ROOT / "templates/heat/vnf-vrouter/vrouter.yaml").read_text())
    info = _report(csar, catalog)
    assert "vnfcResourceInfo" not in info and "extCpInfo" not in info


def test_tacker_reports_each_member_of_the_scaling_group_as_a_vnfc_it_can_scale_in(csar: Path) -> None:
    nested = yaml.safe_load((csar / "BaseHOT/default/nested/vrouter.yaml").read_text())
    info = _report(csar, nested, members=2)
    vnfcs = info["vnfcResourceInfo"]
    assert sorted(r["computeResource"]["resourceId"] for r in vnfcs) == ["vnf-inst-m0-VDU_VROUTER",
                                                                         "vnf-inst-m1-VDU_VROUTER"]
    # what Tacker's scale in and heal mark unhealthy: the member, in the group's nested stack
    assert sorted((r["metadata"]["parent_stack_id"], r["metadata"]["parent_resource_name"]) for r in vnfcs) == [
        ("vnf-inst-VDU_VROUTER_scale_group/vnf-inst-VDU_VROUTER_scale_group-id", "m0"),
        ("vnf-inst-VDU_VROUTER_scale_group/vnf-inst-VDU_VROUTER_scale_group-id", "m1")]
    assert sorted(c["cpdId"] for c in info["extCpInfo"]) == ["CP_LAN", "CP_LAN", "CP_WAN", "CP_WAN"]
