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
    if os.geteuid() != 0:
        pytest.skip("the dev cloud runs MariaDB, RabbitMQ and OVS as root")
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


@pytest.fixture(scope="session")
def onboarded(devcloud: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    images = tmp_path_factory.mktemp("images")
    qcow2.write(images / "nfvcat-debian12-vnf.qcow2")
    res = nfvcat("onboard", "--image-dir", str(images))
    assert res.returncode == 0, res.stderr
    return images
