"""`instantiate NAME@VERSION` puts that release's images on the cloud before Heat is called: the image entry at the
version the release names, from the record's git history, its file verified against that release's lock; a
catalog in a throwaway git repository, OpenStack faked at the HTTP level (tests/unit/cloudfake.py)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from nfvcat import cli
from nfvcat.catalog import releases
from nfvcat.cloud import release_images
from nfvcat.cloud.stacks import bundle
from tests.conftest import ROOT
from tests.unit.cloudfake import GLANCE, HEAT, connection, sent

IMAGE = ROOT / "tests" / "fixtures" / "rules" / "E0014" / "pass" / "images" / "demo"
TEMPLATE = ("heat_template_version: 2021-04-16\nparameters:\n  image:\n    type: string\n    default: {glance}\n"
            "resources: {{}}\n")
IMAGE_ID = "5b7c1c1e-0000-4000-8000-000000000002"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def _release(repo: Path, version: str, content: bytes) -> None:
    """images/demo and templates/heat/chain at ``version``, the image's lock that of ``content``; released."""
    img = repo / "images" / "demo"
    shutil.rmtree(img, ignore_errors=True)
    shutil.copytree(IMAGE, img)
    (img / "entry.yaml").write_text((img / "entry.yaml").read_text().replace("version: 1.0.0", f"version: {version}"))
    (img / "image.lock").write_text(f"image: demo\nversion: {version}\nrecipe: fixture\nsha256: "
                                    f"{hashlib.sha256(content).hexdigest()}\nsize: {len(content)}\npackages: {{}}\n")
    chain = repo / "templates" / "heat" / "chain"
    chain.mkdir(parents=True, exist_ok=True)
    (chain / "entry.yaml").write_text(
        f"name: chain\nversion: {version}\nkind: heat\ndescription: A chain.\ntemplate: chain.yaml\nimages:\n"
        f"  - name: demo-{version}\n    image: demo\n    version: {version}\n")
    (chain / "chain.yaml").write_text(TEMPLATE.format(glance=f"demo-{version}"))
    releases.write_record(repo, releases.snapshot(repo))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", f"release {version}")


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    r = tmp_path / "repo"
    (r / "flavors").mkdir(parents=True)
    (r / "flavors" / "README.md").write_text("none\n")
    _git(r, "init", "-q")
    _git(r, "config", "user.email", "t@example.org")
    _git(r, "config", "user.name", "t")
    _release(r, "1.0.0", b"the image of release 1.0.0")
    _release(r, "1.1.0", b"the image of release 1.1.0")
    monkeypatch.setenv("NFVCAT_CATALOG_DIR", str(r))
    monkeypatch.setenv("NFVCAT_IMAGE_CACHE", str(tmp_path / "cache"))
    return r


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Any:
    import requests_mock

    from tests.unit.cloudfake import _discovery

    with requests_mock.Mocker() as m:
        _discovery(m)
        conn = connection()
        monkeypatch.setattr("nfvcat.cloud.connect.connect", lambda name, *deadlines: conn)
        m.get(f"{HEAT}/stacks?name=chain", json={"stacks": []})
        m.post(f"{HEAT}/stacks", json={"stack": {"id": "s1"}}, status_code=201)
        m.get(f"{HEAT}/stacks/chain/s1/events", json={"events": []})
        m.get(f"{HEAT}/stacks/chain/s1", json={"stack": {"id": "s1", "stack_name": "chain",
                                                         "stack_status": "CREATE_COMPLETE"}})
        yield m


def _glance_accepts(m: Any, name: str, data: bytes) -> None:
    image = {"id": IMAGE_ID, "name": name, "status": "queued", "disk_format": "qcow2", "container_format": "bare",
             "visibility": "public", "min_disk": 0, "min_ram": 0, "tags": [], "file": f"/v2/images/{IMAGE_ID}/file",
             "self": f"/v2/images/{IMAGE_ID}", "schema": "/v2/schemas/image"}
    m.get(f"{GLANCE}/images?name={name}", json={"images": []})
    m.get(f"{GLANCE}/images", json={"images": []})
    m.post(f"{GLANCE}/images", status_code=201, json=image)
    m.put(f"{GLANCE}/images/{IMAGE_ID}/file", status_code=204)
    m.get(f"{GLANCE}/images/{IMAGE_ID}", json={**image, "status": "active", "os_hash_algo": "sha512",
                                                "os_hash_value": hashlib.sha512(data).hexdigest(), "size": len(data)})


def _release_image_dir(tmp_path: Path, m: Any) -> tuple[Path, bytes]:
    """An --image-dir holding release 1.0.0's image file, and Glance (on ``m``) accepting its upload."""
    old = b"the image of release 1.0.0"
    files = tmp_path / "images"
    files.mkdir()
    (files / "demo-1.0.0.qcow2").write_bytes(old)
    _glance_accepts(m, "demo-1.0.0", old)
    return files, old


def test_instantiate_a_release_uploads_that_releases_image_before_heat(repo: Path, fake: Any, tmp_path: Path,
                                                                       capsys: Any) -> None:
    files, old = _release_image_dir(tmp_path, fake)
    assert cli.main(["instantiate", "chain@1.0.0", "--no-check", "--ready-timeout", "0", "--os-cloud", "x",
                     "--image-dir", str(files)]) == 0
    err = capsys.readouterr().err
    assert "image demo-1.0.0: images/demo 1.0.0 (from the release record's git tree" in err
    assert f"from --image-dir {files / 'demo-1.0.0.qcow2'}, sha256 {hashlib.sha256(old).hexdigest()}: create" in err
    calls = [(r.method, r.path) for r in fake.request_history if r.method in ("POST", "PUT")]
    assert calls.index(("POST", "/v2/images")) < calls.index(("PUT", f"/v2/images/{IMAGE_ID}/file")) \
        < calls.index(("POST", "/v1/p/stacks"))
    created = sent(fake, "POST", r"/v2/images$")[0].json()
    assert created["name"] == "demo-1.0.0" and created["nfvcat_version"] == "1.0.0"
    assert created["nfvcat_lock_sha256"] == hashlib.sha256(old).hexdigest() == created["nfvcat_sha256"]


def test_instantiate_a_release_refuses_another_releases_file_and_calls_no_heat(repo: Path, fake: Any,
                                                                               tmp_path: Path, capsys: Any) -> None:
    newer = tmp_path / "newer.qcow2"
    newer.write_bytes(b"the image of release 1.1.0")
    _glance_accepts(fake, "demo-1.0.0", b"")
    assert cli.main(["instantiate", "chain@1.0.0", "--no-check", "--ready-timeout", "0", "--os-cloud", "x",
                     "--image", f"demo={newer}"]) == 2
    assert "not uploaded" in capsys.readouterr().err
    assert sent(fake, "POST", r"/stacks$") == [] and sent(fake, "POST", r"/v2/images$") == []


def test_an_image_glance_has_for_that_lock_is_used_as_it_is(repo: Path, fake: Any, capsys: Any) -> None:
    sha = hashlib.sha256(b"the image of release 1.0.0").hexdigest()
    fake.get(f"{GLANCE}/images?name=demo-1.0.0", json={"images": [
        {"id": IMAGE_ID, "name": "demo-1.0.0", "status": "active", "nfvcat_lock_sha256": sha,
         "nfvcat_sha256": sha, "nfvcat_source": "catalog"}]})
    assert cli.main(["instantiate", "chain@1.0.0", "--no-check", "--ready-timeout", "0", "--os-cloud", "x"]) == 0
    assert f"image demo-1.0.0: images/demo 1.0.0, in Glance already (catalog, sha256 {sha}" in capsys.readouterr().err
    assert sent(fake, "POST", r"/v2/images$") == [] and len(sent(fake, "POST", r"/stacks$")) == 1


# ---- the same through Tacker: `instantiate --via tacker vnfd/NAME@VERSION` ------------------------------------

def _release_vnfd(repo: Path, version: str) -> None:
    """vnfd/vnf-vrouter at ``version``, its VNFD's image the Glance name of images/demo at that version; released."""
    import yaml

    d = repo / "vnfd" / "vnf-vrouter"
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(ROOT / "vnfd" / "vnf-vrouter", d)
    meta = yaml.safe_load((d / "entry.yaml").read_text())
    meta.update(version=version, images=[{"name": f"demo-{version}", "image": "demo", "version": version}])
    (d / "entry.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
    releases.write_record(repo, releases.snapshot(repo))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", f"vnf-vrouter {version}")


@pytest.fixture
def tacker(repo: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    import requests_mock

    from nfvcat.cloud import tacker_lcm
    from tests.unit.cloudfake import NEUTRON, TACKER, TackerFake, _discovery

    _release_vnfd(repo, "1.0.0")
    _release_vnfd(repo, "1.1.0")
    entry = repo / "vnfd" / "vnf-vrouter"
    with requests_mock.Mocker() as m:
        _discovery(m)
        conn = connection(nfv_orchestration_endpoint_override=TACKER)
        monkeypatch.setattr("nfvcat.cloud.connect.connect", lambda name, *deadlines: conn)
        for name in ("nfv-sriov-left", "nfv-sriov-right"):
            m.get(f"{NEUTRON}/networks/{name}", status_code=404)
            m.get(f"{NEUTRON}/networks?name={name}", json={"networks": [{"id": f"{name}-id", "name": name}]})
        fake = TackerFake(m, tacker_lcm.vnfd_id(entry, "Definitions/vnf-vrouter_top.vnfd.yaml"))
        fake.polls_before_done = 0
        yield m


def test_instantiate_via_tacker_of_a_release_uploads_its_image_before_tacker_is_called(
        tacker: Any, tmp_path: Path, capsys: Any) -> None:
    files, old = _release_image_dir(tmp_path, tacker)
    assert cli.main(["instantiate", "--via", "tacker", "vnfd/vnf-vrouter@1.0.0", "--no-check", "--os-cloud", "x",
                     "--image-dir", str(files)]) == 0
    err = capsys.readouterr().err
    assert "image demo-1.0.0: images/demo 1.0.0 (from the release record's git tree" in err
    assert f"from --image-dir {files / 'demo-1.0.0.qcow2'}, sha256 {hashlib.sha256(old).hexdigest()}: create" in err
    calls = [(r.method, r.hostname, r.path) for r in tacker.request_history]
    upload = calls.index(("PUT", "glance.test", f"/v2/images/{IMAGE_ID}/file"))
    first_tacker = next(i for i, c in enumerate(calls) if c[1] == "tacker.test")
    assert calls.index(("POST", "glance.test", "/v2/images")) < upload < first_tacker
    created = sent(tacker, "POST", r"/v2/images$")[0].json()
    assert (created["name"], created["nfvcat_version"], created["nfvcat_source"]) == ("demo-1.0.0", "1.0.0", "catalog")
    [inst] = [r.json() for r in sent(tacker, "POST", r"/vnflcm/v2/vnf_instances$")]
    assert inst["metadata"] == {"nfvcat": "nfvcat:vnf-vrouter@1.0.0"}


def test_instantiate_via_tacker_of_a_release_refuses_another_file_and_calls_no_tacker(
        tacker: Any, tmp_path: Path, capsys: Any) -> None:
    newer = tmp_path / "newer.qcow2"
    newer.write_bytes(b"the image of release 1.1.0")
    _glance_accepts(tacker, "demo-1.0.0", b"")
    assert cli.main(["instantiate", "--via", "tacker", "vnfd/vnf-vrouter@1.0.0", "--no-check", "--os-cloud", "x",
                     "--image", f"demo={newer}"]) == 2
    assert "not uploaded" in capsys.readouterr().err
    assert [r for r in tacker.request_history if r.hostname == "tacker.test"] == []
    assert sent(tacker, "POST", r"/v2/images$") == []


# ---- the images a deployment's parameters leave unused ----------------------------------------------------------

def _catalog_bundle(entry: str) -> Any:
    return bundle(next((ROOT / "templates" / "heat" / entry).glob(f"{entry}.yaml")), [])


@pytest.mark.parametrize("entry", ["chain-vrouter", "vrouter-ha-pair"])
def test_an_image_whose_parameter_the_deployment_gives_another_value_is_not_needed(entry: str) -> None:
    # chain-vrouter's vRouter is a nested template with its own default, which the chain always passes
    b = _catalog_bundle(entry)
    name = str(b.template["parameters"]["image"]["default"])
    assert release_images.unused(b, {"image": "site-image"}, {"images": [{"name": name}]}) == {
        name: "not needed: the stack gives image another value"}
    assert release_images.unused(b, {}, {"images": [{"name": name}]}) == {}  # the default boots
    assert release_images.unused(b, {"image": name}, {"images": [{"name": name}]}) == {}  # given, but that image


def test_an_image_named_anywhere_but_an_overridden_default_is_needed() -> None:
    b = _catalog_bundle("chain-vrouter")
    name = str(b.template["parameters"]["image"]["default"])
    nested = next(k for k in b.files if k.endswith("vrouter.yaml"))
    chain = next(r for r in b.template["resources"].values() if r.get("type") == nested)
    del chain["properties"]["image"]  # the nested template's own default would boot
    assert release_images.unused(b, {"image": "site-image"}, {"images": [{"name": name}]}) == {}
    b = _catalog_bundle("chain-vrouter")
    b.template.setdefault("outputs", {})["pinned"] = {"value": name}  # named outside any parameter
    assert release_images.unused(b, {"image": "site-image"}, {"images": [{"name": name}]}) == {}
