"""`nfvcat image renew` on a catalog whose image lock Debian's mirror no longer serves (an HTTP-level fake mirror,
the builder's boundary faked as in test_onboard_images): the image and every entry referencing it are bumped,
the lock and checksums follow, the CHANGELOGs name the updated packages, and `nfvcat versions` passes."""

from __future__ import annotations

import hashlib
import lzma
import shutil
from pathlib import Path
from typing import Any

import pytest
import requests_mock

from nfvcat.catalog import releases, versions
from nfvcat.packaging.images import build, mirror, recipe, refs, renew
from tests.conftest import ROOT
from tests.unit.test_onboard_images import mirror_build

FIXTURE = ROOT / "tests" / "fixtures" / "rules" / "E0014" / "pass"
OLD, NEW = "1.5.2-6+deb12u2", "1.5.2-6+deb12u3"
INDEX = "http://deb.debian.org/debian/dists/bookworm/main/binary-amd64/Packages.xz"
CONTENT = b"the image Debian's mirror gives today"


@pytest.fixture()
def cat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "catalog"
    shutil.copytree(FIXTURE, root)
    (root / "flavors").mkdir()
    monkeypatch.setenv("NFVCAT_CATALOG_DIR", str(root))
    monkeypatch.setenv("NFVCAT_IMAGE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(mirror, "_SERVED", {})
    r = recipe.load("demo", root)
    lock = recipe.read_lock(r)
    assert lock is not None
    lock.recipe, lock.builder, lock.packages = r.digest(), build.BUILDER_VERSION, {"libpam0g": OLD}
    recipe.write_lock(r, lock)
    heat = root / "templates" / "heat" / "demo"
    (heat / "demo.yaml").write_text("parameters:\n  image:\n    type: string\n    default: demo-1.0.0\n")
    (heat / "README.md").write_text("# demo\n\nThe image is `demo-1.0.0`.\n")
    (heat / "CHANGELOG.md").write_text("# Changelog: demo\n\n## 1.0.0\n\n- First release.\n")
    (root / "images" / "demo" / "CHANGELOG.md").write_text("# Changelog: image demo\n\n## 1.0.0\n\n- First.\n")
    releases.write_record(root, releases.snapshot(root), "2026-11-23")
    return root


def _mirror_build(calls: list[str]) -> Any:
    """A build of what the fake mirror serves today (libpam0g at NEW); ``calls`` gets each build's version."""
    return mirror_build(CONTENT, calls, {"libpam0g": NEW}, record=lambda r: r.version)


def test_renew_bumps_the_image_and_its_references_and_the_version_gate_passes(
        cat: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(build, "build", _mirror_build(calls))
    heat = cat / "templates" / "heat" / "demo"
    with requests_mock.Mocker() as m:
        m.get(INDEX, content=lzma.compress(f"Package: libpam0g\nVersion: {NEW}\nArchitecture: amd64\n".encode()))
        done = renew.renew(cat, [], print)
        assert renew.renew(cat, [], print) == []  # renewed: the mirror serves the new lock
    assert calls == ["1.0.1"]
    assert [(d.image, d.old, d.new, d.sha256) for d in done] == [
        ("demo", "1.0.0", "1.0.1", hashlib.sha256(CONTENT).hexdigest())]
    assert done[0].updates == [f"libpam0g {OLD} -> {NEW} (point release, bookworm)"]
    assert done[0].entries == ["templates/heat/demo 1.0.0 -> 1.0.1"]
    r = recipe.load("demo", cat)
    lock = recipe.read_lock(r)
    assert r.version == "1.0.1" and lock is not None and lock.version == "1.0.1"
    assert lock.packages == {"libpam0g": NEW} and lock.sha256 == hashlib.sha256(CONTENT).hexdigest()
    assert build.cached(r) is not None  # the build renew made is the new lock's: onboarding builds nothing
    entry = (heat / "entry.yaml").read_text()
    assert "version: 1.0.1\n" in entry and "- name: demo-1.0.1\n    image: demo\n    version: 1.0.1\n" in entry
    assert lock.sha256 in entry
    assert "default: demo-1.0.1" in (heat / "demo.yaml").read_text()
    assert "`demo-1.0.1`" in (heat / "README.md").read_text()
    changelog = (heat / "CHANGELOG.md").read_text()
    assert changelog.index("## 1.0.1") < changelog.index("## 1.0.0")
    assert f"libpam0g {OLD} -> {NEW}" in " ".join(changelog.split())  # wrapped
    assert max(len(x) for x in changelog.splitlines()) <= 115
    image_log = (cat / "images" / "demo" / "CHANGELOG.md").read_text()
    assert image_log.startswith("# Changelog: image demo\n\n## 1.0.1\n\n- Renewed") and NEW in image_log
    assert f"libpam0g {OLD} -> {NEW}" in " ".join(image_log.split())
    assert refs.sync(cat, write=False) == []
    _, reports = versions.compare(str(cat))
    assert [rep.errors for rep in reports if rep.errors] == []
    assert {rep.entry: rep.version_new for rep in reports if rep.changed_files} == {
        "images/demo": "1.0.1", "templates/heat/demo": "1.0.1"}


def test_renew_without_drift_changes_nothing(cat: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(build, "build", _mirror_build([]))
    before = {p: p.read_bytes() for p in cat.rglob("*") if p.is_file()}
    with requests_mock.Mocker() as m:
        m.get(INDEX, content=lzma.compress(f"Package: libpam0g\nVersion: {OLD}\nArchitecture: amd64\n".encode()))
        assert renew.renew(cat, [], print) == []
    assert {p: p.read_bytes() for p in cat.rglob("*") if p.is_file()} == before


def test_a_changelog_line_goes_under_the_versions_heading_dated_or_not(tmp_path: Path) -> None:
    log = tmp_path / "CHANGELOG.md"
    log.write_text("# Changelog: x\n\nIntro.\n\n## 2.1.0 - 2026-11-25\n\n- Earlier.\n\n## 2.0.1\n\n- Old.\n")
    renew.add_changelog(log, "2.1.0", "Renewed.")
    assert log.read_text() == ("# Changelog: x\n\nIntro.\n\n## 2.1.0 - 2026-11-25\n\n- Renewed.\n- Earlier.\n\n"
                               "## 2.0.1\n\n- Old.\n")
    renew.add_changelog(log, "2.1.1", "Again.", "2026-11-28")
    assert log.read_text().startswith("# Changelog: x\n\nIntro.\n\n## 2.1.1 - 2026-11-28\n\n- Again.\n\n"
                                      "## 2.1.0 - 2026-11-25\n")
