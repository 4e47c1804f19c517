"""``nfvcat upgrade --via tacker`` (nfvcat.cloud.tacker_upgrade: Tacker v2 change_vnfpkg, then the mark) against an
HTTP-level Tacker (tests.unit.cloudfake.TackerFake), and the packages' LCM user data for change_vnfpkg run with
Tacker's own code."""

from __future__ import annotations

import shutil
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests_mock
import yaml

from nfvcat.catalog import entries, history, vnfd_ids
from nfvcat.cloud import deployed, tacker_lcm, tacker_upgrade
from nfvcat.core.errors import EXIT_FINDINGS, EXIT_USAGE, UserError
from nfvcat.packaging.csar import build
from tests.conftest import ROOT
from tests.unit.cloudfake import TackerFake, instantiated_via_tacker, sent

ENTRY = entries.load(ROOT / "vnfd" / "vnf-vrouter")
VNFD_ID = tacker_lcm.vnfd_id(ENTRY.dir, ENTRY.meta["template"])
NEXT = "9.9.0"  # a later version of the package, made in a scratch catalog


@pytest.fixture(scope="module")
def later(tmp_path_factory: pytest.TempPathFactory) -> entries.Entry:
    """vnf-vrouter at NEXT: the working tree's files, its version and VNFD identity moved on (as `nfvcat docs`)."""
    tmp = tmp_path_factory.mktemp("later")
    for rel in ("vnfd/vnf-vrouter", "templates/heat/vnf-vrouter", "hooks/vrouter"):
        shutil.copytree(ROOT / rel, tmp / rel, ignore=shutil.ignore_patterns("__pycache__"))
    d = tmp / "vnfd" / "vnf-vrouter"
    (d / "entry.yaml").write_text((d / "entry.yaml").read_text().replace(f"version: {ENTRY.version}",
                                                                         f"version: {NEXT}", 1))
    top = d / ENTRY.meta["template"]
    top.write_text(vnfd_ids.sync_text(top.read_text(), vnfd_ids.descriptor_id("vnf-vrouter", NEXT), NEXT))
    log = d / "CHANGELOG.md"
    head, _, rest = log.read_text().partition("\n")
    # dated: the CSAR's release date of an unrecorded version is its CHANGELOG heading's
    log.write_text(f"{head}\n\n## {NEXT} - 2026-11-26\n\n- A later package.\n{rest}")
    return entries.load(d)


@pytest.fixture
def fake(later: entries.Entry, monkeypatch: pytest.MonkeyPatch
         ) -> Iterator[tuple[requests_mock.Mocker, Any, TackerFake, tacker_lcm.Tacker, list[Any]]]:
    real = history.resolve
    monkeypatch.setattr(history, "resolve", lambda root, spec, kind: later if spec == f"vnf-vrouter@{NEXT}"
                        else real(root, spec, kind))
    monkeypatch.setattr(history, "newest", lambda root, name, kind: NEXT)
    with requests_mock.Mocker() as m:
        conn, tacker, tk = instantiated_via_tacker(m, ENTRY.dir, ENTRY.meta, VNFD_ID)
        onboarded: list[Any] = []
        yield m, conn, tacker, tk, onboarded


def _onboard(onboarded: list[Any]) -> Any:
    return lambda entry, vid: onboarded.append((str(entry.meta["version"]), vid))


def test_change_vnfpkg_onboards_the_new_package_first_then_moves_the_mark(fake: Any, later: entries.Entry) -> None:
    m, conn, _, tk, onboarded = fake
    new_id = vnfd_ids.descriptor_id("vnf-vrouter", NEXT)
    vnf = tacker_upgrade.upgrade(tk, ROOT, "vr1", None, 60, _onboard(onboarded))
    assert onboarded == [(NEXT, new_id)]
    body = sent(m, "POST", r"/vnf_instances/inst-1/change_vnfpkg$")[0].json()
    assert body == {"vnfdId": new_id, "additionalParams": {
        "upgrade_type": "RollingUpdate", "vdu_params": [{"vdu_id": "VDU_VROUTER"}], **tacker_lcm.USER_DATA}}
    patch = sent(m, "PATCH", r"/vnf_instances/inst-1$")[0]
    assert patch.json()["metadata"] == {"nfvcat": f"nfvcat:vnf-vrouter@{NEXT}"}
    assert vnf["upgrade"] == {"entry": "vnf-vrouter", "from": ENTRY.version, "to": NEXT, "vnfdId": new_id}
    assert vnf["vnfdId"] == new_id
    assert [(r.name, r.version) for r in deployed.vnf_instances(conn)] == [("vr1", NEXT)]
    again = tacker_upgrade.upgrade(tk, ROOT, "vr1", None, 60, _onboard(onboarded))  # nothing left to do
    assert again["upgrade"]["from"] == NEXT and len(sent(m, "POST", r"/change_vnfpkg$")) == 1
    assert len(sent(m, "PATCH", r"/vnf_instances/inst-1$")) == 1


def test_a_run_killed_after_the_change_only_moves_the_mark(fake: Any) -> None:
    m, _, tacker, tk, onboarded = fake
    new_id = vnfd_ids.descriptor_id("vnf-vrouter", NEXT)
    tk.wait(tk.start("inst-1", "change_vnfpkg", {"vnfdId": new_id, "additionalParams": {}}), "x", 60)
    vnf = tacker_upgrade.upgrade(tk, ROOT, "vr1", None, 60, _onboard(onboarded))
    assert onboarded == [] and len(sent(m, "POST", r"/change_vnfpkg$")) == 1  # the killed run's only
    assert tacker.instances["inst-1"]["metadata"] == {"nfvcat": f"nfvcat:vnf-vrouter@{NEXT}"}
    assert vnf["upgrade"]["to"] == NEXT


def test_a_failed_change_stays_failed_temp_and_the_rerun_retries_it(fake: Any) -> None:
    m, _, tacker, tk, onboarded = fake
    tacker.outcome, tacker.reason = "FAILED_TEMP", "Stack update failed"
    with pytest.raises(UserError, match=r"FAILED_TEMP: Stack update failed; the VNF instance keeps its package "
                                        r"until the operation is retried") as exc:
        tacker_upgrade.upgrade(tk, ROOT, "vr1", None, 60, _onboard(onboarded))
    assert exc.value.exit_code == EXIT_FINDINGS and not sent(m, "POST", r"/rollback$")
    tacker.outcome = "COMPLETED"
    vnf = tacker_upgrade.upgrade(tk, ROOT, "vr1", None, 60, _onboard(onboarded))
    assert len(sent(m, "POST", r"/vnf_lcm_op_occs/op-2/retry$")) == 1 and len(sent(m, "POST", r"/change_vnfpkg$")) == 1
    assert vnf["upgrade"]["to"] == NEXT and vnf["vnfdId"] == vnfd_ids.descriptor_id("vnf-vrouter", NEXT)


def test_the_preview_names_the_vnfcs_replaced_and_the_changelog(fake: Any) -> None:
    m, _, _, tk, _ = fake
    plan = tacker_upgrade.preview(tk, ROOT, "vr1", None)
    text = tacker_upgrade.preview_text(plan)
    assert f"vr1: vnf-vrouter {ENTRY.version} -> {NEXT} through Tacker's change_vnfpkg" in text
    assert "RollingUpdate of VDU_VROUTER" in text and "VNFCs replaced one after the other: VDU_VROUTER-srv-1" in text
    assert f"CHANGELOG {NEXT}:\n  - A later package." in text
    assert not sent(m, "POST", r"/change_vnfpkg$")


def test_a_downgrade_is_refused_before_any_call(fake: Any) -> None:
    m, _, _, tk, onboarded = fake
    with pytest.raises(UserError, match=rf"2.0.1 is older than the deployed {ENTRY.version}") as exc:
        tacker_upgrade.upgrade(tk, ROOT, "vr1", "2.0.1", 60, _onboard(onboarded))
    assert exc.value.exit_code == EXIT_USAGE and onboarded == [] and not sent(m, "POST", r"/change_vnfpkg$")


def test_a_basehot_that_drops_a_resource_is_refused(fake: Any) -> None:
    m, _, tacker, tk, onboarded = fake
    tacker.instances["inst-1"]["metadata"] = {"nfvcat": "nfvcat:vnf-vrouter@2.0.1"}  # released, no scaling group
    with pytest.raises(UserError, match=rf"vnf-vrouter 2.0.1 -> {ENTRY.version}: the new BaseHOT has no "
                                        r"VDU_VROUTER; Tacker's change_vnfpkg merges templates"):
        tacker_upgrade.upgrade(tk, ROOT, "vr1", ENTRY.version, 60, _onboard(onboarded))
    assert onboarded == [] and not sent(m, "POST", r"/change_vnfpkg$")


def test_lcm_user_data_gives_the_new_basehot_and_refuses_the_rollback(later: entries.Entry, tmp_path: Path) -> None:
    pytest.importorskip("tacker")
    import importlib.util

    csar = tmp_path / "csar"
    with zipfile.ZipFile(build(later.dir, tmp_path)) as zf:
        zf.extractall(csar)
    spec = importlib.util.spec_from_file_location("lcm_user_data", csar / "UserData" / "lcm_user_data.py")
    assert spec is not None and spec.loader is not None
    ud = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ud)
    new_id = vnfd_ids.descriptor_id("vnf-vrouter", NEXT)
    inst = {"vnfdId": VNFD_ID, "instantiatedVnfInfo": {"flavourId": "default", "vnfcResourceInfo": [
        {"vduId": "VDU_VROUTER", "metadata": {"flavor": "flavor-now"}}]}}
    fields = ud.VnfUserDataV2.change_vnfpkg({}, inst, {"dstVnfdId": new_id}, {}, str(csar))
    top = yaml.safe_load(fields["template"])
    assert top["description"].startswith(f"vnf-vrouter {NEXT},")  # the new package's BaseHOT
    assert "VDU_VROUTER_scale_group" in top["resources"]
    assert fields["parameters"] == {"nfv": {"VDU": {"VDU_VROUTER": {"image": "nfvcat-vrouter-1.1.2",
                                                                    "computeFlavourId": "flavor-now"}}, "CP": {}}}
    hook = "../../../hooks/vrouter/user-data.yaml"
    assert sorted(fields["files"]) == [hook, "vrouter.yaml"]
    with pytest.raises(ValueError, match="do not roll back a change_vnfpkg"):
        ud.VnfUserDataV2.change_vnfpkg_rollback({}, inst, {"dstVnfdId": new_id}, {}, str(csar))


def test_the_command_puts_the_targets_images_on_the_cloud_before_change_vnfpkg(
        fake: Any, later: entries.Entry, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    from nfvcat import cli
    from nfvcat.cloud import onboarding
    from nfvcat.packaging.images import refs
    from tests.unit.cloudfake import GLANCE, TACKER

    m, conn, _, _, _ = fake
    monkeypatch.setattr("nfvcat.cloud.connect.connect", lambda name, *deadlines: conn)
    monkeypatch.setattr("nfvcat.core.waiting.time.sleep", lambda s: None)  # the command's Tacker polls every 2 s
    [ref] = later.meta["images"]
    lock_sha = onboarding.locked_sha256(refs.glance_image(ROOT, ref))
    m.get(f"{GLANCE}/images?name={ref['name']}", json={"images": [
        {"id": "img-1", "name": ref["name"], "status": "active", "nfvcat_lock_sha256": lock_sha,
         "nfvcat_sha256": lock_sha, "nfvcat_source": "catalog"}]})
    new_id = vnfd_ids.descriptor_id("vnf-vrouter", NEXT)
    m.get(f"{TACKER}/vnfpkgm/v1/vnf_packages", json=[{"id": "pkg-2", "vnfdId": new_id, "onboardingState": "ONBOARDED",
                                                       "operationalState": "ENABLED"}])
    assert cli.main(["upgrade", "vr1", "--via", "tacker", "--yes", "--no-check", "--os-cloud", "x"]) == 0
    err = capsys.readouterr().err
    assert f"image {ref['name']}: images/vrouter {ref['version']}, in Glance already (catalog, sha256 {lock_sha}" in err
    calls = [(r.method, r.hostname, r.path) for r in m.request_history]
    looked = calls.index(("GET", "glance.test", "/v2/images"))
    assert looked < calls.index(("POST", "tacker.test", "/vnflcm/v2/vnf_instances/inst-1/change_vnfpkg"))
