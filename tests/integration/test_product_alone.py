"""The product distribution alone (tests/productvenv.py: a fresh venv, ``pip install`` of the repository root,
no test bed) against a real cloud, the dev cloud: ``nfvcat list`` finds what carries nfvcat's mark and ``nfvcat
check`` checks a stack, each exactly as the development install (with the test beds) does. The stack is made
here through the APIs, as any tool could have made it: a small image, a flavor and a server on the dev cloud's
management network, marked as an earlier release of chain-vrouter."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.conftest import ROOT, nfvcat
from tests.productvenv import ProductVenv

STACK = "product-alone"
FLAVOR = "nfvcat-test.product-alone"
IMAGE = "nfvcat-test.product-alone"
NETWORK = "devcloud-mgmt"  # made by `devcloud up`; the simulated hosts bind its ports


def earliest_release() -> str:
    from nfvcat.catalog import history

    return history.versions(ROOT, "chain-vrouter", "heat")[0]


def wait_for(conn: Any, name: str, gone: bool = False, timeout: float = 600) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stack = conn.orchestration.find_stack(name)
        if gone and stack is None:
            return None
        if not gone and stack is not None and not stack.status.endswith("IN_PROGRESS"):
            return conn.orchestration.get_stack(stack.id)
        time.sleep(2)
    raise AssertionError(f"{name}: still {'there' if gone else 'in progress'} after {timeout:.0f} s")


@pytest.fixture(scope="module")
def marked_stack(conn: Any) -> Iterator[str]:
    from nfvcat.cloud.marks import mark

    remove(conn)  # what a run stopped before its clean-up left
    try:
        conn.image.create_image(name=IMAGE, data=b"\0" * 65536, disk_format="raw", container_format="bare")
        conn.compute.create_flavor(name=FLAVOR, vcpus=1, ram=512, disk=1)
        template = {"heat_template_version": "2021-04-16", "resources": {
            "port": {"type": "OS::Neutron::Port", "properties": {"network": NETWORK}},
            "server": {"type": "OS::Nova::Server", "properties": {
                "name": STACK, "flavor": FLAVOR, "image": IMAGE, "networks": [{"port": {"get_resource": "port"}}]}}}}
        res = conn.orchestration.post("/stacks", json={  # Heat's API takes tags as one comma-separated string
            "stack_name": STACK, "template": template, "timeout_mins": 10, "disable_rollback": True,
            "tags": mark("chain-vrouter", earliest_release())})
        assert res.status_code == 201, res.text
        stack = wait_for(conn, STACK)
        assert stack.status == "CREATE_COMPLETE", f"{stack.status}: {stack.status_reason}"
        yield STACK
    finally:
        remove(conn)


def remove(conn: Any) -> None:
    """The stack, then its flavor and image, wherever they are."""
    found = conn.orchestration.find_stack(STACK)
    if found is not None:
        conn.orchestration.delete_stack(found)
        wait_for(conn, STACK, gone=True)
    flavor = conn.compute.find_flavor(FLAVOR, ignore_missing=True)
    if flavor is not None:
        conn.compute.delete_flavor(flavor)
    image = conn.image.find_image(IMAGE, ignore_missing=True)
    if image is not None:
        conn.image.delete_image(image)


def test_the_product_alone_lists_and_checks_what_is_on_a_cloud(product_venv: ProductVenv, conn: Any,
                                                                marked_stack: str) -> None:
    print(f"pip install of the product alone: {product_venv.install_seconds:.0f} s")
    env = {"OS_CLOUD": "nfvcat-dev"}  # NFVCAT_INVENTORY (the dev cloud's) comes from the devcloud fixture
    mine, dev = product_venv.run("list", "--format", "json", env=env), nfvcat("list", "--format", "json")
    assert mine.returncode == dev.returncode == 0, mine.stdout + mine.stderr
    rows = {r["name"]: r for r in json.loads(mine.stdout)}
    assert rows[marked_stack]["entry"] == "chain-vrouter" and rows[marked_stack]["version"] == earliest_release()
    assert json.loads(mine.stdout) == json.loads(dev.stdout)

    mine, dev = (product_venv.run("check", marked_stack, "--format", "json", env=env),
                 nfvcat("check", marked_stack, "--format", "json"))
    assert "Traceback" not in mine.stderr, mine.stderr
    assert mine.returncode == dev.returncode, (mine.stdout + mine.stderr, dev.stdout + dev.stderr)
    report = json.loads(mine.stdout)
    assert report["stack"] == marked_stack and report == json.loads(dev.stdout)
    statuses = {(v["check"], v["status"]) for v in report["verdicts"]}
    assert ("server ACTIVE", "pass") in statuses, statuses
    assert mine.returncode == (0 if report["ok"] else 2)
