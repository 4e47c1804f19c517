"""`onboard`'s image step against an HTTP-level fake Keystone and Glance (requests-mock): every file is
verified against its image lock before a byte is uploaded, `--image NAME=FILE` is honoured, and there is
no way to upload an unverified image."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import requests_mock

from nfvcat.cloud import onboarding
from nfvcat.core.errors import EXIT_FINDINGS, EXIT_USAGE, UserError
from nfvcat.packaging.images import build, obtain, recipe
from tests.conftest import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "rules" / "E0014" / "pass"
AUTH = "http://keystone.test/v3"
GLANCE = "http://glance.test"
IMAGE_ID = "5b7c1c1e-0000-4000-8000-000000000001"


@pytest.fixture()
def cat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "catalog"
    shutil.copytree(FIXTURE, root)
    (root / "flavors").mkdir()
    monkeypatch.setenv("NFVCAT_CATALOG_DIR", str(root))
    monkeypatch.setenv("NFVCAT_IMAGE_CACHE", str(tmp_path / "cache"))
    return root


@pytest.fixture()
def cloud() -> Any:
    with requests_mock.Mocker() as m:
        m.get(AUTH, json={"version": {"id": "v3.14", "status": "stable", "links": [{"rel": "self", "href": AUTH}]}})
        m.post(AUTH + "/auth/tokens", status_code=201, headers={"X-Subject-Token": "t"}, json={"token": {
            "methods": ["password"], "expires_at": "2099-01-01T00:00:00.000000Z",
            "roles": [{"id": "r", "name": "admin"}],
            "user": {"id": "u", "name": "admin", "domain": {"id": "default", "name": "Default"}},
            "project": {"id": "p", "name": "admin", "domain": {"id": "default", "name": "Default"}},
            "catalog": [{"type": "image", "name": "glance", "id": "g", "endpoints": [
                {"id": "e", "interface": "public", "region": "RegionOne", "region_id": "RegionOne", "url": GLANCE}]}]}})
        m.get(GLANCE, json={"versions": [{"id": "v2.15", "status": "CURRENT",
                                          "links": [{"rel": "self", "href": GLANCE + "/v2/"}]}]})
        m.get(GLANCE + "/v2/", json={"versions": [{"id": "v2.15", "status": "CURRENT",
                                                   "links": [{"rel": "self", "href": GLANCE + "/v2/"}]}]})
        import openstack

        conn = openstack.connection.Connection(auth_url=AUTH, username="admin", password="x", project_name="admin",
                                               user_domain_id="default", project_domain_id="default",
                                               region_name="RegionOne")
        yield m, conn


def _glance_calls(m: requests_mock.Mocker) -> list[str]:
    return [f"{r.method} {r.path}" for r in m.request_history
            if r.netloc == "glance.test" and r.path.startswith("/v2/")]


def test_a_file_that_is_not_the_locked_image_is_never_uploaded(cat: Path, cloud: Any, tmp_path: Path) -> None:
    m, conn = cloud
    bad = tmp_path / "bad.qcow2"
    bad.write_bytes(b"not the image")
    with pytest.raises(UserError) as err:
        onboarding.images(conn, cat, None, {"demo-1.0.0": bad}, False, print)
    assert err.value.exit_code == EXIT_FINDINGS
    assert f"has sha256 {hashlib.sha256(b'not the image').hexdigest()}, images/demo 1.0.0 is" in str(err.value)
    assert "not uploaded" in str(err.value) and _glance_calls(m) == []


def test_an_image_that_was_never_built_has_nothing_to_verify_against(cat: Path, cloud: Any) -> None:
    m, conn = cloud
    (cat / "images" / "demo" / "image.lock").unlink()
    with pytest.raises(UserError, match="has no lock, so no sha256 to verify"):
        onboarding.images(conn, cat, None, {"demo": cat / "images" / "demo" / "files" / "motd"}, False, print)
    assert _glance_calls(m) == []


def test_a_dry_run_says_a_missing_build_would_be_built_and_builds_nothing(cat: Path, cloud: Any,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    m, conn = cloud
    monkeypatch.setattr(build, "build", _no_build)
    actions = onboarding.images(conn, cat, None, {}, True, print)
    assert [(a.verb, a.name) for a in actions] == [("build", "demo-1.0.0")]
    assert "images/demo 1.0.0 is not built here" in actions[0].detail
    assert _glance_calls(m) == []


def test_without_a_lock_a_missing_build_is_an_error_and_nothing_is_built(cat: Path, cloud: Any,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    m, conn = cloud
    (cat / "images" / "demo" / "image.lock").unlink()
    monkeypatch.setattr(build, "build", _no_build)
    with pytest.raises(UserError, match=r"image demo-1.0.0: not built: run `nfvcat image build demo`"):
        onboarding.images(conn, cat, None, {}, False, print)
    assert _glance_calls(m) == []


def _no_build(*_args: Any, **_kwargs: Any) -> Any:
    raise AssertionError("nothing may be built here")


def _fake_build(content: bytes, calls: list[str]) -> Any:
    """The builder's boundary (mmdebstrap and root are the image tier's): a build of the recipe it is given,
    whose disk holds ``content``, reconciled with that recipe's lock as the real builder does."""
    def fake(r: recipe.Recipe, say: Any, root: Path | None = None, force: bool = False) -> build.Built:
        calls.append(str(r.entry_dir))
        out = Path(build.cache_dir()) / "fake"
        out.mkdir(parents=True, exist_ok=True)
        (out / "disk.qcow2").write_bytes(content)
        old = recipe.read_lock(r)
        assert old is not None
        lock = recipe.Lock(r.name, r.version, r.digest(), dict(old.packages), hashlib.sha256(content).hexdigest(),
                           len(content), build.BUILDER_VERSION)
        built = build.Built(r, out / "disk.qcow2", out / "vmlinuz", out / "initrd.img", lock, 1.0, "new")
        return build.reconcile(built, old, root)
    return fake


def test_without_image_options_a_missing_build_is_built_verified_and_uploaded(
        cat: Path, cloud: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    m, conn = cloud
    motd = (cat / "images" / "demo" / "files" / "motd").read_bytes()  # the fixture lock's sha256 is this file's
    calls: list[str] = []
    monkeypatch.setattr(build, "build", _fake_build(motd, calls))
    _glance_accepts(m, motd)
    said: list[str] = []
    actions = onboarding.images(conn, cat, None, {}, False, said.append)
    assert len(calls) == 1 and not calls[0].startswith(str(cat))  # built in a copy: the lock is never rewritten
    assert [(a.verb, a.name) for a in actions] == [("create", "demo-1.0.0")]
    assert any("no cached build of images/demo 1.0.0" in s for s in said)
    uploads = [r for r in m.request_history if r.method == "PUT" and r.path.endswith("/file")]
    assert len(uploads) == 1


def test_the_cached_build_of_the_lock_is_uploaded_without_building(cat: Path, cloud: Any,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    m, conn = cloud
    r = recipe.load("demo", cat)
    lock = recipe.read_lock(r)
    assert lock is not None
    lock.recipe = r.digest()  # the fixture lock was written by hand: make it the lock of this recipe
    recipe.write_lock(r, lock)
    motd = (cat / "images" / "demo" / "files" / "motd").read_bytes()
    entry = build.cache_dir() / build.cache_key(r, lock)
    entry.mkdir(parents=True)
    (entry / "disk.qcow2").write_bytes(motd)
    (entry / "lock.json").write_text(json.dumps(lock.as_dict()))
    monkeypatch.setattr(build, "build", _no_build)
    _glance_accepts(m, motd)
    said: list[str] = []
    actions = onboarding.images(conn, cat, None, {}, False, said.append)
    assert [(a.verb, a.name) for a in actions] == [("create", "demo-1.0.0")]
    assert not any("building" in s for s in said), said


def test_a_build_that_is_not_the_locked_image_is_never_uploaded(cat: Path, cloud: Any,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    m, conn = cloud
    lock = (cat / "images" / "demo" / "image.lock").read_text()
    calls: list[str] = []
    monkeypatch.setattr(build, "build", _fake_build(b"the mirror moved on", calls))
    with pytest.raises(UserError, match=r"images/demo 1.0.0: its recipe changed since image.lock was "
                                        r"written .*not a mirror update") as err:
        onboarding.images(conn, cat, None, {}, False, print)
    assert err.value.exit_code == EXIT_FINDINGS and len(calls) == 1
    assert _glance_calls(m) == [] and (cat / "images" / "demo" / "image.lock").read_text() == lock


def test_unknown_image_option(cat: Path, cloud: Any) -> None:
    _, conn = cloud
    with pytest.raises(UserError, match="no catalog image of that name") as err:
        onboarding.images(conn, cat, None, {"nfvcat-debian12-vnf": cat / "x"}, False, print)
    assert err.value.exit_code == EXIT_USAGE


def _glance_accepts(m: requests_mock.Mocker, data: bytes) -> None:
    image = {"id": IMAGE_ID, "name": "demo-1.0.0", "status": "queued", "disk_format": "qcow2",
             "container_format": "bare", "visibility": "public", "min_disk": 0, "min_ram": 0, "tags": [],
             "file": f"/v2/images/{IMAGE_ID}/file", "self": f"/v2/images/{IMAGE_ID}", "schema": "/v2/schemas/image"}
    active = {**image, "status": "active", "os_hash_algo": "sha512", "os_hash_value": hashlib.sha512(data).hexdigest(),
              "size": len(data)}
    m.get(GLANCE + "/v2/images", json={"images": []})
    m.post(GLANCE + "/v2/images", status_code=201, json=image)
    m.put(GLANCE + f"/v2/images/{IMAGE_ID}/file", status_code=204)
    m.get(GLANCE + f"/v2/images/{IMAGE_ID}", json=active)


def test_the_verified_file_is_uploaded(cat: Path, cloud: Any) -> None:
    m, conn = cloud
    motd = cat / "images" / "demo" / "files" / "motd"  # the fixture lock's sha256 is this file's
    _glance_accepts(m, motd.read_bytes())
    actions = onboarding.images(conn, cat, None, {"demo": motd}, False, lambda _msg: None)
    assert [(a.verb, a.name) for a in actions] == [("create", "demo-1.0.0")]
    assert "(verified)" in actions[0].detail
    uploads = [r for r in m.request_history if r.method == "PUT" and r.path.endswith("/file")]
    assert len(uploads) == 1 and uploads[0].body is not None


# ---- drift: Debian's mirror no longer serves the lock's versions ------------------------------------------------

OLD, NEW = "1.5.2-6+deb12u2", "1.5.2-6+deb12u3"
MIRROR_INDEX = "http://deb.debian.org/debian/dists/bookworm/main/binary-amd64/Packages.xz"


def _drifted(cat: Path, m: requests_mock.Mocker, monkeypatch: pytest.MonkeyPatch) -> recipe.Lock:
    """The fixture's lock made the lock of its recipe, naming libpam0g OLD, and a mirror that serves NEW."""
    import lzma

    from nfvcat.packaging.images import mirror

    monkeypatch.setattr(mirror, "_SERVED", {})
    r = recipe.load("demo", cat)
    lock = recipe.read_lock(r)
    assert lock is not None
    lock.recipe, lock.builder = r.digest(), build.BUILDER_VERSION
    lock.packages = {"libpam0g": OLD, "systemd-sysv": "252.39-1~deb12u1"}
    recipe.write_lock(r, lock)
    index = (f"Package: libpam0g\nVersion: {NEW}\nArchitecture: amd64\n\n"
             "Package: systemd-sysv\nVersion: 252.39-1~deb12u1\nArchitecture: amd64\n")
    m.get(MIRROR_INDEX, content=lzma.compress(index.encode()))
    return lock


def mirror_build(content: bytes, calls: list[str], packages: dict[str, str] | None = None,
                 record: Any = lambda r: str(r.entry_dir)) -> Any:
    """The builder's boundary: a build that installs what the fake mirror serves (``packages``; default libpam0g
    at NEW and systemd-sysv), writing ``content`` as the disk; ``calls`` gets ``record(recipe)`` per build."""
    def fake(r: recipe.Recipe, say: Any, root: Path | None = None, force: bool = False) -> build.Built:
        calls.append(record(r))
        served = packages if packages is not None else {"libpam0g": NEW, "systemd-sysv": "252.39-1~deb12u1"}
        lock = recipe.Lock(r.name, r.version, r.digest(), served, hashlib.sha256(content).hexdigest(),
                           len(content), build.BUILDER_VERSION)
        out = build.cache_dir() / build.cache_key(r, lock)
        out.mkdir(parents=True, exist_ok=True)
        (out / "disk.qcow2").write_bytes(content)
        (out / "lock.json").write_text(json.dumps(lock.as_dict()))
        built = build.Built(r, out / "disk.qcow2", out / "vmlinuz", out / "initrd.img", lock, 1.0, "new")
        return build.reconcile(built, recipe.read_lock(r), root)
    return fake


def test_on_drift_a_local_rebuild_is_verified_against_its_record_and_uploaded_with_provenance(
        cat: Path, cloud: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    m, conn = cloud
    lock = _drifted(cat, m, monkeypatch)
    content = b"the image Debian's mirror gives today"
    calls: list[str] = []
    monkeypatch.setattr(build, "build", mirror_build(content, calls))
    _glance_accepts(m, content)
    said: list[str] = []
    actions = onboarding.images(conn, cat, None, {}, False, said.append)
    assert len(calls) == 1 and [(a.verb, a.name) for a in actions] == [("create", "demo-1.0.0")]
    assert "local rebuild, verified against its build record" in actions[0].detail
    assert any("Debian's mirror no longer serves the packages of images/demo/image.lock" in s
               and f"libpam0g {OLD} -> {NEW}" in s for s in said), said
    created = [r.json() for r in m.request_history if r.method == "POST" and r.path == "/v2/images"]
    assert len(created) == 1
    props = created[0]
    assert props["nfvcat_entry"] == "images/demo" and props["nfvcat_version"] == "1.0.0"
    assert props["nfvcat_lock_sha256"] == lock.sha256
    assert props["nfvcat_sha256"] == hashlib.sha256(content).hexdigest() != lock.sha256
    assert props["nfvcat_source"] == "rebuild" and props["nfvcat_differs"] == f"libpam0g {OLD} -> {NEW}"
    uploads = [r for r in m.request_history if r.method == "PUT" and r.path.endswith("/file")]
    assert len(uploads) == 1
    record = json.loads((build.cache_dir() / build.cache_key(recipe.load("demo", cat), recipe.Lock(
        "demo", "1.0.0", lock.recipe, {"libpam0g": NEW, "systemd-sysv": "252.39-1~deb12u1"}, "", 0,
        build.BUILDER_VERSION)) / obtain.RECORD).read_text())
    assert record["sha256"] == props["nfvcat_sha256"]
    assert record["compared"] == {lock.sha256: [f"libpam0g {OLD} -> {NEW}"]}
    assert (cat / "images" / "demo" / "image.lock").read_text() == lock.text()  # the committed lock stays


def test_a_second_onboarding_on_drift_reuses_the_rebuild_and_a_tampered_one_is_never_uploaded(
        cat: Path, cloud: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    m, conn = cloud
    _drifted(cat, m, monkeypatch)
    content = b"the image Debian's mirror gives today"
    calls: list[str] = []
    monkeypatch.setattr(build, "build", mirror_build(content, calls))
    _glance_accepts(m, content)
    onboarding.images(conn, cat, None, {}, False, print)
    said: list[str] = []
    onboarding.images(conn, cat, None, {}, False, said.append)
    assert len(calls) == 1, "builds are cached by their inputs: the second onboarding builds nothing"
    assert any("local rebuild (cached)" in s for s in said), said
    disk = next(build.cache_dir().glob("*/disk.qcow2"))
    disk.write_bytes(b"changed after its build")
    m.reset_mock()
    with pytest.raises(UserError, match=r"as a local rebuild: its build record says sha256 \w+: not uploaded") as err:
        onboarding.images(conn, cat, None, {}, False, print)
    assert err.value.exit_code == EXIT_FINDINGS and _glance_calls(m) == []


def test_on_drift_a_file_given_must_be_the_released_one(cat: Path, cloud: Any, monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    m, conn = cloud
    _drifted(cat, m, monkeypatch)
    other = tmp_path / "rebuilt.qcow2"
    other.write_bytes(b"the image Debian's mirror gives today")
    with pytest.raises(UserError, match=r"has sha256 \w+, images/demo 1.0.0 is \w+: not uploaded"):
        onboarding.images(conn, cat, None, {"demo": other}, False, print)
    assert _glance_calls(m) == []
    motd = cat / "images" / "demo" / "files" / "motd"  # the lock's sha256: the released bits
    _glance_accepts(m, motd.read_bytes())
    said: list[str] = []
    actions = onboarding.images(conn, cat, None, {"demo": motd}, False, said.append)
    assert [(a.verb, a.name) for a in actions] == [("create", "demo-1.0.0")]
    assert any("(--image) is the released file of images/demo 1.0.0" in s for s in said), said
    created = [r.json() for r in m.request_history if r.method == "POST" and r.path == "/v2/images"]
    assert created[0]["nfvcat_source"] == "catalog" and created[0]["nfvcat_differs"] == "none"


def test_image_list_shows_the_drift_and_the_cached_rebuild(cat: Path, cloud: Any, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    from nfvcat import cli

    m, conn = cloud
    lock = _drifted(cat, m, monkeypatch)
    assert cli.main(["image", "list", "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert row["sha256"] == lock.sha256 and row["cached"] is None and row["source"] is None
    assert row["mirror"]["serves_lock"] is False and row["mirror"]["missing"] == [{"package": "libpam0g",
                                                                                    "locked": OLD}]
    assert row["mirror"]["newer"] == [{"package": "libpam0g", "locked": OLD, "newest": NEW, "suite": "bookworm",
                                       "kind": "point-release"}]
    content = b"the image Debian's mirror gives today"
    monkeypatch.setattr(build, "build", mirror_build(content, []))
    _glance_accepts(m, content)
    onboarding.images(conn, cat, None, {}, False, print)
    capsys.readouterr()
    assert cli.main(["image", "list"]) == 0
    out = capsys.readouterr().out
    assert f"cached: local rebuild sha256 {hashlib.sha256(content).hexdigest()}" in out
    assert "mirror: no longer serves the lock: 1 packages newer (1 point releases), 1 locked versions gone" in out
    assert f"libpam0g {OLD} -> {NEW} (point release, bookworm)" in out


def test_image_list_says_unknown_when_the_mirror_cannot_be_read(cat: Path, cloud: Any,
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from nfvcat import cli

    m, _ = cloud
    _drifted(cat, m, monkeypatch)
    m.get(MIRROR_INDEX, status_code=503)
    assert cli.main(["image", "list"]) == 3
    assert "mirror: unknown (" in capsys.readouterr().out


def test_a_lock_an_older_builder_wrote_is_rebuilt_and_says_so(cat: Path, cloud: Any,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A release's lock from git history, written by builder 3: the mirror may serve its packages, the bytes still
    differ; the local rebuild names the builder among the differences."""
    m, conn = cloud
    lock = _drifted(cat, m, monkeypatch)
    lock.builder, lock.packages = "3", {"libpam0g": NEW, "systemd-sysv": "252.39-1~deb12u1"}
    recipe.write_lock(recipe.load("demo", cat), lock)
    content = b"the image Debian's mirror gives today"
    monkeypatch.setattr(build, "build", mirror_build(content, []))
    _glance_accepts(m, content)
    onboarding.images(conn, cat, None, {}, False, print)
    created = [r.json() for r in m.request_history if r.method == "POST" and r.path == "/v2/images"]
    assert created[0]["nfvcat_source"] == "rebuild"
    assert created[0]["nfvcat_differs"] == f"builder 3 -> {build.BUILDER_VERSION}"
