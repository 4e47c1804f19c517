"""The integration tier: a real (private, loopback) OpenStack from `nfvcat devcloud`, started once per session
and stopped at the end whatever happens (success, failure, Ctrl-C)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration import qcow2

ROOT = Path(__file__).resolve().parents[2]
NFVCAT = [str(Path(sys.executable).parent / "nfvcat")]
CLOUD = "nfvcat-dev"


def nfvcat(*args: str, env: dict[str, str] | None = None, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "OS_CLOUD": CLOUD, **(env or {})}
    return subprocess.run([*NFVCAT, *args], capture_output=True, text=True, env=full, cwd=ROOT, timeout=timeout,
                          check=False)


@pytest.fixture(scope="session")
def devcloud() -> Iterator[None]:
    if os.geteuid() != 0:  # a tier that cannot run fails: it never passes by skipping
        pytest.fail("the integration tier needs root: the dev cloud runs MariaDB, RabbitMQ and OVS as root")
    try:
        res = subprocess.run([*NFVCAT, "devcloud", "up"], cwd=ROOT, timeout=900, check=False, text=True,
                             capture_output=True)
        sys.stderr.write(res.stderr)
        assert res.returncode == 0, f"devcloud up failed:\n{res.stderr[-3000:]}"
        yield
    finally:
        if not os.environ.get("NFVCAT_DEVCLOUD_KEEP"):
            subprocess.run([*NFVCAT, "devcloud", "down"], cwd=ROOT, timeout=300, check=False)


@pytest.fixture(scope="session")
def conn(devcloud: None) -> Any:
    import openstack

    return openstack.connect(cloud=CLOUD)


ONBOARD = ("onboard", "--only", "flavors", "--only", "networks", "--only", "packages")


def catalog_images() -> list[str]:
    """The Glance names the catalog's entries reference (nfvcat-vrouter-1.1.0, ...)."""
    from nfvcat.images import refs

    return [str(i["name"]) for i in refs.glance_images(ROOT)]


@pytest.fixture(scope="session")
def onboarded(devcloud: None, conn: Any, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The catalog on the dev cloud: flavors, provider networks and VNF packages by `nfvcat onboard`. The images
    are stand-ins, a small valid qcow2 under each catalog Glance name, uploaded by the test: the simulated
    hypervisor boots nothing, `nfvcat onboard` refuses any file that is not the image its lock names (tested in
    the unit tier with an HTTP-level Glance), and building the real images takes 5-25 minutes here."""
    images = tmp_path_factory.mktemp("images")
    names = catalog_images()
    for name in names:
        if conn.image.find_image(name) is None:
            path = qcow2.write(images / f"{name}.qcow2", tag=name.encode())
            conn.image.create_image(name=name, filename=str(path), disk_format="qcow2", container_format="bare",
                                    visibility="public", wait=True)
    res = nfvcat(*ONBOARD)
    assert res.returncode == 0, res.stderr
    return names


def counts(conn: Any) -> dict[str, int]:
    """What a test could leak, counted through the APIs. A service the cloud has but that cannot be queried
    fails the test (a leak check never says zero for what it could not see); a service the cloud does not
    have (no endpoint in its catalog: the dev cloud has no Cinder) cannot leak and is left out."""
    out = {"servers": len(list(conn.compute.servers(all_projects=True))),
           "ports": len(list(conn.network.ports())), "networks": len(list(conn.network.networks())),
           "flavors": len(list(conn.compute.flavors(is_public=None)))}
    if has_service(conn, "block-storage", "volumev3", "volume"):
        out["volumes"] = len(list(conn.block_storage.volumes(all_projects=True)))
    return out


def has_service(conn: Any, *types: str) -> bool:
    from keystoneauth1 import exceptions

    for t in types:
        try:
            if conn.session.get_endpoint(service_type=t, interface="public"):
                return True
        except exceptions.EndpointNotFound:
            continue
    return False
