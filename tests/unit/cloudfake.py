"""An OpenStack at the HTTP level for unit tests of nfvcat.cloud: requests-mock answers openstacksdk's version
discovery for each service and whatever a test registers; every request is recorded, and one a test did not
register fails the test (requests-mock raises NoMockAddress)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import requests_mock

# host, version path, version id, microversion range
SERVICES = {
    "orchestration": ("heat", "v1", "v1.0", None),
    "compute": ("nova", "v2.1", "v2.1", ("2.1", "2.96")),
    "network": ("neutron", "v2.0", "v2.0", None),
    "image": ("glance", "v2", "v2.16", None),
    "block_storage": ("cinder", "v3", "v3.0", ("3.0", "3.70")),
    "placement": ("placement", "", "1.0", ("1.0", "1.39")),
}
HEAT = "http://heat.test/v1/p"
NOVA = "http://nova.test/v2.1"
NEUTRON = "http://neutron.test/v2.0"
GLANCE = "http://glance.test/v2"
CINDER = "http://cinder.test/v3/p"
PLACEMENT = "http://placement.test"


def _discovery(m: requests_mock.Mocker) -> None:
    for host, path, vid, micro in SERVICES.values():
        href = f"http://{host}.test/{path}/" if path else f"http://{host}.test/"
        version: dict[str, Any] = {"id": vid, "status": "CURRENT", "links": [{"rel": "self", "href": href}]}
        if micro:
            version.update(min_version=micro[0], version=micro[1])
        tail = rf"({path}/?)?(p/?)?" if path else ""
        m.get(re.compile(rf"^http://{host}\.test/?{tail}$"), json={"versions": [version], "version": version})


def connection(**overrides: Any) -> Any:
    """An openstacksdk Connection whose services are the fake's (no Keystone: auth_type none)."""
    import openstack

    endpoints = {f"{service}_endpoint_override": (f"http://{host}.test/{path}".rstrip("/") +
                                                  ("/p" if service in ("orchestration", "block_storage") else ""))
                 for service, (host, path, _, _) in SERVICES.items()}
    return openstack.connection.Connection(auth_type="none", **{**endpoints, **overrides})


@pytest.fixture
def cloud() -> Iterator[tuple[requests_mock.Mocker, Any]]:
    with requests_mock.Mocker() as m:
        _discovery(m)
        yield m, connection()


def sent(m: requests_mock.Mocker, method: str, pattern: str) -> list[Any]:
    """The requests of ``method`` whose URL matches ``pattern`` (discovery excluded), in order."""
    return [r for r in m.request_history if r.method == method and re.search(pattern, r.url)]
