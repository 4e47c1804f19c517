"""``nfvcat package --with-image``: the image goes into Files/images/, hashed in the manifest, with a SwImage
artifact on the node whose sw_image_data names it; a file that is not the locked image is refused.

The catalog is a copy with a stand-in build: a small file put in a private image cache, and the copy's lock
made to hold that file's sha256 (computed here), so no real image build is needed."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests_mock
import yaml

from nfvcat.catalog import releases
from nfvcat.core.errors import EXIT_FINDINGS, UserError
from nfvcat.packaging.csar import build as package
from nfvcat.packaging.images import build, recipe, refs
from tests.conftest import ROOT
from tests.debmirror import serve_index

STAND_IN = b"QFI\xfb stand-in for the vrouter image\n"
VERSION = recipe.load("vrouter", ROOT).version  # the image entry's version (the file name in the package)


@pytest.fixture()
def cat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    with requests_mock.Mocker() as m:  # Debian's mirror serves the stand-in lock (release checks it)
        serve_index(m, {"stand-in": "1"}, monkeypatch)
        yield _stand_in(tmp_path, monkeypatch)


def _stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "catalog"
    for d in ("vnfd/vnf-vrouter", "templates/heat/vnf-vrouter", "hooks/vrouter", "images/vrouter"):
        shutil.copytree(ROOT / d, root / d)
    (root / "flavors").mkdir()
    monkeypatch.setenv("NFVCAT_CATALOG_DIR", str(root))
    monkeypatch.setenv("NFVCAT_IMAGE_CACHE", str(tmp_path / "cache"))
    r = recipe.load("vrouter", root)
    lock = recipe.Lock(r.name, r.version, r.digest(), {"stand-in": "1"}, hashlib.sha256(STAND_IN).hexdigest(),
                       len(STAND_IN))
    recipe.write_lock(r, lock)
    d = build.cache_dir() / build.cache_key(r, lock)
    d.mkdir(parents=True)
    (d / "disk.qcow2").write_bytes(STAND_IN)
    (d / "lock.json").write_text(json.dumps(lock.as_dict()))
    refs.sync(root, write=True)  # the VNFD's sw_image_data gets the stand-in's sha256
    return root


def test_with_image(cat: Path, tmp_path: Path) -> None:
    path = package(cat / "vnfd" / "vnf-vrouter", tmp_path / "out", with_image=True)
    with zipfile.ZipFile(path) as zf:
        member = f"Files/images/vrouter-{VERSION}.qcow2"
        assert zf.read(member) == STAND_IN and zf.getinfo(member).compress_type == zipfile.ZIP_STORED
        manifest = zf.read("vnf-vrouter.mf").decode()
        df = yaml.safe_load(zf.read("Definitions/vnf-vrouter_df_default.yaml"))
    assert re.search(rf"Source: {member}\nAlgorithm: SHA-256\nHash: {hashlib.sha256(STAND_IN).hexdigest()}", manifest)
    node = df["topology_template"]["node_templates"]["VDU_VROUTER"]
    assert node["artifacts"] == {"sw_image": {"type": "tosca.artifacts.nfv.SwImage",
                                              "file": f"../Files/images/vrouter-{VERSION}.qcow2"}}
    assert node["properties"]["sw_image_data"]["checksum"]["hash"] == hashlib.sha256(STAND_IN).hexdigest()
    without = package(cat / "vnfd" / "vnf-vrouter", tmp_path / "plain")
    with zipfile.ZipFile(without) as zf:
        assert not [n for n in zf.namelist() if n.startswith("Files/images/")]


def test_a_tampered_build_is_not_packaged(cat: Path, tmp_path: Path) -> None:
    r = recipe.load("vrouter", cat)
    hit = build.cached(r)
    assert hit is not None
    hit.disk.write_bytes(STAND_IN + b"tampered")
    with pytest.raises(UserError, match="not packaged") as err:
        package(cat / "vnfd" / "vnf-vrouter", tmp_path / "out", with_image=True)
    assert err.value.exit_code == EXIT_FINDINGS
    assert not (tmp_path / "out" / "vnf-vrouter-1.2.0.zip").exists()


def test_an_unbuilt_image_is_an_error(cat: Path, tmp_path: Path) -> None:
    shutil.rmtree(build.cache_dir())
    with pytest.raises(UserError,
                       match=rf"images/vrouter {VERSION} is not built here: run `nfvcat image build vrouter`"):
        package(cat / "vnfd" / "vnf-vrouter", tmp_path / "out", with_image=True)


def _release_date(path: Path) -> str:
    with zipfile.ZipFile(path) as zf:
        manifest = zf.read("vnf-vrouter.mf").decode()
    return re.search(r"^vnf_release_date_time: (\S+)$", manifest, re.M).group(1)  # type: ignore[union-attr]


def test_the_release_date_is_the_records_else_a_dated_heading_else_an_error(cat: Path, tmp_path: Path) -> None:
    entry = cat / "vnfd" / "vnf-vrouter"
    version = yaml.safe_load((entry / "entry.yaml").read_text())["version"]
    changelog = entry / "CHANGELOG.md"
    assert re.search(rf"^## {re.escape(version)} - (\d{{4}}-\d\d-\d\d)$", changelog.read_text(), re.M)
    heading = re.search(rf"^## {re.escape(version)} - (\S+)$", changelog.read_text(), re.M).group(1)  # type: ignore
    assert _release_date(package(entry, tmp_path / "a")) == f"{heading}T00:00:00+00:00"  # no record here
    releases.write_record(cat, releases.snapshot(cat), "2027-03-04")  # the record now holds this version
    assert _release_date(package(entry, tmp_path / "b")) == "2027-03-04T00:00:00+00:00"
    (cat / "RELEASES.yaml").unlink()
    changelog.write_text(changelog.read_text().replace(f"## {version} - {heading}\n", f"## {version}\n"))
    assert _release_date(package(entry, tmp_path / "c", releasing="2028-05-06")) == "2028-05-06T00:00:00+00:00"
    v = re.escape(version)
    with pytest.raises(UserError, match=rf"no release date for version {v}: it is not in the release record .* and "
                                        rf"CHANGELOG.md has no dated heading '## {v} - YYYY-MM-DD'"):
        package(entry, tmp_path / "d")
    assert not (tmp_path / "d").exists() or not list((tmp_path / "d").iterdir())
