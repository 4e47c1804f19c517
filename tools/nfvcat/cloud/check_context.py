"""What one run of ``nfvcat check`` looks up once and shares between its checks (:mod:`placement_check`,
:mod:`cpu_sharing`, :mod:`pci_records`): the verdicts so far, the inventory's hosts, the host access, and the
networks, the other instances of a host, each server's host facts, each host's CPU map and resource provider
names it has read, and the Glance images its servers boot from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nfvcat import catalog
from nfvcat.catalog import inventory as inventory_mod
from nfvcat.catalog import site as site_profile
from nfvcat.cloud.connect import call
from nfvcat.cloud.hostaccess import HostAccess, HostFacts
from nfvcat.cloud.image_provenance import Images
from nfvcat.cloud.verdicts import HOST_ACCESS, Verdict

TOPOLOGY_MICROVERSION = "2.78"


@dataclass
class Neighbour:
    """An instance of a host as the compute API shows it to an admin: its flavor's extra specs and its pins."""
    id: str
    name: str
    specs: dict[str, str]
    pins: dict[int, int]  # vCPU -> pCPU


@dataclass
class CpuMap:
    """A host's CPUs as one source has them: the inventory, or the compute host's own topology."""
    source: str
    dedicated: dict[int, set[int]]  # NUMA node -> cpu_dedicated_set
    shared: set[int]  # cpu_shared_set: where floating vCPUs and emulator threads run
    siblings: dict[int, set[int]]  # pCPU -> the other threads of its core


def cpu_map(source: str, cells: list[tuple[int, set[int], set[int], list[set[int]]]]) -> CpuMap:
    """A CPU map of (node, dedicated, shared, thread sibling sets) per cell."""
    out = CpuMap(source, {}, set(), {})
    for node, dedicated, shared, siblings in cells:
        out.dedicated[node] = set(dedicated)
        out.shared |= shared
        for core in siblings:
            for cpu in core:
                out.siblings.setdefault(cpu, set()).update(core - {cpu})
    return out


def extra_specs(server: dict[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in ((server.get("flavor") or {}).get("extra_specs") or {}).items()}


class CheckContext:
    def __init__(self, conn: Any, inv: inventory_mod.Inventory | None, access: HostAccess | None = None) -> None:
        self.conn = conn
        self.hosts = {h.name: h for h in (inv.hosts if inv else [])}
        self.site = site_profile.of_catalog(catalog.find_root()).physnets
        self.access = access
        self.images = Images(conn)  # each Glance image asked for once
        self.verdicts: list[Verdict] = []
        self._nets: dict[str, dict[str, Any]] = {}
        self._neighbours: dict[str, dict[str, Neighbour] | None] = {}
        self._facts: dict[str, HostFacts | None] = {}
        self._cpu_maps: dict[str, list[CpuMap]] = {}
        self._rp_names: dict[str, str | None] = {}

    def add(self, vnf: str, subject: str, check: str, status: str, detail: str = "") -> None:
        self.verdicts.append(Verdict(vnf, subject, check, status, detail))

    def network(self, nid: str) -> dict[str, Any]:
        if nid not in self._nets:
            self._nets[nid] = call(self.conn.network, "GET", f"/networks/{nid}", "network")["network"]
        return self._nets[nid]

    def topology(self, sid: str, what: str) -> dict[str, Any]:
        return call(self.conn.compute, "GET", f"/servers/{sid}/topology", f"server {what} topology",
                    microversion=TOPOLOGY_MICROVERSION, ok=(200, 403, 404)) or {}

    def rp_name(self, rp: str) -> str | None:
        if rp not in self._rp_names:
            body = call(self.conn.placement, "GET", f"/resource_providers/{rp}", f"resource provider {rp}",
                        ok=(200, 403, 404))
            self._rp_names[rp] = (body or {}).get("name")
        return self._rp_names[rp]

    @property
    def source(self) -> str:
        """Where the host access's facts come from, as verdict details say it ("from Nova's records")."""
        return self.access.source if self.access else ""

    def facts(self, sid: str, host: str | None) -> HostFacts | None:
        if self.access is None:
            return None
        if sid not in self._facts:
            self._facts[sid] = self.access.facts(sid, host)
        return self._facts[sid]

    def host_facts(self, vnf: str, subject: str, check: str, sid: str, host: str | None,
                   unseen: str) -> HostFacts | None:
        """The host's facts of a server, or None after a "needs host access" verdict saying why."""
        facts = self.facts(sid, host)
        if facts is None:
            self.add(vnf, subject, check, HOST_ACCESS, f"{unseen} (check --host-access)" if self.access is None
                     else f"{self.access.name} does not know server {sid}")
        return facts

    def neighbours(self, host: str) -> dict[str, Neighbour] | None:
        """Every instance of the host (admin: servers filtered by host, each one's topology), None if hidden."""
        if host not in self._neighbours:
            body = call(self.conn.compute, "GET", f"/servers/detail?all_tenants=1&host={host}",
                        f"servers on {host}", microversion=TOPOLOGY_MICROVERSION, ok=(200, 403))
            if body is None or "servers" not in body:
                self._neighbours[host] = None
                return None
            out: dict[str, Neighbour] = {}
            for other in body["servers"]:
                if other.get("OS-EXT-SRV-ATTR:host") not in (None, host):
                    continue  # a cloud that ignores the host filter
                oid, name = str(other["id"]), str(other.get("name") or other["id"])
                t = self.topology(oid, name)
                out[oid] = Neighbour(oid, name, extra_specs(other),
                                     {int(k): int(v) for n in t.get("nodes") or []
                                      for k, v in (n.get("cpu_pinning") or {}).items()})
            self._neighbours[host] = out
        return self._neighbours[host]

    def cpu_maps(self, host: str | None) -> list[CpuMap]:
        """The host's CPU sets and thread siblings: the inventory's, and with host access the compute host's."""
        if host is None:
            return []
        if host not in self._cpu_maps:
            maps = []
            spec = self.hosts.get(host)
            if spec is not None and spec.cells:  # a host listed without cells (its topology is its own) shows none
                maps.append(cpu_map("inventory", [(c.id, c.dedicated, c.shared, c.siblings) for c in spec.cells]))
            cells = self.access.cells(host) if self.access else None
            if cells is not None:
                maps.append(cpu_map(f"compute host's topology, {self.source}",
                                    [(c.id, c.dedicated, c.shared, c.siblings) for c in cells]))
            self._cpu_maps[host] = maps
        return self._cpu_maps[host]
