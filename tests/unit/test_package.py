"""``nfvcat package``: the built CSARs against golden files, compared as parsed data.

Regenerate the golden files after an intended change with ``NFVCAT_UPDATE_GOLDEN=1 pytest <this file>``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import types
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from nfvcat.core.errors import UserError
from nfvcat.packaging import basehot as basehot_gen
from nfvcat.packaging.csar import build
from tests.conftest import ROOT, findings_of, nfvcat

GOLDEN = ROOT / "tests" / "golden" / "packages"
ENTRIES = ["vnf-vrouter", "vnf-ipsec-gw"]


def parse_manifest(text: str) -> dict[str, Any]:
    """A SOL004 manifest: the metadata block, then one block per artifact."""
    blocks = [b for b in re.split(r"\n\s*\n", text.strip()) if b.strip()]
    head = _strings(blocks[0])
    artifacts = {}
    for block in blocks[1:]:
        data = _strings(block)
        artifacts[data.pop("Source")] = data
    return {"metadata": {k: v for k, v in head.items() if k != "metadata"}, "artifacts": artifacts}


def _strings(text: str | bytes) -> Any:
    """YAML with every scalar a string, as written (no dates or floats)."""
    return yaml.load(text, Loader=yaml.BaseLoader)


def describe(path: Path) -> dict[str, Any]:
    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
        meta = _strings(zf.read("TOSCA-Metadata/TOSCA.meta"))
        manifest = zf.read(meta["ETSI-Entry-Manifest"]).decode()
        # the generated top templates, as data, so a change to them shows in the golden file's diff
        basehot = {i.filename: yaml.safe_load(zf.read(i)) for i in infos
                   if re.fullmatch(r"BaseHOT/[^/]+/[^/]+\.ya?ml", i.filename)}
        basehot = json.loads(json.dumps(basehot, default=str))  # heat_template_version reads as a date
    return {
        "name": path.name,
        "basehot": basehot,
        "files": [i.filename for i in infos],
        "tosca_meta": meta,
        "manifest": parse_manifest(manifest),
    }


@pytest.mark.parametrize("entry", ENTRIES)
def test_package_matches_golden(entry: str, tmp_path: Path) -> None:
    built = build(ROOT / "vnfd" / entry, tmp_path)
    got = describe(built)
    golden = GOLDEN / f"{entry}.json"
    if os.environ.get("NFVCAT_UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(json.dumps(got, indent=2, sort_keys=True) + "\n")
    assert got == json.loads(golden.read_text())


@pytest.mark.parametrize("entry", ENTRIES)
def test_manifest_hashes_every_member_but_itself_and_tosca_meta(entry: str, tmp_path: Path) -> None:
    built = build(ROOT / "vnfd" / entry, tmp_path)
    desc = describe(built)
    listed = desc["manifest"]["artifacts"]
    with zipfile.ZipFile(built) as zf:
        for name in desc["files"]:
            if name in ("TOSCA-Metadata/TOSCA.meta", desc["tosca_meta"]["ETSI-Entry-Manifest"]):
                assert name not in listed
                continue
            assert listed[name] == {"Algorithm": "SHA-256", "Hash": hashlib.sha256(zf.read(name)).hexdigest()}


def test_build_is_deterministic(tmp_path: Path) -> None:
    first = build(ROOT / "vnfd" / "vnf-vrouter", tmp_path / "a")
    second = build(ROOT / "vnfd" / "vnf-vrouter", tmp_path / "b")
    assert first.read_bytes() == second.read_bytes()
    with zipfile.ZipFile(first) as zf:
        names = zf.namelist()
        assert names == sorted(names)
        assert {i.date_time for i in zf.infolist()} == {(1980, 1, 1, 0, 0, 0)}


def test_command_line(tmp_path: Path) -> None:
    proc = nfvcat("package", "vnfd/vnf-ipsec-gw", "-o", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    version = yaml.safe_load((ROOT / "vnfd" / "vnf-ipsec-gw" / "entry.yaml").read_text())["version"]
    assert proc.stdout.strip() == str(tmp_path / f"vnf-ipsec-gw-{version}.zip")


def test_not_a_vnfd_entry_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"no entry\.yaml"):
        build(tmp_path, tmp_path / "out")
    proc = nfvcat("package", str(tmp_path), "-o", str(tmp_path / "out"))
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith("nfvcat: error:") and "Traceback" not in proc.stderr


# BaseHOT comes from the catalog: one source for the HOT templates, the packages and the lifecycle tool.

CATALOG = {  # vnfd entry -> (catalog HOT template, the hook it get_file's, the VDU)
    "vnf-vrouter": ("templates/heat/vnf-vrouter/vrouter.yaml", "hooks/vrouter/user-data.yaml", "VDU_VROUTER"),
    "vnf-ipsec-gw": ("templates/heat/vnf-ipsec-gw/ipsec-gw.yaml", "hooks/ipsec-gw/user-data.yaml", "VDU_IPSEC"),
}
RENAMED = {  # catalog resource -> VNFD node, per entry (what Tacker's v2 LCM reports resources by)
    "vnf-vrouter": {"server": "VDU_VROUTER", "mgmt_port": "CP_MGMT", "left_port": "CP_WAN", "right_port": "CP_LAN"},
    "vnf-ipsec-gw": {"server": "VDU_IPSEC", "mgmt_port": "CP_MGMT", "wan_port": "CP_UNTRUST", "lan_port": "CP_TRUST"},
}


def _named_back(node: Any, names: dict[str, str]) -> Any:
    """A nested template's references renamed back to the catalog's names (an independent walk)."""
    back = {v: k for k, v in names.items()}
    text = json.dumps(node, default=str)
    for new, old in back.items():
        text = text.replace(f'"{new}"', f'"{old}"')
    return json.loads(text)


@pytest.mark.parametrize("entry", ENTRIES)
def test_packaged_nested_template_is_the_catalog_template_with_vnfd_names(entry: str, tmp_path: Path) -> None:
    template, hook, vdu = CATALOG[entry]
    nested = f"BaseHOT/default/nested/{Path(template).name}"
    with zipfile.ZipFile(build(ROOT / "vnfd" / entry, tmp_path)) as zf:
        got = yaml.safe_load(zf.read(nested))
        catalog = yaml.safe_load((ROOT / template).read_bytes())
        # renamed back, it is the catalog template as data: nothing but the names changed
        assert _named_back(got, RENAMED[entry]) == json.loads(json.dumps(catalog, default=str))
        # Tacker's v2 LCM: the server is a resource named after the VDU, each VduCp a port it uses
        assert got["resources"][vdu]["type"] == "OS::Nova::Server"
        ports = [n["port"]["get_resource"] for n in got["resources"][vdu]["properties"]["networks"]]
        assert sorted(ports) == sorted(v for v in RENAMED[entry].values() if v.startswith("CP_"))
        assert all(got["resources"][p]["type"] == "OS::Neutron::Port" for p in ports)
        assert "server" not in got["resources"]
        assert zf.read(hook) == (ROOT / hook).read_bytes()
        ref = basehot_gen.walk(yaml.safe_load(zf.read(nested)), "get_file")
        # the nested template's get_file, seen from nested/, is the hook's member: no path was rewritten
        assert [os.path.normpath(os.path.join(os.path.dirname(nested), r)) for r in ref] == [hook]
        assert not any(n.startswith("BaseHOT/") and n not in (nested, f"BaseHOT/default/{entry}.yaml")
                       for n in zf.namelist())
    assert not (ROOT / "vnfd" / entry / "BaseHOT").exists(), "BaseHOT/ is generated, not kept in the entry"


@pytest.mark.parametrize("entry", ENTRIES)
def test_top_template_maps_nfv_onto_the_catalog_parameters(entry: str, tmp_path: Path) -> None:
    template, _, vdu = CATALOG[entry]
    catalog = yaml.safe_load((ROOT / template).read_text())
    with zipfile.ZipFile(build(ROOT / "vnfd" / entry, tmp_path)) as zf:
        top = yaml.safe_load(zf.read(f"BaseHOT/default/{entry}.yaml"))
    assert top["parameters"]["nfv"]["type"] == "json"
    for name, schema in top["parameters"].items():
        assert name == "nfv" or schema == catalog["parameters"][name], name  # copied, not restated
    group = top["resources"].get(f"{vdu}_scale_group")  # a VDU its VNFD scales: in Tacker's scaling group
    res = group["properties"]["resource"] if group else top["resources"][vdu]
    assert res["type"] == Path(template).name  # Tacker puts nested/*.yaml in Heat's files by file name
    props = res["properties"]
    assert set(props) <= set(catalog["parameters"])
    assert {n for n, p in catalog["parameters"].items() if "default" not in p} <= set(props)
    assert props["image"] == {"get_param": ["nfv", "VDU", vdu, "image"]}
    assert props["flavor"] == {"get_resource": f"{vdu}_flavor"}
    assert props["data_plane"] == "sriov" and props["use_config_drive"] is True
    assert props["mgmt_network"] == {"get_resource": "VL_MGMT"}
    cps = sorted(p["get_param"][2] for p in props.values() if isinstance(p, dict)
                 and p.get("get_param", [None])[:2] == ["nfv", "CP"])
    assert len(cps) == 2 and all(cp.startswith("CP_") for cp in cps)
    flavor = top["resources"][f"{vdu}_flavor"]["properties"]
    assert (flavor["vcpus"], flavor["ram"], flavor["disk"]) == (4, 8192, 10)
    assert flavor["extra_specs"]["hw:cpu_policy"] == "dedicated"
    assert top["resources"]["VL_MGMT_subnet"]["properties"]["cidr"].endswith("/24")
    assert set(top["outputs"]) == set(catalog["outputs"])
    path = [f"{vdu}_scale_group", "outputs_list"] if group else [vdu]
    assert all(o["value"] == {"get_attr": [*path, n]} for n, o in top["outputs"].items())


def test_built_packages_and_their_extracted_basehot_validate_clean(tmp_path: Path) -> None:
    """The CSARs (tosca-parser, tacker's load_csar_data), and the top template with its nested catalog
    template and hook as Heat gets them from Tacker: the nested template under its file name next to
    the top template, the hook where the nested template's get_file points."""
    paths = []
    for entry in ENTRIES:
        built = build(ROOT / "vnfd" / entry, tmp_path / "dist")
        paths.append(str(built))
        out = tmp_path / entry
        with zipfile.ZipFile(built) as zf:
            zf.extractall(out)
        nested = out / "BaseHOT" / "default" / "nested"
        shutil.copy(out / "BaseHOT" / "default" / f"{entry}.yaml", nested / f"{entry}.yaml")
        paths += [str(nested / f"{entry}.yaml"), str(nested / Path(CATALOG[entry][0]).name)]
    # outside the project, the hook lies above the nested template's directory: the root is widened, as a user would
    code, findings = findings_of("--no-cache", "--allow-root", str(tmp_path), *paths)
    assert (code, findings) == (0, [])


SHARED_USER_DATA = ROOT / "tools" / "nfvcat" / "data" / "tacker"


def test_lcm_user_data_is_one_file_for_every_entry(tmp_path: Path) -> None:
    for e in ENTRIES:
        with zipfile.ZipFile(build(ROOT / "vnfd" / e, tmp_path)) as zf:
            assert zf.read("UserData/lcm_user_data.py") == (SHARED_USER_DATA / "UserData" /
                                                            "lcm_user_data.py").read_bytes()


def _user_data(entry: str) -> Any:
    sys.path.insert(0, str(SHARED_USER_DATA))
    try:
        sys.modules.pop("UserData.lcm_user_data", None)
        sys.modules.pop("UserData", None)
        from UserData import lcm_user_data  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(SHARED_USER_DATA))
    return lcm_user_data


def test_lcm_user_data_fills_the_nfv_keys_of_the_generated_top_template(tmp_path: Path) -> None:
    pytest.importorskip("tacker")
    entry = "vnf-vrouter"
    built = build(ROOT / "vnfd" / entry, tmp_path)
    csar = tmp_path / "csar"
    with zipfile.ZipFile(built) as zf:
        zf.extractall(csar)
    top = yaml.safe_load((csar / "BaseHOT/default/vnf-vrouter.yaml").read_text())
    nested = yaml.safe_load((csar / "BaseHOT/default/nested/vrouter.yaml").read_text())
    vnfd = yaml.safe_load((csar / "Definitions/vnf-vrouter_df_default.yaml").read_text())
    ud = _user_data(entry)
    expected_nfv = {"VDU": {"VDU_VROUTER": {"image": "nfvcat-vrouter-1.1.2", "desired_capacity": 1}},
                    "CP": {"CP_WAN": {"network": "net-wan"}, "CP_LAN": {"network": "net-lan"}}}

    ns = types.SimpleNamespace
    req = ns(ext_virtual_links=[ns(resource_id="net-wan", ext_cps=[ns(cpd_id="CP_WAN")]),
                                ns(resource_id="net-lan", ext_cps=[ns(cpd_id="CP_LAN")])],
             additional_params={"enable_frr": True, "lcm-operation-user-data": "./UserData/lcm_user_data.py"})
    with pytest.raises(ValueError, match=r"need Tacker's v2 VNF LCM API"):  # v1 cannot carry the hook: refused
        ud.VnfUserData.instantiate({"heat_template": top, "vrouter.yaml": nested}, vnfd, req, {})

    cp = {"x": {"cpProtocolData": [{"layerProtocol": "IP_OVER_ETHERNET"}]}}
    req2 = {"flavourId": "default", "additionalParams": {"enable_frr": True},
            "extVirtualLinks": [{"id": "a", "resourceId": "net-wan", "extCps": [{"cpdId": "CP_WAN", "cpConfig": cp}]},
                                {"id": "b", "resourceId": "net-lan", "extCps": [{"cpdId": "CP_LAN", "cpConfig": cp}]}]}
    one = {"type": "COMPUTE", "resourceTemplateId": "VDU_VROUTER"}  # the grant request of instantiation level 1
    v2 = ud.VnfUserDataV2.instantiate(req2, {"vnfdId": "x"}, {"addResources": [one]}, {}, str(csar))
    assert v2["parameters"] == {"nfv": expected_nfv, "enable_frr": True}
    # a scale out by one step: the scaling group's desired capacity, the rest of nfv kept by Tacker's merge
    inst = {"vnfdId": "x", "instantiatedVnfInfo": {"flavourId": "default", "vnfcResourceInfo": [
        {"vduId": "VDU_VROUTER"}]}}
    out = ud.VnfUserDataV2.scale({}, inst, {"addResources": [one]}, {}, str(csar))
    assert out == {"parameters": {"nfv": {"VDU": {"VDU_VROUTER": {"desired_capacity": 2}}}}}
    hook = "../../../hooks/vrouter/user-data.yaml"
    assert sorted(v2["files"]) == [hook, "vrouter.yaml"]
    assert v2["files"][hook] == (ROOT / "hooks/vrouter/user-data.yaml").read_text()


def _copy_entry(tmp_path: Path, entry: str = "vnf-vrouter") -> Path:
    """The entry and the catalog files it refers to, in a scratch catalog."""
    for rel in (f"vnfd/{entry}", "templates/heat/vnf-vrouter", "hooks/vrouter"):
        shutil.copytree(ROOT / rel, tmp_path / rel, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path / "vnfd" / entry


def test_basehot_errors_are_one_line_user_errors(tmp_path: Path) -> None:
    entry = _copy_entry(tmp_path)
    mapping = entry / "basehot.yaml"
    good = mapping.read_text()

    mapping.write_text(good.replace("  data_plane: sriov", "  data_plane: sriov\n  no_such_param: 1"))
    with pytest.raises(UserError, match=r"not parameters of vrouter\.yaml: no_such_param"):
        build(entry, tmp_path / "out")

    mapping.write_text(good.replace("  mgmt_network: {get_resource: VL_MGMT}\n", ""))
    with pytest.raises(UserError, match=r"vrouter\.yaml needs a value for mgmt_network"):
        build(entry, tmp_path / "out")

    mapping.write_text(good)
    (entry / "BaseHOT" / "default").mkdir(parents=True)
    (entry / "BaseHOT" / "default" / "old.yaml").write_text("heat_template_version: 2021-04-16\n")
    with pytest.raises(UserError, match=r"BaseHOT/ is generated"):
        build(entry, tmp_path / "out")
    shutil.rmtree(entry / "BaseHOT")

    template = tmp_path / "templates/heat/vnf-vrouter/vrouter.yaml"
    catalog_text = template.read_text()
    template.write_text(catalog_text.replace("../../../hooks/vrouter", "../../../../../hooks/vrouter"))
    with pytest.raises(UserError, match=r"would lie outside the package"):
        build(entry, tmp_path / "out")
    template.write_text(catalog_text)


@pytest.mark.parametrize(("old", "new", "error"), [
    ("  right_port: CP_LAN\n", "", r"no port is the VduCp CP_LAN"),
    ("  server: VDU_VROUTER\n", "", r"no server is the VDU VDU_VROUTER"),
    ("  left_port: CP_WAN\n", "  left_port: CP_WAN\n  no_port: CP_X\n", r"no_port is not a resource of vrouter"),
    ("  mgmt_port: CP_MGMT\n", "  mgmt_port: VL_MGMT\n", r"VL_MGMT is not a VDU or VduCp"),
    ("  mgmt_port: CP_MGMT\n", "  mgmt_port: VDU_VROUTER\n", r"mgmt_port is a OS::Neutron::Port, VDU_VROUTER needs"),
    ("  name: vrouter\n", "  name: router-1\n", r"name must be 'vrouter', the name of the VDU VDU_VROUTER"),
    ("resources:\n", "resources: []\nx:\n", r"'resources' must map catalog resource names"),
    # only a release's mapping may lack resources
    ("resources:\n", "resources_gone:\n", r"'resources' must map catalog resource names"),
])
def test_basehot_maps_every_vnfd_node_it_reports(tmp_path: Path, old: str, new: str, error: str) -> None:
    entry = _copy_entry(tmp_path)
    mapping = entry / "basehot.yaml"
    assert old in mapping.read_text()
    mapping.write_text(mapping.read_text().replace(old, new, 1))
    with pytest.raises(UserError, match=error):
        build(entry, tmp_path / "out")


def test_a_virtual_storage_the_basehot_does_not_create_is_an_error(tmp_path: Path) -> None:
    entry = _copy_entry(tmp_path)
    df = entry / "Definitions" / "vnf-vrouter_df_default.yaml"
    df.write_text(df.read_text().replace("\n    CP_MGMT:\n", "\n    VB_VROUTER:\n      type: tosca.nodes.nfv.Vdu."
                                         "VirtualBlockStorage\n      properties:\n        virtual_block_storage_data:"
                                         "\n          size_of_storage: 10 GiB\n\n    CP_MGMT:\n", 1))
    with pytest.raises(UserError, match=r"VB_VROUTER: a virtual storage the BaseHOT does not create"):
        build(entry, tmp_path / "out")


def test_basehot_follows_the_catalog(tmp_path: Path) -> None:
    """A change to the catalog template or the hook is in the next package, byte for byte."""
    entry = _copy_entry(tmp_path)
    hook = tmp_path / "hooks/vrouter/user-data.yaml"
    hook.write_bytes(hook.read_bytes() + b"# changed\n")
    with zipfile.ZipFile(build(entry, tmp_path / "out")) as zf:
        assert zf.read("hooks/vrouter/user-data.yaml") == hook.read_bytes()
        assert hashlib.sha256(hook.read_bytes()).hexdigest() in zf.read("vnf-vrouter.mf").decode()
