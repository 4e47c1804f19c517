"""``nfvcat release -o DIR``: images (from the cache of their locks here: a stand-in build), a CycloneDX SBOM
per image made from its lock, every VNF package (signed with a throwaway CA's certificate) and SHA256SUMS."""

from __future__ import annotations

import hashlib
import json
import subprocess
import zipfile
from pathlib import Path

import pytest
import yaml

from nfvcat.cli import main
from nfvcat.core.errors import EXIT_FINDINGS, EXIT_OK
from nfvcat.packaging import release_artifacts
from nfvcat.packaging.images import build, recipe
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
    assert [n for n in names if not n.startswith("site/")] == [
        "SHA256SUMS", f"images/vrouter-{v}.cdx.json", f"images/vrouter-{v}.qcow2",
        f"packages/vnf-vrouter-{version}.zip"]
    site = [n for n in names if n.startswith("site/")]  # the catalog site beside the packages (issue #42)
    assert "site/index.html" in site and "site/flavors.html" in site and "site/entries/vnfd-vnf-vrouter.html" in site
    assert (out / "images" / f"vrouter-{v}.qcow2").read_bytes() == STAND_IN
    check = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=out, capture_output=True, text=True)
    assert check.returncode == 0 and check.stdout.count(": OK") == 3, check.stdout + check.stderr
    assert (cat / "RELEASES.yaml").is_file()
    released = yaml.safe_load((cat / "RELEASES.yaml").read_text())["entries"]["vnfd/vnf-vrouter"]["released"]
    with zipfile.ZipFile(out / "packages" / f"vnf-vrouter-{version}.zip") as zf:  # the package's date is the record's
        assert f"vnf_release_date_time: {released}T00:00:00+00:00\n" in zf.read("vnf-vrouter.mf").decode()


def test_release_with_a_substituted_image_fails_naming_the_file_and_both_checksums(
        cat: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    r = recipe.load("vrouter", cat)
    hit = build.cached(r)
    assert hit is not None
    substitute = b"QFI\xfb another file in the image cache\n"
    hit.disk.write_bytes(substitute)  # the cache's lock.json still names the lock's sha256
    out = tmp_path / "dist"
    assert main(["release", "--root", str(cat), "--no-tag", "-o", str(out)]) == EXIT_FINDINGS
    err = capsys.readouterr().err
    assert str(hit.disk) in err and f"vrouter-{r.version}.qcow2" in err
    assert hashlib.sha256(substitute).hexdigest() in err and hashlib.sha256(STAND_IN).hexdigest() in err
    assert not [p for p in out.rglob("*") if p.is_file()], "nothing shipped: no image, no SHA256SUMS"
    assert not (cat / "RELEASES.yaml").exists()


def test_sha256sums_lists_what_the_release_wrote_with_the_lock_sums(cat: Path, tmp_path: Path) -> None:  # noqa: F811
    out = tmp_path / "dist"
    (out / "images").mkdir(parents=True)
    (out / "images" / "notes.txt").write_text("left here by someone\n")
    assert main(["release", "--root", str(cat), "--no-tag", "-o", str(out)]) == EXIT_OK
    r = recipe.load("vrouter", cat)
    lock = recipe.read_lock(r)
    assert lock is not None
    lines = (out / "SHA256SUMS").read_text().splitlines()
    assert f"{lock.sha256}  images/vrouter-{r.version}.qcow2" in lines
    assert not [line for line in lines if "notes.txt" in line] and len(lines) == 3
