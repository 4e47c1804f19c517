"""``nfvcat release -o DIR``: images (from the cache of their locks here: a stand-in build), a CycloneDX SBOM
per image made from its lock, every VNF package (signed with a throwaway CA's certificate) and SHA256SUMS."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import yaml

from nfvcat.cli import main
from nfvcat.core.errors import EXIT_OK
from nfvcat.packaging import release_artifacts
from nfvcat.packaging.images import recipe
from tests.conftest import ROOT
from tests.unit.test_package_images import STAND_IN, cat  # noqa: F401 (the stand-in catalog fixture)
from tests.unit.test_signing import MAKE


def test_sbom_from_the_committed_lock() -> None:
    r = recipe.load("vrouter", ROOT)
    lock = recipe.read_lock(r)
    assert lock is not None
    doc = release_artifacts.sbom(r, lock)
    assert doc == release_artifacts.sbom(r, lock)  # no serial number, no timestamp: one lock, one SBOM
    data = json.loads(doc)
    assert data["bomFormat"] == "CycloneDX" and data["specVersion"] == "1.6"
    assert data["metadata"]["component"]["hashes"] == [{"alg": "SHA-256", "content": lock.sha256}]
    purls = {c["purl"] for c in data["components"]}
    assert len(purls) == len(lock.packages)
    assert f"pkg:deb/debian/frr@{lock.packages['frr']}?arch=amd64&distro=debian-bookworm" in purls


def test_release_writes_the_artefacts(cat: Path, tmp_path: Path) -> None:  # noqa: F811
    (tmp_path / "ca").mkdir()
    _ca, key, cert = MAKE["throwaway_ca"](tmp_path / "ca")
    out = tmp_path / "dist"
    assert main(["release", "--root", str(cat), "--no-tag", "-o", str(out), "--sign-key", str(key),
                 "--sign-cert", str(cert)]) == EXIT_OK
    names = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    v = recipe.load("vrouter", cat).version
    version = yaml.safe_load((cat / "vnfd" / "vnf-vrouter" / "entry.yaml").read_text())["version"]
    assert names == ["SHA256SUMS", f"images/vrouter-{v}.cdx.json", f"images/vrouter-{v}.qcow2",
                     f"packages/vnf-vrouter-{version}.zip"]
    assert (out / "images" / f"vrouter-{v}.qcow2").read_bytes() == STAND_IN
    check = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=out, capture_output=True, text=True)
    assert check.returncode == 0 and check.stdout.count(": OK") == 3, check.stdout + check.stderr
    assert (cat / "RELEASES.yaml").is_file()
