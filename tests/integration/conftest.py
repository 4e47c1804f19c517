"""The integration tier: a real (private, loopback) OpenStack from `nfvcat devcloud`, started once per session
and stopped at the end whatever happens (success, failure, Ctrl-C)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
NFVCAT = [str(Path(sys.executable).parent / "nfvcat")]
CLOUD = "nfvcat-dev"


def devcloud_inventory() -> str:
    """The host inventory the dev cloud was started with: the product's commands default to the reference
    inventory, so the tier names the dev cloud's, as a user of another cloud names theirs."""
    from nfvcat_testbeds.devcloud.lifecycle import inventory_of
    from nfvcat_testbeds.devcloud.state import State, default_dir

    return str(inventory_of(State(default_dir())))


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
        os.environ["NFVCAT_INVENTORY"] = devcloud_inventory()  # every nfvcat the tier starts checks against it
        yield
    finally:
        if not os.environ.get("NFVCAT_DEVCLOUD_KEEP"):
            subprocess.run([*NFVCAT, "devcloud", "down"], cwd=ROOT, timeout=300, check=False)


@pytest.fixture(scope="session")
def conn(devcloud: None) -> Any:
    import openstack

    return openstack.connect(cloud=CLOUD)


def catalog_images() -> list[str]:
    """The Glance names the catalog's entries reference (nfvcat-vrouter-1.1.2, ...)."""
    from nfvcat.packaging.images import refs

    return [str(i["name"]) for i in refs.glance_images(ROOT)]


def glance_name(image: str) -> str:
    """The Glance name the catalog's entries give the image entry ``image`` (vrouter -> nfvcat-vrouter-1.1.2)."""
    from nfvcat.packaging.images import refs

    return next(str(i["name"]) for i in refs.glance_images(ROOT) if i["image"] == image)


@pytest.fixture(scope="session")
def onboarded(devcloud: None, conn: Any) -> list[str]:
    """The catalog on the dev cloud by `nfvcat onboard` alone, as a user puts it on theirs: the product images
    (by the one rule of nfvcat.packaging.images.obtain, from $NFVCAT_IMAGE_CACHE: in CI tox points it into the
    run's own directory, empty at the start: this tier builds them, and the day-0 tier after it boots them; builds
    are cached by their inputs, so when Debian's mirror moved past a lock both tiers share one local rebuild), each
    verified
    against its image.lock's sha256 or its rebuild's record before upload; the flavors, networks, packages.
    The simulated hypervisor boots none of them: what the tier proves is that Glance holds the exact images."""
    t0 = time.monotonic()
    res = nfvcat("onboard", timeout=3600)  # a build from an empty cache takes minutes
    sys.stderr.write(res.stderr)
    assert res.returncode == 0, f"onboard failed:\n{res.stdout[-2000:]}\n{res.stderr[-3000:]}"
    sys.stderr.write(f"[integration] nfvcat onboard: {time.monotonic() - t0:.0f} s\n{res.stdout}")
    return catalog_images()


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
