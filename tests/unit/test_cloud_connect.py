"""Which cloud the lifecycle commands connect to: openstacksdk's config loader decides, in its order
(--os-cloud, $OS_CLOUD, a sourced openrc's OS_* variables, the only cloud of clouds.yaml). A machine with no
clouds.yaml is made by pointing the loader's search list at an empty directory; ``nfvcat check`` is run from an
openrc environment against the HTTP-level fake (Keystone's token and catalog, then the fake's services)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import requests_mock
import yaml
from openstack.config import loader

from nfvcat.cli import main
from nfvcat.cloud import connect
from nfvcat.core.errors import EXIT_OK, EXIT_USAGE, UserError
from tests.unit.cloudfake import SERVICES, cloud  # noqa: F401 (the fake's fixture)
from tests.unit.test_placement_check import INVENTORY, Cloud, pinned

KEYSTONE = "http://keystone.test/v3"
OPENRC = {"OS_AUTH_URL": KEYSTONE, "OS_USERNAME": "demo", "OS_PASSWORD": "secret", "OS_PROJECT_NAME": "nfv",
          "OS_USER_DOMAIN_NAME": "Default", "OS_PROJECT_DOMAIN_NAME": "Default", "OS_REGION_NAME": "RegionOne",
          "OS_IDENTITY_API_VERSION": "3", "OS_INTERFACE": "public"}


@pytest.fixture()
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No OS_* variable, and clouds.yaml looked for only in an empty directory (returned)."""
    import os

    for key in list(os.environ):
        if key.startswith("OS_"):
            monkeypatch.delenv(key)
    home = tmp_path / "config"
    home.mkdir()
    for name in ("CONFIG_FILES", "SECURE_FILES", "VENDOR_FILES"):
        kind = {"CONFIG_FILES": "clouds", "SECURE_FILES": "secure", "VENDOR_FILES": "clouds-public"}[name]
        monkeypatch.setattr(loader, name, [str(home / f"{kind}.yaml")])
    return home


def _clouds_yaml(home: Path, *names: str) -> None:
    clouds = {n: {"auth": {"auth_url": f"http://{n}.test/v3", "username": n, "password": "x", "project_name": n},
                  "region_name": "RegionOne"} for n in names}
    (home / "clouds.yaml").write_text(yaml.safe_dump({"clouds": clouds}))


def test_nothing_configured_says_how_to_name_a_cloud(machine: Path) -> None:
    with pytest.raises(UserError) as err:
        connect.cloud_config(None)
    assert err.value.exit_code == EXIT_USAGE
    assert "--os-cloud" in str(err.value) and "OS_CLOUD" in str(err.value) and "openrc" in str(err.value)


def test_an_openrc_environment_without_clouds_yaml_is_a_cloud(machine: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in OPENRC.items():
        monkeypatch.setenv(k, v)
    region = connect.cloud_config(None)
    assert region.config["auth"]["auth_url"] == KEYSTONE and region.config["auth"]["username"] == "demo"
    assert region.config["auth"]["project_name"] == "nfv" and region.get_region_name() == "RegionOne"
    assert connect.describe(region) == f"cloud of the OS_* variables ({KEYSTONE})"


def test_openstacksdks_order(machine: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _clouds_yaml(machine, "lab")
    assert connect.cloud_config(None).name == "lab"  # the only cloud of clouds.yaml
    for k, v in OPENRC.items():
        monkeypatch.setenv(k, v)
    assert connect.cloud_config(None).name == "envvars"  # a sourced openrc before clouds.yaml's only cloud
    monkeypatch.setenv("OS_CLOUD", "lab")
    region = connect.cloud_config(None)  # $OS_CLOUD before the openrc's variables
    assert region.name == "lab" and region.config["auth"]["username"] == "lab"
    _clouds_yaml(machine, "lab", "edge")
    assert connect.cloud_config("edge").name == "edge"  # --os-cloud first
    monkeypatch.delenv("OS_CLOUD")
    for k in OPENRC:
        monkeypatch.delenv(k)
    with pytest.raises(UserError, match="several: edge, lab"):
        connect.cloud_config(None)
    with pytest.raises(UserError, match="Cloud nope was not found"):
        connect.cloud_config("nope")


def keystone(m: requests_mock.Mocker) -> None:
    """Keystone answering a password token with a catalog of the fake's services."""
    catalog = [{"type": service, "name": host, "id": host, "endpoints": [
        {"id": f"{host}-public", "interface": "public", "region": "RegionOne", "region_id": "RegionOne",
         "url": f"http://{host}.test/{path}".rstrip("/") + ("/p" if service == "orchestration" else "")}]}
        for service, (host, path, _, _) in SERVICES.items()]
    m.get(KEYSTONE, json={"version": {"id": "v3.14", "status": "stable", "links": [{"rel": "self", "href": KEYSTONE}]}})
    m.post(KEYSTONE + "/auth/tokens", status_code=201, headers={"X-Subject-Token": "t"}, json={"token": {
        "methods": ["password"], "expires_at": "2099-01-01T00:00:00.000000Z", "roles": [{"id": "r", "name": "member"}],
        "user": {"id": "u", "name": "demo", "domain": {"id": "default", "name": "Default"}},
        "project": {"id": "p", "name": "nfv", "domain": {"id": "default", "name": "Default"}}, "catalog": catalog}})


def openrc_chain(m: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A cloud behind Keystone with one pinned server, reached from an openrc environment (no clouds.yaml):
    the host inventory file to check it against."""
    keystone(m)
    Cloud(m, [pinned("a")])
    for k, v in OPENRC.items():
        monkeypatch.setenv(k, v)
    inv = tmp_path / "inventory.yaml"
    inv.write_text(INVENTORY)
    return inv


def test_nfvcat_check_from_an_openrc_environment(machine: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                 cloud: Any, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    m, _ = cloud
    inv = openrc_chain(m, monkeypatch, tmp_path)
    assert main(["check", "chain", "--inventory", str(inv), "--format", "json"]) == EXIT_OK
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and {v["check"] for v in report["verdicts"]} >= {"server ACTIVE", "CPU pinning"}
    token = next(r for r in m.request_history if r.method == "POST" and r.path == "/v3/auth/tokens").json()
    assert token["auth"]["identity"]["password"]["user"]["name"] == "demo"
    assert token["auth"]["scope"]["project"]["name"] == "nfv"
