"""``nfvcat translate``: heat-translator's HOT plus the NFV fixes, against a golden HOT (parsed data).

Regenerate after an intended change with ``NFVCAT_UPDATE_GOLDEN=1 pytest <this file>``.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from nfvcat.validation.translate import translate
from tests.conftest import ROOT, findings_of, nfvcat

CHAIN = ROOT / "templates" / "tosca" / "chain-vrouter" / "chain-vrouter.yaml"
GOLDEN = ROOT / "tests" / "golden" / "translate" / "chain-vrouter.hot.yaml"


def test_chain_matches_golden() -> None:
    got = translate(str(CHAIN))
    if os.environ.get("NFVCAT_UPDATE_GOLDEN"):
        GOLDEN.write_text(yaml.safe_dump(got, sort_keys=False, width=110))
    assert got == yaml.safe_load(GOLDEN.read_text())


def test_what_heat_translator_drops_is_back() -> None:
    res = translate(str(CHAIN))["resources"]
    assert res["net_sriov"] == {"type": "OS::Neutron::ProviderNet", "properties": {
        "name": "chain-vrouter-sriov", "network_type": "vlan", "physical_network": "physnet_sriov",
        "segmentation_id": {"get_param": "vlan_id"}}}
    assert res["port_sriov"]["properties"]["binding:vnic_type"] == "direct"
    assert "vnic_type" not in res["port_sriov"]["properties"]
    assert "binding:vnic_type" not in res["port_mgmt"]["properties"]  # normal is Neutron's default
    server = res["vrouter"]["properties"]
    assert server["flavor"] == {"get_resource": "vrouter_flavor"}
    assert server["image"] == {"get_param": "image"}
    assert server["config_drive"] is True and "user_data_format" not in server
    assert res["vrouter_flavor"]["properties"] == {"vcpus": 4, "ram": 8192, "disk": 10, "extra_specs": {
        "hw:cpu_policy": "dedicated", "hw:cpu_thread_policy": "prefer", "hw:mem_page_size": "1GB",
        "hw:numa_nodes": "1"}}


def test_sol001_flavour_gets_extra_specs_as_a_map_and_sriov_binding() -> None:
    df = ROOT / "vnfd" / "vnf-ipsec-gw" / "Definitions" / "vnf-ipsec-gw_df_default.yaml"
    res = translate(str(df))["resources"]
    assert res["VDU_IPSEC_flavor"]["properties"]["extra_specs"]["pci_passthrough:alias"] == "qat-vf:1"
    assert res["CP_UNTRUST"]["properties"]["binding:vnic_type"] == "direct"
    assert res["VDU_IPSEC"]["properties"]["config_drive"] is True


def test_translated_hot_passes_validation(tmp_path: Path) -> None:
    out = tmp_path / "chain.hot.yaml"
    proc = nfvcat("translate", str(CHAIN), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    code, findings = findings_of(str(out))
    assert (code, findings) == (0, [])


def test_invalid_template_is_a_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(CHAIN.read_text().replace("vnic_type: direct\n", "vnic_type: sriov\n"))
    proc = nfvcat("translate", str(bad))
    assert proc.returncode == 2
    assert proc.stderr.startswith("nfvcat: error:") and "sriov" in proc.stderr and "Traceback" not in proc.stderr
