"""Image entries without building one: references and their generated checksums, rule E0014 on VNFDs, and the
lock decisions of a build (new, reproduced, not reproducible, changed under a released version)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
import requests_mock
import yaml

from nfvcat.cli import main
from nfvcat.core import documents
from nfvcat.core.errors import EXIT_FINDINGS, EXIT_OK, UserError
from nfvcat.packaging.images import build, mirror, recipe, refs
from nfvcat.validation.rules.base import Context
from nfvcat.validation.rules.parsing.e0014_image_checksum import ImageChecksum
from tests.conftest import ROOT
from tests.debmirror import serve_index

FIXTURE = ROOT / "tests" / "fixtures" / "rules" / "E0014" / "pass"
MOTD_SHA = hashlib.sha256((FIXTURE / "images" / "demo" / "files" / "motd").read_bytes()).hexdigest()

VNFD = """\
tosca_definitions_version: tosca_simple_yaml_1_3
imports: [etsi_nfv_sol001_common_types.yaml, etsi_nfv_sol001_vnfd_types.yaml]
topology_template:
  node_templates:
    VB:
      type: tosca.nodes.nfv.Vdu.VirtualBlockStorage
      properties:
        virtual_block_storage_data:
          size_of_storage: 4 GiB
        sw_image_data:
          name: demo-1.0.0
          version: '0.9.0'
          checksum:
            algorithm: sha-256
            hash: {hash}
          container_format: bare
          disk_format: qcow2
          min_disk: 4 GiB
          size: 2 GiB
"""


@pytest.fixture()
def cat(tmp_path: Path) -> Path:
    root = tmp_path / "catalog"
    shutil.copytree(FIXTURE, root)
    return root


def test_entry_checksum_is_generated_from_the_lock(cat: Path) -> None:
    entry = cat / "templates" / "heat" / "demo" / "entry.yaml"
    text = entry.read_text().split("    checksum:")[0]
    entry.write_text(text + "hooks: [x]\n")
    images = refs.image_entries(cat)
    new = refs.sync_entry_text(entry.read_text(), images)
    assert f"    checksum:  # generated from images/demo/image.lock by `nfvcat docs`\n      algorithm: sha256\n" \
        f"      value: {MOTD_SHA}\nhooks: [x]\n" in new
    assert refs.sync_entry_text(new, images) == new  # idempotent
    (cat / "images" / "demo" / "image.lock").unlink()  # never built: no checksum at all
    assert "checksum:" not in refs.sync_entry_text(new, refs.image_entries(cat))


def test_vnfd_sw_image_data_is_generated(cat: Path) -> None:
    info = refs.image_entries(cat)["demo"]
    new = refs.sync_vnfd_text(VNFD.format(hash="5f3c1a9e" * 8), {"demo-1.0.0": info})
    assert f"hash: {MOTD_SHA}\n" in new and "version: '1.0.0'\n" in new and f"size: {info.size} B\n" in new
    assert "size_of_storage: 4 GiB" in new  # only sw_image_data is touched


def test_vnfd_sw_image_data_naming_no_reference_is_an_error(cat: Path) -> None:
    info = refs.image_entries(cat)["demo"]
    text = VNFD.format(hash="5f3c1a9e" * 8)
    assert refs.unreferenced_vnfd_images(text, {"demo-1.0.0": info}) == []
    stale = text.replace("name: demo-1.0.0", "name: demo-0.9.0")  # the image bumped in entry.yaml only
    assert refs.unreferenced_vnfd_images(stale, {"demo-1.0.0": info}) == ["demo-0.9.0"]
    assert refs.sync_vnfd_text(stale, {"demo-1.0.0": info}) == stale  # nothing would ever regenerate it


def _e0014(path: Path) -> list[str]:
    doc = documents.read(str(path))
    return [f.message for f in ImageChecksum().check(doc, Context())]


def test_e0014_rejects_a_vnfd_checksum_no_image_has(cat: Path) -> None:
    df = cat / "vnfd" / "demo" / "Definitions" / "df.yaml"
    df.parent.mkdir(parents=True)
    (cat / "vnfd" / "demo" / "entry.yaml").write_text("name: demo\nversion: 1.0.0\nkind: vnfd\ndescription: d\n")
    df.write_text(VNFD.format(hash="5f3c1a9e" * 8))
    (msg,) = _e0014(df)
    assert msg.startswith("VB: sw_image_data checksum 5f3c1a9e5f3c1a9e") and "built: demo 1.0.0" in msg
    df.write_text(VNFD.format(hash="0" * 64))
    assert len(_e0014(df)) == 1
    df.write_text(VNFD.format(hash=MOTD_SHA))
    assert _e0014(df) == []
    (cat / "vnfd" / "demo" / "entry.yaml").unlink()  # no catalog entry's: the user's own image, well formed
    df.write_text(VNFD.format(hash="5f3c1a9e" * 8))
    assert _e0014(df) == []


@pytest.mark.parametrize(("ref", "expected"), [
    ("  - name: d\n    image: nope\n    version: 1.0.0\n", "no image entry images/nope (known: demo)"),
    ("  - name: d\n    image: demo\n    version: 2.0.0\n", "images/demo is at version 1.0.0, not 2.0.0"),
    ("  - name: d\n", "names no image entry"),
])
def test_e0014_reference_errors(cat: Path, ref: str, expected: str) -> None:
    entry = cat / "templates" / "heat" / "demo" / "entry.yaml"
    entry.write_text("name: demo\nversion: 1.0.0\nkind: heat\ndescription: d\nimages:\n" + ref)
    (msg,) = _e0014(entry)
    assert expected in msg


def test_e0014_checksum_of_an_unbuilt_image(cat: Path) -> None:
    (cat / "images" / "demo" / "image.lock").unlink()
    (msg,) = _e0014(cat / "templates" / "heat" / "demo" / "entry.yaml")
    assert "was never built" in msg


def test_docs_check_reports_checksum_drift(cat: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("NFVCAT_CATALOG_DIR", str(cat))
    (cat / "flavors").mkdir()
    entry = cat / "templates" / "heat" / "demo" / "entry.yaml"
    entry.write_text(entry.read_text().replace(MOTD_SHA, "ab" * 32))
    (cat / "templates" / "heat" / "demo" / "main.yaml").write_text(
        "heat_template_version: 2021-04-16\nresources: {}\n")
    entry.write_text(entry.read_text() + "template: main.yaml\n")
    assert main(["docs", "--check"]) == EXIT_FINDINGS
    assert "image checksums differ from what the image locks and entry versions give" in capsys.readouterr().out
    assert main(["docs"]) == EXIT_OK
    assert MOTD_SHA in entry.read_text()
    assert main(["docs", "--check"]) == EXIT_OK


# ---- lock decisions -------------------------------------------------------------------------------------------

def _built(r: recipe.Recipe, packages: dict[str, str], sha: str) -> build.Built:
    lock = recipe.Lock(r.name, r.version, r.digest(), packages, sha, 10, build.BUILDER_VERSION)
    return build.Built(r, Path("/nonexistent"), Path("/k"), Path("/i"), lock, 1.0, "new")


def test_lock_decisions(cat: Path) -> None:
    r = recipe.load("demo", cat)
    r.lock_path.unlink()
    first = build.reconcile(_built(r, {"a": "1"}, "a" * 64), None, cat)
    assert first.lock_status == "new" and recipe.read_lock(r) == first.lock
    again = build.reconcile(_built(r, {"a": "1"}, "a" * 64), recipe.read_lock(r), cat)
    assert again.lock_status == "reproduced"
    with pytest.raises(UserError, match="not reproducible") as err:
        build.reconcile(_built(r, {"a": "1"}, "b" * 64), recipe.read_lock(r), cat)
    assert err.value.exit_code == EXIT_FINDINGS and recipe.read_lock(r) == first.lock  # the lock is kept
    moved = build.reconcile(_built(r, {"a": "2", "b": "1"}, "c" * 64), recipe.read_lock(r), cat)
    assert moved.lock_status == "updated" and moved.changes == ["a 1 -> 2", "b (none) -> 1"]
    older = recipe.read_lock(r)
    assert older is not None
    older.builder = "0"  # a lock an older builder wrote: other bytes are expected, the lock is renewed
    renewed = build.reconcile(_built(r, {"a": "2", "b": "1"}, "d" * 64), older, cat)
    assert renewed.lock_status == "updated" and renewed.changes == [f"builder 0 -> {build.BUILDER_VERSION}"]


def test_a_released_image_is_never_silently_changed(cat: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (cat / "flavors").mkdir()
    r = recipe.load("demo", cat)
    build.reconcile(_built(r, {"a": "1"}, "a" * 64), None, cat)
    with requests_mock.Mocker() as m:
        serve_index(m, {"a": "1"}, monkeypatch)  # Debian's mirror serves the lock
        assert main(["release", "--root", str(cat), "--no-tag"]) == EXIT_FINDINGS  # the entry's checksum drifted
        refs.sync(cat, write=True)
        assert main(["release", "--root", str(cat), "--no-tag"]) == EXIT_OK
    with pytest.raises(UserError, match=r"is released and this build differs from it \(a 1 -> 2\): wrote the new "
                                        r"image.lock; bump the entry's version"):
        build.reconcile(_built(r, {"a": "2"}, "c" * 64), recipe.read_lock(r), cat)
    assert recipe.read_lock(r).packages == {"a": "2"}  # type: ignore[union-attr]
    assert main(["versions", "--root", str(cat)]) == EXIT_FINDINGS  # and the gate asks for the bump


def test_recipe_errors_are_one_line(cat: Path) -> None:
    entry = cat / "images" / "demo" / "entry.yaml"
    entry.write_text(entry.read_text().replace("source: files/motd", "source: files/missing"))
    with pytest.raises(UserError, match=r"entry.yaml: recipe file files/missing does not exist"):
        recipe.load("demo", cat)
    with pytest.raises(UserError, match="no image entry 'nope' \\(known: demo\\)"):
        recipe.load("nope", cat)


def test_vnfd_identity_follows_the_version(tmp_path: Path) -> None:
    from nfvcat.catalog import vnfd_ids

    entry = tmp_path / "vnfd" / "v"
    (entry / "Definitions").mkdir(parents=True)
    (entry / "entry.yaml").write_text("name: v\nversion: 2.1.0\nkind: vnfd\ndescription: d\n")
    types = entry / "Definitions" / "types.yaml"
    types.write_text("node_types:\n  x.V:\n    properties:\n      descriptor_id:\n        type: string\n"
                     "        constraints: [ valid_values: [ 6f1d8b3e-2a5c-4c1e-9b7a-1d0e5a7c9f21 ] ]\n"
                     "        default: 6f1d8b3e-2a5c-4c1e-9b7a-1d0e5a7c9f21\n      descriptor_version:\n"
                     "        type: string\n        constraints: [ valid_values: [ '1.0.0' ] ]\n"
                     "        default: '1.0.0'\n")
    assert [d.status for d in vnfd_ids.sync(tmp_path, write=False)] == ["drift"]
    assert [d.status for d in vnfd_ids.sync(tmp_path, write=True)] == ["updated"]
    did = vnfd_ids.descriptor_id("v", "2.1.0")
    assert did != vnfd_ids.descriptor_id("v", "2.1.1")
    text = types.read_text()
    assert text.count(did) == 2 and text.count("'2.1.0'") == 2 and "6f1d8b3e" not in text
    assert vnfd_ids.sync(tmp_path, write=False) == []


def test_the_byte_code_debian_compiled_is_listed_by_its_sources(tmp_path: Path) -> None:
    """What the builder compiles again (checked-hash .pyc): the sources of the .pyc Debian's py3compile made, once
    each (opt levels included), sorted; a .pyc without its source or of another interpreter kind is not."""
    root = tmp_path / "rootfs"
    pkg = root / "usr" / "lib" / "python3" / "dist-packages" / "cloudinit"
    std = root / "usr" / "lib" / "python3.11"
    for d in (pkg / "__pycache__", std / "__pycache__"):
        d.mkdir(parents=True)
    for src in (pkg / "util.py", pkg / "__init__.py", std / "os.py", std / "uncompiled.py"):
        src.write_text("x = 1\n")
    for pyc in ("util.cpython-311.pyc", "util.cpython-311.opt-1.pyc", "__init__.cpython-311.pyc",
                "gone.cpython-311.pyc", "util.pypy39.pyc"):
        (pkg / "__pycache__" / pyc).write_bytes(b"")
    (std / "__pycache__" / "os.cpython-311.pyc").write_bytes(b"")
    assert build.pyc_sources(root) == ["/usr/lib/python3.11/os.py",
                                       "/usr/lib/python3/dist-packages/cloudinit/__init__.py",
                                       "/usr/lib/python3/dist-packages/cloudinit/util.py"]


def test_docs_writes_and_reports_a_vnfd_identity_that_follows_a_bump(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """`nfvcat docs` after a VNFD's version bump: --check names the drift (exit 2), a run writes the new
    descriptor_version and says so (it failed with an internal error printing that outcome), then --check is
    clean."""
    root = tmp_path / "catalog"
    for d in ("templates", "flavors", "vnfd", "images"):
        shutil.copytree(ROOT / d, root / d)
    entry = root / "vnfd" / "vnf-vrouter" / "entry.yaml"
    text = entry.read_text()
    version = str(yaml.safe_load(text)["version"])
    major, minor, patch = (int(x) for x in version.split("."))
    bumped = f"{major}.{minor}.{patch + 1}"
    entry.write_text(text.replace(f"\nversion: {version}\n", f"\nversion: {bumped}\n", 1))
    monkeypatch.setenv("NFVCAT_CATALOG_DIR", str(root))
    monkeypatch.chdir(root)
    assert main(["docs", "--check"]) == EXIT_FINDINGS
    assert "vnf-vrouter_types.yaml: descriptor_id, descriptor_version differ" in capsys.readouterr().out
    assert main(["docs"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "updated vnfd/vnf-vrouter/Definitions/vnf-vrouter_types.yaml (descriptor_id, descriptor_version)" in out
    assert f"'{bumped}'" in (root / "vnfd" / "vnf-vrouter" / "Definitions" / "vnf-vrouter_types.yaml").read_text()
    assert main(["docs", "--check"]) == EXIT_OK


def test_release_refuses_an_image_the_mirror_no_longer_serves(cat: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    (cat / "flavors").mkdir()
    r = recipe.load("demo", cat)
    build.reconcile(_built(r, {"a": "1"}, "a" * 64), None, cat)
    refs.sync(cat, write=True)
    with requests_mock.Mocker() as m:
        serve_index(m, {"a": "2"}, monkeypatch)  # a point release replaced a 1 by a 2
        assert main(["release", "--root", str(cat), "--no-tag"]) == EXIT_FINDINGS
        out = capsys.readouterr().out
        assert "error: images/demo 1.0.0: Debian's mirror no longer serves its lock (a 1 -> 2 (point release, " \
               "bookworm)): run `nfvcat image renew demo`" in out
        assert not (cat / "RELEASES.yaml").exists()
        serve_index(m, {"a": "1"}, monkeypatch)
        assert main(["release", "--root", str(cat), "--no-tag"]) == EXIT_OK  # released while the mirror served it
        serve_index(m, {"a": "2"}, monkeypatch)
        assert main(["release", "--root", str(cat), "--no-tag"]) == EXIT_OK  # released, unchanged: drift is a note
        assert "note: images/demo 1.0.0: Debian's mirror no longer serves its lock" in capsys.readouterr().err
        (cat / "RELEASES.yaml").unlink()
        m.get(requests_mock.ANY, status_code=503)
        monkeypatch.setattr(mirror, "_SERVED", {})
        assert main(["release", "--root", str(cat), "--no-tag"]) == 3  # unverifiable: never released
    assert not (cat / "RELEASES.yaml").exists()


def test_a_build_another_process_finished_while_this_one_waited_for_the_lock_is_used(
        cat: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # two tiers asking for one image at once: the second waits on the cache's lock, then takes the first one's build
    monkeypatch.setenv("NFVCAT_IMAGE_CACHE", str(tmp_path / "cache"))
    r = recipe.load("demo", cat)
    lock = recipe.Lock("demo", "1.0.0", r.digest(), {}, "0" * 64, 1, build.BUILDER_VERSION)  # what was built
    done = build.Built(r, tmp_path / "disk.qcow2", tmp_path / "vmlinuz", tmp_path / "initrd.img", lock, None,
                       "reproduced")
    answers = iter([None, done])  # not cached when asked, cached once the lock is held
    monkeypatch.setattr(build, "cached", lambda rec: next(answers))
    monkeypatch.setattr(build, "_build", lambda *a: pytest.fail("built again"))
    said: list[str] = []
    assert build.build(r, said.append) is done
    assert said == ["demo 1.0.0: cached build of the lock (" + str(tmp_path / "disk.qcow2") + "), built while waiting"]
