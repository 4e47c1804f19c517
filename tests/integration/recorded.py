"""The dev cloud's recorded state (Nova's, Neutron's and Placement's databases in its MariaDB), read and edited
by the truth test: each edit is a wrong placement, undone by restoring the row as it was."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from nfvcat_testbeds.devcloud.state import HOST, PORTS, State, default_dir


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


    # Nova: the PCI device records (pci_devices) of a compute host's devices
    def pci_device(self, address: str, host: str) -> dict[str, Any]:
        cols = ("id", "address", "numa_node", "parent_addr", "status", "instance_uuid", "request_id")
        row = self.rows("nova", f"SELECT {', '.join('d.' + c for c in cols)} FROM pci_devices d JOIN compute_nodes n "
                        "ON n.id = d.compute_node_id WHERE d.address=%s AND n.host=%s AND d.deleted=0 AND n.deleted=0",
                        address, host)
        assert row, (address, host)
        return dict(zip(cols, row[0], strict=True))

    def allocated_pci(self, server_id: str) -> list[dict[str, Any]]:
        """The instance's allocated devices in Nova's records."""
        return [self.pci_device(str(a), str(h)) for a, h in self.rows(
            "nova", "SELECT d.address, n.host FROM pci_devices d JOIN compute_nodes n ON n.id = d.compute_node_id "
            "WHERE d.instance_uuid=%s AND d.status='allocated' AND d.deleted=0", server_id)]

    @contextmanager
    def edited_pci_devices(self, changes: dict[int, dict[str, Any]]) -> Iterator[None]:
        """Columns of pci_devices rows (by id) changed, and restored after."""
        before = {}
        for rid, cols in changes.items():
            names = sorted(cols)
            before[rid] = dict(zip(names, self.rows("nova", f"SELECT {', '.join(names)} FROM pci_devices WHERE id=%s",
                                                     rid)[0], strict=True))
        try:
            for rid, cols in changes.items():
                self._set_pci(rid, cols)
            yield
        finally:
            for rid, cols in before.items():
                self._set_pci(rid, cols)

    def _set_pci(self, rid: int, cols: dict[str, Any]) -> None:
        names = sorted(cols)
        self.execute("nova", f"UPDATE pci_devices SET {', '.join(n + '=%s' for n in names)} WHERE id=%s",
                     *[cols[n] for n in names], rid)

    # Nova: a compute node's recorded topology (compute_nodes.numa_topology: the host's cells, thread siblings)
    def host_topology(self, host: str) -> dict[str, Any]:
        return dict(json.loads(self.one("nova", "SELECT numa_topology FROM compute_nodes WHERE host=%s AND deleted=0",
                                        host)))

    @contextmanager
    def edited_siblings(self, host: str, edit: Callable[[list[list[list[int]]]], None]) -> Iterator[None]:
        """The host's thread siblings (one list of cores per cell) edited, and restored after. Only the siblings
        are written back: nova-compute saves its usage (pinned_cpus) into the same column meanwhile."""
        topo = self.host_topology(host)
        before = [c["siblings"] for c in cells(topo)]
        siblings = json.loads(json.dumps(before))
        edit(siblings)
        self._set_siblings(host, siblings)
        try:
            yield
        finally:
            self._set_siblings(host, before)

    def _set_siblings(self, host: str, siblings: list[list[list[int]]]) -> None:
        topo = self.host_topology(host)
        for cell, sib in zip(cells(topo), siblings, strict=True):
            cell["siblings"] = sib
        self.execute("nova", "UPDATE compute_nodes SET numa_topology=%s WHERE host=%s AND deleted=0", json.dumps(topo),
                     host)

    # Nova's resource tracker: what each compute node counts as used, against what its instances hold
    def tracker_differences(self) -> list[str]:
        """Where a compute node's recorded NUMA usage (pinned pCPUs, used huge pages per cell) differs from the sum
        of its instances' recorded topologies. nova-compute keeps that usage in memory and rebuilds it from the
        instances only in its periodic update (every 60 s): a server deleted while an injected topology is still
        counted there fails to unpin its real pCPUs (CPUUnpinningInvalid) and stays in ERROR holding them."""
        want: dict[tuple[str, int], dict[str, Any]] = {}
        for host, raw in self.rows("nova", "SELECT i.host, e.numa_topology FROM instances i JOIN instance_extra e "
                                   "ON e.instance_uuid = i.uuid WHERE i.deleted = 0 AND i.host IS NOT NULL"):
            for c in cells(json.loads(raw)) if raw else []:
                use = want.setdefault((host, int(c["id"])), {"pins": set(), "pages": {}})
                use["pins"] |= {int(v) for v in (c.get("cpu_pinning_raw") or {}).values()}
                use["pins"] |= {int(v) for v in c.get("cpuset_reserved") or []}
                if c.get("pagesize"):
                    kb = int(c["pagesize"])
                    use["pages"][kb] = use["pages"].get(kb, 0) + int(c["memory"]) * 1024 // kb
        out = []
        for host, raw in self.rows("nova", "SELECT host, numa_topology FROM compute_nodes WHERE deleted = 0"):
            for c in cells(json.loads(raw)) if raw else []:
                use = want.get((host, int(c["id"])), {"pins": set(), "pages": {}})
                pinned = {int(p) for p in c.get("pinned_cpus") or []}
                if pinned != use["pins"]:
                    out.append(f"{host} cell {c['id']}: pinned {sorted(pinned)}, instances hold {sorted(use['pins'])}")
                for page in c.get("mempages") or []:
                    d = page["nova_object.data"]
                    held = use["pages"].get(int(d["size_kb"]), 0)
                    if int(d.get("used") or 0) != held and int(d["size_kb"]) != 4:
                        out.append(f"{host} cell {c['id']}: {d.get('used')} x {d['size_kb']} KiB pages used, "
                                   f"instances hold {held}")
        return out


def cells(topo: dict[str, Any]) -> list[dict[str, Any]]:
    """The InstanceNUMACell data of a serialized InstanceNUMATopology."""
    return [c["nova_object.data"] for c in topo["nova_object.data"]["cells"]]
