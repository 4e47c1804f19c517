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


class SfcApi:
    """networking-sfc's API on the fake Neutron (``/v2.0/sfc/{port_pairs,port_pair_groups,flow_classifiers,
    port_chains}``): list, show, create, update, delete over ``items`` (kind -> id -> body). Creating a port pair
    group gives it the next ``group_id``, as networking-sfc does; a port pair group or classifier in use by a
    chain, or a port pair in a group, cannot be deleted (409), as in networking-sfc."""

    KINDS = ("port_pairs", "port_pair_groups", "flow_classifiers", "port_chains")

    def __init__(self, m: requests_mock.Mocker) -> None:
        self.items: dict[str, dict[str, dict[str, Any]]] = {k: {} for k in self.KINDS}
        self._group_ids = 0
        for kind in self.KINDS:
            one = re.compile(rf"^{NEUTRON}/sfc/{kind}/([^/?]+)$")
            every = re.compile(rf"^{NEUTRON}/sfc/{kind}(\?.*)?$")
            m.get(one, json=self._show(kind))
            m.put(one, json=self._show(kind, update=True))
            m.delete(one, json=self._delete(kind))
            m.get(every, json=lambda req, ctx, kind=kind: {kind: list(self.items[kind].values())})
            m.post(every, json=lambda req, ctx, kind=kind: {kind[:-1]: self.add(kind, req.json()[kind[:-1]])})

    def add(self, kind: str, body: dict[str, Any]) -> dict[str, Any]:
        import uuid

        item = {"id": str(uuid.uuid4()), "name": "", "description": "", "project_id": "p", **body}
        if kind == "port_pair_groups":
            self._group_ids += 1
            item.setdefault("group_id", self._group_ids)
            item.setdefault("port_pairs", [])
        self.items[kind][item["id"]] = item
        return item

    def _show(self, kind: str, update: bool = False) -> Any:
        def show(req: Any, ctx: Any) -> Any:
            item = self.items[kind].get(req.path.rsplit("/", 1)[-1])
            if item is None:
                ctx.status_code = 404
                return {"NeutronError": {"message": f"{kind[:-1]} not found"}}
            if update:
                item.update(req.json()[kind[:-1]])
            return {kind[:-1]: item}
        return show

    def _delete(self, kind: str) -> Any:
        users = {"port_pairs": ("port_pair_groups", "port_pairs"),
                 "port_pair_groups": ("port_chains", "port_pair_groups"),
                 "flow_classifiers": ("port_chains", "flow_classifiers")}

        def delete(req: Any, ctx: Any) -> Any:
            rid = req.path.rsplit("/", 1)[-1]
            if rid not in self.items[kind]:
                ctx.status_code = 404
                return {"NeutronError": {"message": f"{kind[:-1]} not found"}}
            if kind in users:
                owner, key = users[kind]
                if any(rid in (o.get(key) or []) for o in self.items[owner].values()):
                    ctx.status_code = 409
                    return {"NeutronError": {"message": f"{kind[:-1]} {rid} in use"}}
            del self.items[kind][rid]
            ctx.status_code = 204
            return None
        return delete
