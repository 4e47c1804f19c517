"""Reading with positions, kind detection, and the HOT helpers the in-process rules rely on."""

from __future__ import annotations

from pathlib import Path

import pytest

from nfvcat.core import documents, hot, yamlpos

TEMPLATE = """heat_template_version: 2021-04-16
parameters:
  data_plane: {type: string, default: ovs-dpdk}
  drive: {type: boolean, default: true}
conditions:
  use_sriov: {equals: [{get_param: data_plane}, sriov]}
  no_drive: {not: {get_param: drive}}
  both: {and: [use_sriov, no_drive]}
resources:
  port:
    type: OS::Neutron::Port
    properties:
      binding:vnic_type: {if: [use_sriov, direct, normal]}
"""


def test_positions_point_at_keys_and_items() -> None:
    _, pos = yamlpos.load(TEMPLATE)
    assert pos.locate(("resources", "port", "properties", "binding:vnic_type")) == (13, 7)
    assert pos.locate(("resources", "port", "properties", "nonexistent", 3)) == (12, 5)
    _, pos = yamlpos.load("a:\n  - x\n  - y\n")
    assert pos.locate(("a", 1)) == (3, 5)


def test_heat_versions_stay_strings() -> None:
    data, _ = yamlpos.load("heat_template_version: 2021-04-16\n")
    assert data["heat_template_version"] == "2021-04-16"


@pytest.mark.parametrize("given,vnic,both", [
    ({}, "normal", False),
    ({"data_plane": "sriov"}, "direct", False),
    ({"data_plane": "sriov", "drive": "false"}, "direct", True),
])
def test_if_and_conditions_are_decided_from_parameters(given: dict[str, str], vnic: str, both: bool) -> None:
    data, _ = yamlpos.load(TEMPLATE)
    value = hot.props(data["resources"]["port"])["binding:vnic_type"]
    assert hot.resolve(data, value, given) == vnic
    assert hot.condition(data, "both", given) is both


def test_conditions_on_unknowns_stay_unresolved() -> None:
    data, _ = yamlpos.load(TEMPLATE.replace("{get_param: data_plane}", "{get_attr: [x, y]}"))
    value = hot.props(data["resources"]["port"])["binding:vnic_type"]
    assert hot.resolve(data, value, {}) is hot.UNRESOLVED


@pytest.mark.parametrize("text,kind", [
    ("heat_template_version: 2021-04-16\n", "hot"),
    ("parameters: {a: 1}\nresource_registry: {}\n", "environment"),
    ("tosca_definitions_version: tosca_simple_yaml_1_3\n", "tosca"),
    ("tosca_definitions_version: tosca_simple_yaml_1_3\nimports: [etsi_nfv_sol001_vnfd_types.yaml]\n", "vnfd"),
    ("#cloud-config\nruncmd: []\n", "cloud-config"),
    ("runcmd: [[ls]]\n", "cloud-config"),
    ("name: f\nvcpus: 1\nram: 512\nextra_specs: {}\n", "flavor"),
    ("kind: nfvcat/site-profile\nphysnets: {}\n", "site-profile"),
    ("kind: nfvcat/inventory\nhosts: []\n", "inventory"),
    ("kind: nfvcat/test-description\ntests: []\n", "test-description"),
    ("apiVersion: v1\n", "unknown"),
])
def test_kind_comes_from_content_not_name(tmp_path: Path, text: str, kind: str) -> None:
    path = tmp_path / "whatever.txt"
    path.write_text(text)
    assert documents.read(str(path)).kind == kind


def test_alias_bomb_is_refused_fast() -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8))
    with pytest.raises(yamlpos.DocumentError) as err:
        yamlpos.load(bomb)
    assert err.value.rule_id == "E0003"
