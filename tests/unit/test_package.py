"""``nfvcat package``: the built CSARs against golden files, compared as parsed data.

Regenerate the golden files after an intended change with ``NFVCAT_UPDATE_GOLDEN=1 pytest <this file>``.
"""

from __future__ import annotations

import json
import os
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from nfvcat.commands.package import build
from nfvcat.errors import UserError
from tests.conftest import ROOT, nfvcat

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
    return {
        "name": path.name,
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
    import hashlib

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
    assert proc.stdout.strip() == str(tmp_path / "vnf-ipsec-gw-1.0.0.zip")


def test_not_a_vnfd_entry_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"no entry\.yaml"):
        build(tmp_path, tmp_path / "out")
    proc = nfvcat("package", str(tmp_path), "-o", str(tmp_path / "out"))
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith("nfvcat: error:") and "Traceback" not in proc.stderr
