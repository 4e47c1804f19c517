"""Placing VNFs one instance at a time, as Nova's scheduler would: filter, weigh, consume.

Hosts are kept sorted by weight; for each instance the first host (in weight order) that passes every
filter wins, which is the host Nova's weighers would pick among the hosts passing its filters. Cheap
checks run first and Nova's exact fit only on hosts the per-cell summaries cannot rule out.
"""

from __future__ import annotations

import bisect
import time
from dataclasses import dataclass, field
from typing import Any

from nfvcat.catalog.inventory import Inventory
from nfvcat.core.errors import UserError
from nfvcat.plan import demand as demand_mod
from nfvcat.plan import filters, hoststate, novaenv, reasons, weigher
from nfvcat.plan.request import Chain, Vnf


@dataclass
class Placement:
    vnf: str
    instance: str
    host: str
    role: str
    numa_cells: list[int]
    pinned_cpus: list[int]
    emulator_cpus: list[int]
    page_size: str
    cpu_policy: str
    pci_devices: list[dict[str, Any]]


@dataclass
class Failure:
    vnf: str
    instance: str
    reasons: list[tuple[str, reasons.Reason]]  # (host, reason)


@dataclass
class ChainResult:
    placements: list[Placement] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)


class Planner:
    def __init__(self, inventory: Inventory, strategy: str = "spread"):
        if not inventory.pci_alias:  # the site's aliases (the catalog flavors name qat-vf)
            from nfvcat import catalog
            from nfvcat.catalog import site

            inventory.pci_alias = site.of_catalog(catalog.find_root()).pci_aliases()
        novaenv.configure(inventory.pci_alias)
        n = novaenv.nova()
        try:
            n.pci_request.get_alias_from_config()
            self.hosts = [hoststate.build(h, inventory.enabled_filters) for h in inventory.hosts]
        except n.exception.NovaException as exc:
            raise UserError(f"{inventory.path}: /pci/alias: Nova rejects it: {novaenv.nova_message(exc)}") from None
        except UserError as exc:
            raise UserError(f"{inventory.path}: {exc}") from None
        self.inventory = inventory
        self.strategy = strategy
        self.keys = [weigher.sort_key(h, strategy) for h in self.hosts]
        self.order = sorted(self.keys)
        self.groups: dict[str, list[int]] = {}
        self.demands: dict[int, demand_mod.Demand] = {}
        self.exact_fits = 0
        self.last_fitted: Any = None  # the InstanceNUMATopology of the last placement (tests compare it)
        self.placed = 0  # placements so far: reasons found for a demand stay true until the next one
        self._explained: dict[tuple[int, str | None, str | None], tuple[int, list[Any]]] = {}
        self.fit_seconds = 0.0

    def demand(self, vnf: Vnf) -> demand_mod.Demand:
        d = self.demands.get(id(vnf))
        if d is None:
            d = self.demands[id(vnf)] = demand_mod.build(vnf)
        return d

    def _group_reason(self, group: str | None, policy: str | None, hs: hoststate.HostState) -> str | None:
        if not group or not policy:
            return None
        members = self.groups.get(group, [])
        if policy == "anti-affinity" and hs.index in members:
            return f"ServerGroupAntiAffinityFilter: server group '{group}' already has a member on this host"
        if policy == "affinity" and members and hs.index not in members:
            return f"ServerGroupAffinityFilter: server group '{group}' members are on another host"
        return None

    def _passes(self, d: demand_mod.Demand, hs: hoststate.HostState, group: str | None,
                policy: str | None) -> tuple[bool, Any]:
        # every verdict but the server group one depends only on the demand and the host's state, so a
        # host that failed stays failed until it is consumed (its version changes)
        if d.failed_at.get(hs.index) == hs.version or self._group_reason(group, policy, hs):
            return False, None
        if (filters.static_reason(d, hs) or filters.resource_reason(d, hs)
                or (d.thread_policy == "require" and not filters.cpu_policy_ok(d, hs))
                or not filters.may_fit(d, hs)):
            d.failed_at[hs.index] = hs.version
            return False, None
        t = time.perf_counter()
        result = filters.exact_fit(d, hs)
        self.fit_seconds += time.perf_counter() - t
        self.exact_fits += 1
        if not result[0]:
            d.failed_at[hs.index] = hs.version
        return result

    def place(self, d: demand_mod.Demand, instance: str, group: str | None = None,
              policy: str | None = None) -> Placement | Failure:
        if d.invalid is None:
            for key in self.order:
                hs = self.hosts[key[1]]
                ok, fitted = self._passes(d, hs, group, policy)
                if ok:
                    return self._consume(d, hs, fitted, instance, group)
        return self.explain(d, instance, group, policy)

    def explain(self, d: demand_mod.Demand, instance: str, group: str | None = None,
                policy: str | None = None) -> Failure:
        if d.invalid:
            return Failure(d.name, instance, [("*", reasons.Reason("invalid", d.invalid))])
        key = (id(d), group, policy)
        cached = self._explained.get(key)
        if cached is None or cached[0] != self.placed:  # nothing changed since: same reasons (count: N)
            cached = self._explained[key] = (self.placed, [
                (hs.name, reasons.diagnose(d, hs, self._group_reason(group, policy, hs))) for hs in self.hosts])
        return Failure(d.name, instance, list(cached[1]))

    def _consume(self, d: demand_mod.Demand, hs: hoststate.HostState, fitted: Any, instance: str,
                 group: str | None) -> Placement:
        self.last_fitted = fitted
        self.placed += 1
        devices = hs.consume(fitted, d.pci_requests, d.vcpus, d.pcpus, d.memory_mb)
        hs.instances.append(instance)
        if group:
            self.groups.setdefault(group, []).append(hs.index)
        old = self.keys[hs.index]
        del self.order[bisect.bisect_left(self.order, old)]
        new = self.keys[hs.index] = weigher.sort_key(hs, self.strategy)
        bisect.insort(self.order, new)
        return describe(d, hs, fitted, instance, devices)

    def place_chain(self, chain: Chain, suffix: str = "", stop_on_failure: bool = False) -> ChainResult:
        result = ChainResult()
        for vnf in chain.vnfs:
            d = self.demand(vnf)
            group = f"{vnf.server_group}{suffix}" if vnf.server_group else None
            policy = chain.server_groups.get(vnf.server_group or "")
            for i in range(vnf.count):
                name = f"{vnf.name}{suffix}" + (f"-{i + 1}" if vnf.count > 1 else "")
                got = self.place(d, name, group, policy)
                if isinstance(got, Failure):
                    result.failures.append(got)
                    if stop_on_failure:
                        return result
                else:
                    result.placements.append(got)
        return result


def describe(d: demand_mod.Demand, hs: hoststate.HostState, fitted: Any, instance: str,
             devices: list[dict[str, Any]]) -> Placement:
    cells, pinned, emulator, page = [], [], [], "-"
    policy = "shared"
    if fitted is not None:
        for c in fitted.cells:
            cells.append(c.id)
            if c.cpu_pinning:
                pinned.extend(sorted(c.cpu_pinning.values()))
            if "cpuset_reserved" in c and c.cpuset_reserved:
                emulator.extend(sorted(c.cpuset_reserved))
            if "pagesize" in c and c.pagesize:
                page = demand_mod.page_label(c.pagesize)
            if c.cpu_policy:
                policy = str(c.cpu_policy)
    pci = []
    for dev in devices:
        entry = {"address": dev.get("device"), "pf": dev.get("address"),
                 "numa_node": None if dev.get("numa_node") in (None, "None") else int(dev["numa_node"]),
                 "vendor_product": f"{dev.get('vendor_id')}:{dev.get('product_id')}",
                 "dev_type": dev.get("dev_type")}
        if dev.get("physical_network"):
            entry["physical_network"] = dev["physical_network"]
        pci.append(entry)
    return Placement(vnf=d.name, instance=instance, host=hs.name, role=hs.spec.role, numa_cells=cells,
                     pinned_cpus=pinned, emulator_cpus=emulator, page_size=page, cpu_policy=policy,
                     pci_devices=pci)
