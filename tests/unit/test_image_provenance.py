"""`nfvcat list` names the images each marked stack and VNF instance boots, each a catalog image, a local rebuild
(with how many packages differ) or of unknown provenance, as the Glance image's nfvcat properties say: the servers
from Heat's resource list or Tacker's VNFC resources, each server's image from Nova, each image from Glance once.
OpenStack faked at the HTTP level (tests/unit/cloudfake.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests_mock

from nfvcat import cli
from nfvcat.catalog import entries
from nfvcat.cloud import deployed, image_provenance, tacker_lcm
from tests.conftest import ROOT
from tests.unit.cloudfake import (  # noqa: F401 (cli_cloud: a fixture)
    HEAT,
    NOVA,
    cli_cloud,
    glance_images,
    instantiated_via_tacker,
    provenance_image,
)

REBUILT = provenance_image("img-rebuild", "nfvcat-vrouter-1.1.2", "rebuild", uploaded=b"a local rebuild",
                           differs="libpam-modules 1.5.2-6+deb12u2 -> 1.5.2-6+deb12u3; libpam0g 1.5.2-6+deb12u2 -> "
                                   "1.5.2-6+deb12u3; and 2 more")
IMAGES = [provenance_image("img-catalog", "nfvcat-vrouter-1.1.1", "catalog"), REBUILT,
          provenance_image("img-plain", "cirros", None)]
SERVERS = {"srv-a": "img-rebuild", "srv-b": "img-rebuild", "srv-c": "img-catalog", "srv-d": "img-plain",
           "srv-e": "img-deleted", "srv-f": ""}


def _nova(m: requests_mock.Mocker) -> None:
    for sid, image in SERVERS.items():
        m.get(f"{NOVA}/servers/{sid}", json={"server": {"id": sid, "status": "ACTIVE",
                                                         "image": {"id": image} if image else ""}})
    glance_images(m, IMAGES)


def _resources(*servers: str, nested: str = "") -> dict[str, Any]:
    return {"resources": [{"resource_name": "server", "resource_type": "OS::Nova::Server", "physical_resource_id": s,
                           "parent_resource": nested or None} for s in servers]
            + [{"resource_name": "port", "resource_type": "OS::Neutron::Port", "physical_resource_id": "p"}]}


@pytest.fixture
def heat(cli_cloud: requests_mock.Mocker) -> requests_mock.Mocker:  # noqa: F811 (fixture)
    m = cli_cloud
    m.get(f"{HEAT}/stacks", json={"stacks": [
        {"id": "s1", "stack_name": "pair", "stack_status": "CREATE_COMPLETE", "tags": ["nfvcat:demo@1.0.0"]},
        {"id": "s2", "stack_name": "gw", "stack_status": "CREATE_COMPLETE", "tags": ["nfvcat:demo@1.0.0"]},
        {"id": "s3", "stack_name": "odd", "stack_status": "CREATE_COMPLETE", "tags": ["nfvcat:demo@1.0.0"]},
        {"id": "s4", "stack_name": "gone", "stack_status": "DELETE_IN_PROGRESS",
         "tags": ["nfvcat:demo@1.0.0"]}]})
    m.get(f"{HEAT}/stacks/pair/s1/resources?nested_depth=5", json=_resources("srv-a", "srv-b", nested="vnf"))
    m.get(f"{HEAT}/stacks/gw/s2/resources?nested_depth=5", json=_resources("srv-c"))
    m.get(f"{HEAT}/stacks/odd/s3/resources?nested_depth=5", json=_resources("srv-d", "srv-e", "srv-f"))
    m.get(f"{HEAT}/stacks/gone/s4/resources?nested_depth=5", status_code=404, json={})
    _nova(m)
    return m


def test_list_names_each_stacks_images_catalog_rebuild_or_unknown(heat: requests_mock.Mocker, capsys: Any) -> None:
    assert cli.main(["list", "--os-cloud", "x", "--format", "json"]) == 0
    rows = {r["name"]: r["images"] for r in json.loads(capsys.readouterr().out)}
    [rebuild] = rows["pair"]
    assert rebuild == {"image": "nfvcat-vrouter-1.1.2", "id": "img-rebuild", "provenance": "rebuild",
                       "entry": "images/vrouter", "version": "1.1.2", "lock_sha256": REBUILT["nfvcat_lock_sha256"],
                       "sha256": REBUILT["nfvcat_sha256"], "differs": 4,
                       "packages": ["libpam-modules 1.5.2-6+deb12u2 -> 1.5.2-6+deb12u3",
                                    "libpam0g 1.5.2-6+deb12u2 -> 1.5.2-6+deb12u3"],
                       "servers": ["srv-a", "srv-b"], "label": "nfvcat-vrouter-1.1.2 rebuild (4 packages differ)"}
    [catalog] = rows["gw"]
    assert catalog["provenance"] == "catalog" and catalog["sha256"] == catalog["lock_sha256"]
    assert [(i["image"], i["provenance"], i["why"]) for i in rows["odd"]] == [
        ("cirros", "unknown", "no nfvcat provenance in its Glance properties"),
        (None, "unknown", "Glance does not show this image (deleted, or not visible to this project)"),
        (None, "unknown", "it boots from a volume (no Glance image in its record)")]
    assert rows["gone"] == []  # deleted between Heat's stack list and its resource list
    glance = [r.path for r in heat.request_history if r.hostname == "glance.test" and "/images/" in r.path]
    assert sorted(glance) == ["/v2/images/img-catalog", "/v2/images/img-deleted", "/v2/images/img-plain",
                              "/v2/images/img-rebuild"]  # each image once, though two servers boot one

    assert cli.main(["list", "--os-cloud", "x"]) == 0
    text = {line.split()[1]: line for line in capsys.readouterr().out.splitlines()[2:]}
    assert text["pair"].endswith("nfvcat-vrouter-1.1.2 rebuild (4 packages differ)")
    assert text["gw"].endswith("nfvcat-vrouter-1.1.1 catalog")
    assert text["odd"].endswith("cirros unknown, img-deleted unknown, - unknown")
    assert cli.main(["list", "--os-cloud", "x", "-f", "value", "-c", "name", "-c", "images"]) == 0
    assert "pair nfvcat-vrouter-1.1.2 rebuild (4 packages differ)" in capsys.readouterr().out.splitlines()
    assert cli.main(["list", "--os-cloud", "x", "-f", "json", "-c", "name", "-c", "images"]) == 0
    picked = {r["name"]: r["images"] for r in json.loads(capsys.readouterr().out)}
    assert picked["gw"][0]["provenance"] == "catalog" and picked["pair"][0]["differs"] == 4


def test_a_vnf_instance_lists_the_images_of_the_servers_tacker_reports() -> None:
    entry = entries.load(ROOT / "vnfd" / "vnf-vrouter")
    with requests_mock.Mocker() as m:
        conn, tacker, _ = instantiated_via_tacker(m, entry.dir, entry.meta,
                                                  tacker_lcm.vnfd_id(entry.dir, entry.meta["template"]))
        tacker.server = "srv-a"
        tacker.instances["inst-1"]["instantiatedVnfInfo"] = tacker.reported("inst-1")
        m.get(f"{HEAT}/stacks", json={"stacks": []})
        _nova(m)
        [row] = deployed.listing(conn, ROOT)
    assert (row.via, row.name, row.servers) == ("tacker", "vr1", ["srv-a"])
    assert [(i["image"], i["provenance"], i["differs"]) for i in row.images] == [
        ("nfvcat-vrouter-1.1.2", "rebuild", 4)]


@pytest.mark.parametrize(("differs", "listed", "count"), [
    ("none", [], 0),
    ("builder 3 -> 4; libpam0g 1 -> 2", ["builder 3 -> 4", "libpam0g 1 -> 2"], 1),
    ("a 1 -> 2; and 7 more", ["a 1 -> 2"], 8)])
def test_the_differing_packages_are_counted_as_onboarding_wrote_them(differs: str, listed: list[str],
                                                                      count: int) -> None:
    p = image_provenance.of_image(provenance_image("i", "n", "rebuild", uploaded=b"x", differs=differs))
    assert (p.kind, p.differs, p.differ_count) == ("rebuild", listed, count)


def test_provenance_that_does_not_hold_together_is_unknown_never_catalog() -> None:
    claims = image_provenance.of_image(provenance_image("i", "n", "catalog", uploaded=b"another file"))
    assert claims.kind == "unknown" and "is not the lock's" in claims.why
    no_lock = {**provenance_image("i", "n", "catalog"), "nfvcat_lock_sha256": ""}
    assert image_provenance.of_image(no_lock).kind == "unknown"
    other = {**provenance_image("i", "n", "catalog"), "nfvcat_source": "handmade"}
    assert image_provenance.of_image(other).kind == "unknown"
