"""The tosca engine as the runner uses it: a worker process, JSON jobs in, JSON results out.

One worker run serves every job of this module (tosca-parser and tacker start once).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from nfvcat.packaging.csar import build
from tests.conftest import ROOT

VROUTER = ROOT / "vnfd" / "vnf-vrouter"
DF = VROUTER / "Definitions" / "vnf-vrouter_df_default.yaml"
TOP = VROUTER / "Definitions" / "vnf-vrouter_top.vnfd.yaml"
FIXTURES = ROOT / "tests" / "fixtures" / "rules"


def _rewrite(src: Path, dst: Path, member: str, old: bytes, new: bytes) -> Path:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename == member:
                assert old in data
                data = data.replace(old, new, 1)
            zout.writestr(info, data)
    return dst


SOL001_URL = "https://forge.etsi.org/rep/nfv/SOL001/raw/v2.6.1/"
GENERIC_META = (b"TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-By: test\n"
                b"Entry-Definitions: Definitions/service.yaml\n")
GENERIC = """tosca_definitions_version: tosca_simple_yaml_1_3
topology_template:
  node_templates:
    server:
      type: tosca.nodes.Compute
      capabilities:
        host:
          properties:
            num_cpus: 2
            mem_size: 2 GB
"""


def _with_url_imports(src: Path, dst: Path) -> Path:
    """The package with its SOL001 type files imported by URL instead of shipped, manifest rehashed."""
    sol001 = ("etsi_nfv_sol001_common_types.yaml", "etsi_nfv_sol001_vnfd_types.yaml")
    members: dict[str, bytes] = {}
    with zipfile.ZipFile(src) as zin:
        for info in zin.infolist():
            data = zin.read(info)
            if os.path.basename(info.filename) in sol001:
                continue
            for name in sol001:
                data = data.replace(f"  - {name}".encode(), f"  - {SOL001_URL}{name}".encode())
            members[info.filename] = data
    blocks = members["vnf-vrouter.mf"].decode().split("\n\n")
    kept = [blocks[0]]
    for block in blocks[1:]:
        source = block.split("\n", 1)[0].removeprefix("Source: ").strip()
        if source in members:
            digest = hashlib.sha256(members[source]).hexdigest()
            kept.append("\n".join(f"Hash: {digest}" if ln.startswith("Hash:") else ln for ln in block.split("\n")))
    members["vnf-vrouter.mf"] = "\n\n".join(kept).encode()
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for name, data in members.items():
            zout.writestr(name, data)
    return dst


def _generic_csar(dst: Path, template: str) -> Path:
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        zout.writestr("TOSCA-Metadata/TOSCA.meta", GENERIC_META)
        zout.writestr("Definitions/service.yaml", template)
    return dst


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("tosca")
    good_csar = build(VROUTER, tmp / "out")
    ipsec_csar = build(ROOT / "vnfd" / "vnf-ipsec-gw", tmp / "out")
    with zipfile.ZipFile(good_csar) as zf:
        manifest = zf.read("vnf-vrouter.mf")
    digest = manifest.split(b"Hash: ", 1)[1][:64]
    bad_hash = _rewrite(good_csar, tmp / "bad-hash.zip", "vnf-vrouter.mf", digest, digest[::-1])
    bad_meta = _rewrite(good_csar, tmp / "bad-meta.zip", "TOSCA-Metadata/TOSCA.meta",
                        b"Entry-Definitions: Definitions/vnf-vrouter_top.vnfd.yaml",
                        b"Entry-Definitions: Definitions/absent.yaml")
    broken_vdu = _rewrite(good_csar, tmp / "broken-vdu.zip", "Definitions/vnf-vrouter_df_default.yaml",
                          b"num_virtual_cpu: 4", b"num_virtual_cpu: 4\n              cores: 4")
    broken = tmp / "Definitions"
    broken.mkdir()
    for f in (VROUTER / "Definitions").iterdir():
        (broken / f.name).write_bytes(f.read_bytes())
    bad_df = broken / "vnf-vrouter_df_default.yaml"
    text = bad_df.read_text()
    disk = "              - size_of_storage: 10 GiB\n"  # the VDU's local disk, its last line
    assert disk in text
    bad_df.write_text(text.replace(disk, disk + "      requirements:\n        - virtual_storage: VB_GONE\n", 1))
    jobs = {
        "top": {"file": str(TOP), "kind": "vnfd"},
        "df": {"file": str(DF), "kind": "vnfd"},
        "broken_df": {"file": str(bad_df), "kind": "vnfd"},
        "broken_top": {"file": str(broken / TOP.name), "kind": "vnfd"},
        "e4001_fail": {"file": str(FIXTURES / "E4001" / "fail.yaml"), "kind": "vnfd"},
        "csar": {"file": str(good_csar), "kind": "csar"},
        "ipsec_csar": {"file": str(ipsec_csar), "kind": "csar"},
        "bad_hash": {"file": str(bad_hash), "kind": "csar"},
        "bad_meta": {"file": str(bad_meta), "kind": "csar"},
        "broken_vdu": {"file": str(broken_vdu), "kind": "csar"},
        "url_imports": {"file": str(_with_url_imports(good_csar, tmp / "url-imports.zip")), "kind": "csar"},
        "generic": {"file": str(_generic_csar(tmp / "generic.zip", GENERIC)), "kind": "csar"},
        "generic_bad": {"file": str(_generic_csar(tmp / "generic-bad.zip", GENERIC.replace(
            "num_cpus: 2", "num_cpus: 2\n            cores: 4"))), "kind": "csar"},
        "csar_v3": {"file": str(_generic_csar(tmp / "v3.zip", GENERIC.replace(
            "topology_template:", f"imports:\n  - {SOL001_URL.replace('v2.6.1', 'v3.3.1')}"
            "etsi_nfv_sol001_common_types.yaml\ntopology_template:"))), "kind": "csar"},
    }
    v3 = tmp / "v3.yaml"
    v3.write_text((FIXTURES / "E4001" / "pass.yaml").read_text().replace("/raw/v2.6.1/", "/raw/v3.3.1/"))
    jobs["sol001_v3"] = {"file": str(v3), "kind": "vnfd"}
    scratch = tmp / "scratch"
    scratch.mkdir()
    proc = subprocess.run([sys.executable, "-m", "nfvcat.validation.engines.tosca"],
                          input=json.dumps({"jobs": list(jobs.values())}) + "\n", capture_output=True, text=True,
                          timeout=300, cwd=ROOT,
                          env={**os.environ, "TMPDIR": str(scratch)})
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)["results"]
    return {"results": dict(zip(jobs, results, strict=True)), "scratch": scratch}


def _ids(result: dict[str, Any]) -> list[str]:
    return [f["id"] for f in result["findings"]]


def test_catalog_vnfd_is_clean(run: dict[str, Any]) -> None:
    for name in ("top", "df", "csar", "ipsec_csar"):
        assert run["results"][name]["findings"] == [], name


def test_deps_are_the_files_read(run: dict[str, Any]) -> None:
    deps = set(run["results"]["top"]["deps"])
    assert {str(TOP), str(DF), str(VROUTER / "Definitions" / "vnf-vrouter_types.yaml")} <= deps
    assert not any("etsi_nfv_sol001" in d for d in deps)  # the installed tacker's, not the user's


def test_broken_vnfd_names_the_node_template(run: dict[str, Any]) -> None:
    result = run["results"]["broken_df"]
    assert _ids(result) == ["E4001"]
    finding = result["findings"][0]
    assert finding["path"][:3] == ["topology_template", "node_templates", "VDU_VROUTER"]
    assert "VB_GONE" in finding["message"]


def test_error_in_an_imported_file_points_at_that_file(run: dict[str, Any]) -> None:
    result = run["results"]["broken_top"]
    assert "E4001" in _ids(result)
    finding = next(f for f in result["findings"] if "VB_GONE" in f["message"])
    assert finding["file"].endswith("vnf-vrouter_df_default.yaml")
    assert finding["path"][2] == "VDU_VROUTER"


def test_fixture_findings_have_paths(run: dict[str, Any]) -> None:
    paths = [f["path"] for f in run["results"]["e4001_fail"]["findings"]]
    assert ["topology_template", "node_templates", "VDU1", "properties", "boot_order"] in paths
    assert ["topology_template", "node_templates", "CP1", "requirements", 0, "virtual_binding"] in paths


def test_wrong_artifact_hash_is_e4003_on_the_manifest_line(run: dict[str, Any]) -> None:
    [finding] = run["results"]["bad_hash"]["findings"]
    assert finding["id"] == "E4003" and finding["engine"] == "tacker"
    assert finding["file"].endswith("bad-hash.zip!/vnf-vrouter.mf")
    assert finding["line"] > 1 and "hash" in finding["message"]


def test_missing_entry_definitions_is_e4002(run: dict[str, Any]) -> None:
    [finding] = run["results"]["bad_meta"]["findings"]
    assert finding["id"] == "E4002"
    assert finding["file"].endswith("bad-meta.zip!/TOSCA-Metadata/TOSCA.meta")
    assert "nfvcat-tosca-" not in finding["message"]


def test_csar_template_error_is_e4001_with_a_line(run: dict[str, Any]) -> None:
    [finding] = run["results"]["broken_vdu"]["findings"]
    assert finding["id"] == "E4001"
    assert finding["file"].endswith("broken-vdu.zip!/Definitions/vnf-vrouter_df_default.yaml")
    lines = DF.read_text().splitlines()
    assert "num_virtual_cpu" in lines[finding["line"] - 2]  # the inserted line follows it


def test_sol001_v3_is_not_validated_against_v2_types(run: dict[str, Any]) -> None:
    [finding] = run["results"]["sol001_v3"]["findings"]
    assert finding["id"] == "E0009" and "v3.3.1" in finding["message"]  # unknown, not invalid: exit 3


def test_csar_importing_sol001_by_url_resolves_them_as_a_vnfd_does(run: dict[str, Any]) -> None:
    assert run["results"]["url_imports"]["findings"] == []


def test_generic_tosca_csar_gets_tosca_parsers_verdict_not_tackers(run: dict[str, Any]) -> None:
    assert run["results"]["generic"]["findings"] == []
    [finding] = run["results"]["generic_bad"]["findings"]
    assert finding["id"] == "E4001" and "cores" in finding["message"]
    assert "tacker" in finding["message"] and "not a VNF package" in finding["message"]
    assert finding["file"].endswith("generic-bad.zip!/Definitions/service.yaml") and finding["line"] == 10


def test_csar_importing_an_unknown_url_is_not_validated_rather_than_invalid(run: dict[str, Any]) -> None:
    [finding] = run["results"]["csar_v3"]["findings"]
    assert finding["id"] == "E0009" and "v3.3.1" in finding["message"]


def test_no_temporary_files_left(run: dict[str, Any]) -> None:
    assert list(run["scratch"].iterdir()) == []


def test_worker_never_imports_heat_or_nova() -> None:
    code = ("import json, sys; from nfvcat.validation.engines import tosca; tosca.setup(); "
            f"tosca.check({{'file': {str(TOP)!r}, 'kind': 'vnfd'}}); "
            "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & {'heat', 'nova'})))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []


def test_an_unsaved_tosca_buffer_is_what_tosca_parser_reads(tmp_path: Path) -> None:
    """--stdin-filename (an editor's unsaved buffer) on a TOSCA template: tosca-parser reads the buffer in place
    of the file, its error at the buffer's line; the saved file, clean on disk, is not what is validated, and a
    clean buffer over a broken file is clean."""
    from tests.conftest import nfvcat

    fixtures = ROOT / "tests" / "fixtures" / "rules" / "E4001"
    saved = tmp_path / "vnfd.yaml"

    def validate(disk: Path, buffer: Path) -> tuple[int, list[dict[str, Any]]]:
        saved.write_text(disk.read_text())
        proc = nfvcat("validate", "--no-server", "--no-cache", "--format", "json", "--stdin-filename", str(saved),
                      stdin=buffer.read_text(), cwd=tmp_path)
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc.returncode, json.loads(proc.stdout)["findings"]

    on_disk = validate(fixtures / "fail.yaml", fixtures / "fail.yaml")
    code, found = validate(fixtures / "pass.yaml", fixtures / "fail.yaml")
    assert code == 2 and found and {f["id"] for f in found} == {"E4001"}, found
    assert [(f["line"], f["message"]) for f in found] == [(f["line"], f["message"]) for f in on_disk[1]]
    assert validate(fixtures / "fail.yaml", fixtures / "pass.yaml") == (0, [])
