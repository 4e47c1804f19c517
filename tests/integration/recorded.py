"""The dev cloud's recorded state (Nova's, Neutron's and Placement's databases in its MariaDB), read and edited
by the truth test: each edit is a wrong placement, undone by restoring the row as it was."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from nfvcat.devcloud.state import HOST, PORTS, State, default_dir


def connect(database: str) -> Any:
    import pymysql

    password = State(default_dir()).secrets()["db"]
    return pymysql.connect(host=HOST, port=PORTS["mariadb"], user="nfvcat", password=password, database=database,
                           autocommit=True)


class Recorded:
    def __init__(self) -> None:
        self.db = {name: connect(name) for name in ("nova", "neutron", "placement")}

    def one(self, database: str, sql: str, *args: Any) -> Any:
        with self.db[database].cursor() as cur:
            cur.execute(sql, args)
            row = cur.fetchone()
        assert row is not None, (sql, args)
        return row[0]

    def rows(self, database: str, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        with self.db[database].cursor() as cur:
            cur.execute(sql, args)
            return list(cur.fetchall())

    def execute(self, database: str, sql: str, *args: Any) -> int:
        with self.db[database].cursor() as cur:
            return int(cur.execute(sql, args))

    # Nova: instance_extra.numa_topology (what GET /servers/{id}/topology shows)
    def topology(self, server_id: str) -> dict[str, Any]:
        return dict(json.loads(self.one("nova", "SELECT numa_topology FROM instance_extra WHERE instance_uuid=%s",
                                        server_id)))

    @contextmanager
    def edited_topology(self, server_id: str, edit: Callable[[dict[str, Any]], None]) -> Iterator[None]:
        before = self.one("nova", "SELECT numa_topology FROM instance_extra WHERE instance_uuid=%s", server_id)
        topo = json.loads(before)
        edit(topo)
        self.execute("nova", "UPDATE instance_extra SET numa_topology=%s WHERE instance_uuid=%s", json.dumps(topo),
                     server_id)
        try:
            yield
        finally:
            self.execute("nova", "UPDATE instance_extra SET numa_topology=%s WHERE instance_uuid=%s", before,
                         server_id)

    # Neutron: the port's binding profile (pci_slot)
    @contextmanager
    def edited_binding_profile(self, port_id: str, edit: Callable[[dict[str, Any]], None]) -> Iterator[None]:
        before = self.one("neutron", "SELECT profile FROM ml2_port_bindings WHERE port_id=%s AND status='ACTIVE'",
                          port_id)
        profile = json.loads(before)
        edit(profile)
        self.execute("neutron", "UPDATE ml2_port_bindings SET profile=%s WHERE port_id=%s AND status='ACTIVE'",
                     json.dumps(profile), port_id)
        try:
            yield
        finally:
            self.execute("neutron", "UPDATE ml2_port_bindings SET profile=%s WHERE port_id=%s AND status='ACTIVE'",
                         before, port_id)

    # Placement: the consumer's allocation of a PCI device moved to another resource provider
    @contextmanager
    def moved_allocation(self, consumer: str, from_rp: str, to_rp: str) -> Iterator[None]:
        ids = {uuid: rid for rid, uuid in self.rows("placement", "SELECT id, uuid FROM resource_providers")}
        changed = self.execute("placement", "UPDATE allocations SET resource_provider_id=%s WHERE consumer_id=%s AND "
                               "resource_provider_id=%s", ids[to_rp], consumer, ids[from_rp])
        assert changed, (consumer, from_rp)
        try:
            yield
        finally:
            self.execute("placement", "UPDATE allocations SET resource_provider_id=%s WHERE consumer_id=%s AND "
                         "resource_provider_id=%s", ids[from_rp], consumer, ids[to_rp])


def cells(topo: dict[str, Any]) -> list[dict[str, Any]]:
    """The InstanceNUMACell data of a serialized InstanceNUMATopology."""
    return [c["nova_object.data"] for c in topo["nova_object.data"]["cells"]]
