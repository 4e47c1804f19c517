"""The rules that depend on parameters follow a chain into its nested VNF templates."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import ROOT, findings_of

CHAIN = ROOT / "templates" / "heat" / "chain-vrouter"

CHILD = """heat_template_version: 2021-04-16
parameters:
  net: {type: string}
  vnic: {type: string, default: direct}
  drive: {type: boolean, default: true}
resources:
  port:
    type: OS::Neutron::Port
    properties: {network: {get_param: net}, binding:vnic_type: {get_param: vnic}}
  server:
    type: OS::Nova::Server
    properties:
      image: debian-12
      flavor: m1.small
      config_drive: {get_param: drive}
      networks: [{port: {get_resource: port}}]
"""

PARENT = """heat_template_version: 2021-04-16
resources:
  net:
    type: OS::Neutron::ProviderNet
    properties: {network_type: NETTYPE, segmentation_id: 120}
  vnf:
    type: vnf.yaml
    properties: {net: {get_resource: net}, drive: DRIVE}
"""


def test_a_chain_wiring_ovs_dpdk_networks_to_a_flavor_without_huge_pages_fails() -> None:
    env = str(CHAIN / "examples" / "ovs-dpdk.env.yaml")
    assert findings_of(str(CHAIN / "chain-vrouter.yaml"), "-e", env) == (0, [])
    code, findings = findings_of(str(CHAIN / "chain-vrouter.yaml"), "-e", env, "-P", "flavor=nfv.shared.4c4g")
    assert code == 2
    [f] = findings
    assert f["id"] == "E3003" and f["file"] == "templates/heat/vnf-vrouter/vrouter.yaml"
    assert "chain-vrouter.yaml resource 'vrouter'" in str(f["message"])


def test_parent_resources_reach_the_child(tmp_path: Path) -> None:
    (tmp_path / "vnf.yaml").write_text(CHILD)
    vlan = "vlan, physical_network: physnet_sriov"
    (tmp_path / "chain.yaml").write_text(PARENT.replace("NETTYPE", vlan).replace("DRIVE", "true"))
    assert findings_of(str(tmp_path / "chain.yaml")) == (0, [])
    (tmp_path / "chain.yaml").write_text(PARENT.replace("NETTYPE", "vxlan").replace("DRIVE", "false"))
    code, findings = findings_of(str(tmp_path / "chain.yaml"))
    assert code == 2
    assert sorted((f["id"], Path(str(f["file"])).name) for f in findings) == [("E3002", "vnf.yaml"),
                                                                             ("W3004", "vnf.yaml")]
