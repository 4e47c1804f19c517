"""Placing VNFs one instance at a time, as Nova's scheduler would: filter, weigh (weigher.Weighers: Nova's
weighers, normalised over the hosts that pass), consume. Cheap checks run first and Nova's exact fit only
on hosts the per-cell summaries cannot rule out.

Hosts with the same signature (hoststate.HostState.signature) form one group (hostorder): a verdict, with
Nova's fitted topology and the NUMA state after taking it, and the weighers' inputs are computed once per
group (and request) and memoised until the group empties; one host stands for its group in the weighing.
``memo=False`` keeps the host-by-host planner (each host its own Nova objects, every verdict computed),
which the tests compare placements against.
"""

from __future__ import annotations

import heapq
import itertools
import operator
import time
from dataclasses import dataclass, field
from typing import Any

from nfvcat.catalog.inventory import Inventory
from nfvcat.core.errors import UserError
from nfvcat.plan import demand as demand_mod
from nfvcat.plan import filters, hoststate, novaenv, pciplacement, reasons, weigher
from nfvcat.plan.hostorder import Group, HostOrder
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
    # PCI in Placement, offline: the cells of the host's other fitting allocation candidates, which Nova takes
    # instead of numa_cells when Placement lists theirs first (pciplacement)
    other_numa_cells: list[list[int]] = field(default_factory=list)
    # where the weights do not decide Nova's choice (weigher.Weighers.undecided): the hosts it may take instead,
    # this one among them, in the plan's host order (the first UNDECIDED_NAMES), how many they are, and why
    undecided: list[str] = field(default_factory=list)
    undecided_hosts: int = 0
    undecided_reason: str = ""


UNDECIDED_NAMES = 50  # host names an undecided choice lists (in a cloud of identical hosts, most of them tie)


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
    def __init__(self, inventory: Inventory, strategy: str = "spread", memo: bool = True,
                 weighing: dict[str, str] | None = None, placement: pciplacement.Candidates | None = None):
        """``weighing``: the cloud's [filter_scheduler] weigher options (weigher.OPTIONS, from nova.conf);
        ``placement``: PCI devices are tracked in Placement ([filter_scheduler] pci_in_placement), with its
        allocation candidates' order where it was asked (pciplacement)."""
        if not inventory.pci_alias:  # the site's aliases (the catalog flavors name qat-vf)
            from nfvcat import catalog
            from nfvcat.catalog import site

            inventory.pci_alias = site.of_catalog(catalog.find_root()).pci_aliases()
        novaenv.configure(inventory.pci_alias, pci_in_placement=placement is not None)
        n = novaenv.nova()
        try:
            n.pci_request.get_alias_from_config()
            hoststate.check_signature_fields()
            self.hosts = [hoststate.build(h, inventory.enabled_filters, share=memo,
                                          pci_in_placement=placement is not None) for h in inventory.hosts]
        except n.exception.NovaException as exc:
            raise UserError(f"{inventory.path}: /pci/alias: Nova rejects it: {novaenv.nova_message(exc)}") from None
        except UserError as exc:
            raise UserError(f"{inventory.path}: {exc}") from None
        self.inventory = inventory
        self.names = [hs.name for hs in self.hosts]
        self.strategy = strategy
        self.weighers = weigher.Weighers(strategy, weighing)
        self.memo = memo
        self.placement = placement
        self.verdicts: dict[int, dict[int, tuple[bool, Any, bool, list[Any]]]] = {}  # group id -> id(demand) -> verdict
        self.fits_memoised = 0  # exact fits answered from a group's memoised verdict
        self.inputs: dict[int, tuple[tuple[float, ...], tuple[float, ...]]] = {}  # group id -> weigher inputs
        self.host_order = HostOrder(self.hosts, self._dropped) if memo else None
        self.groups: dict[str, list[int]] = {}
        self.demands: dict[int, demand_mod.Demand] = {}
        self.exact_fits = 0
        self.last_fitted: Any = None  # the InstanceNUMATopology of the last placement (tests compare it)
        self.placed = 0  # placements so far: reasons found for a demand stay true until the next one
        self._explained: dict[tuple[int, str | None, str | None], tuple[int, list[Any]]] = {}
        self.fit_seconds = 0.0
        self._described: dict[int, tuple[Any, tuple[Any, ...]]] = {}  # id(fitted) -> (fitted, its output part)
        self._undecided: tuple[list[str], int, str] = ([], 0, "")  # the last choice's (weigher.Weighers.undecided)

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

    def _verdict(self, d: demand_mod.Demand, hs: hoststate.HostState) -> tuple[bool, Any, bool, list[Any]]:
        """(passes, fitted topology, whether Nova's exact fit was asked, [the host's NUMA topology after
        taking the fit, once known]) for every filter but the server group one: they depend only on the
        demand and the host's signature."""
        if (filters.static_reason(d, hs) or filters.resource_reason(d, hs)
                or (d.thread_policy == "require" and not filters.cpu_policy_ok(d, hs))
                or not filters.may_fit(d, hs)):
            return False, None, False, []
        t = time.perf_counter()
        ok, fitted = filters.exact_fit(d, hs, candidates=self.placement)
        self.fit_seconds += time.perf_counter() - t
        self.exact_fits += 1
        return ok, fitted, True, []

    def _passes(self, d: demand_mod.Demand, hs: hoststate.HostState, group: str | None,
                policy: str | None) -> tuple[bool, Any]:
        # a host that failed stays failed until it is consumed (its version changes)
        if d.failed_at.get(hs.index) == hs.version or self._group_reason(group, policy, hs):
            return False, None
        ok, fitted = self._verdict(d, hs)[:2]
        if not ok:
            d.failed_at[hs.index] = hs.version
        return ok, fitted

    def _group_verdict(self, d: demand_mod.Demand, g: Group) -> tuple[bool, Any, bool, list[Any]]:
        memo = self.verdicts.get(g.id)
        if memo is None:
            memo = self.verdicts[g.id] = {}
        got = memo.get(id(d))
        if got is None:
            got = memo[id(d)] = self._verdict(d, self.hosts[g.members[0]])
        elif got[2]:
            self.fits_memoised += 1
        return got

    def _dropped(self, gid: int) -> None:
        self.verdicts.pop(gid, None)
        self.inputs.pop(gid, None)

    def _choose(self, d: demand_mod.Demand, group: str | None,
                policy: str | None) -> tuple[hoststate.HostState, Any] | None:
        """Nova's choice among the hosts that pass, by group: a group's verdict is its hosts' verdict, its
        weigher inputs theirs, and its first host the group filter allows stands for it (ties go to it)."""
        assert self.host_order is not None
        order, weighers = self.host_order, self.weighers
        members = self.groups.get(group, []) if group and policy in ("affinity", "anti-affinity") else []
        if policy == "affinity" and members:
            firsts: dict[int, int] = {}  # only the members pass
            for index in sorted(set(members)):
                firsts.setdefault(order.group_of[index].id, index)
            entries = sorted((index, gid) for gid, index in firsts.items())
        else:
            avoid = set(members)
            entries = order.order if not avoid else sorted(
                (i, gid) for _, gid in order.order
                for i in [next((m for m in order.by_id[gid].members if m not in avoid), -1)] if i >= 0)
        candidates, fits, eligible = [], {}, []
        for index, gid in entries:
            g = order.by_id[gid]
            ok, fitted = self._group_verdict(d, g)[:2]
            if ok:
                inputs = self.inputs.get(gid)
                if inputs is None:
                    inputs = self.inputs[gid] = weighers.inputs(self.hosts[index])
                candidates.append((index, *inputs))
                fits[index] = fitted
                eligible.append(g)
        if not candidates:
            return None
        if policy == "affinity" and members:
            def hosts_of(g: Group) -> list[int]:
                return sorted(m for m in set(members) if order.group_of[m] is g)
        else:
            def hosts_of(g: Group) -> list[int]:
                return [m for m in g.members if m not in avoid] if avoid else g.members
        io: list[float] = []
        weights = weighers.weights(candidates, io)
        tied, why = weighers.undecided(weights, [len(hosts_of(g)) for g in eligible] if members
                                       else [len(g.members) for g in eligible], (candidates, io))
        index = self._pick(candidates, weights)
        self._undecided = ([], 0, "")
        if why:
            lists = [hosts_of(eligible[j]) for j in tied]
            self._undecided = (list(map(self.names.__getitem__, first_of(lists, UNDECIDED_NAMES))),
                               sum(map(len, lists)), why)
        return self.hosts[index], fits[index]

    @staticmethod
    def _pick(candidates: list[tuple[int, tuple[float, ...], tuple[float, ...]]], weights: list[float]) -> int:
        """Nova's first host after its stable descending sort by weight: the first of the best."""
        top = max(weights)
        return next(c[0] for c, wt in zip(candidates, weights, strict=True) if wt == top)

    def place(self, d: demand_mod.Demand, instance: str, group: str | None = None,
              policy: str | None = None, host: str | None = None) -> Placement | Failure:
        """Nova's choice for one server; ``host``: the requested host (the filters run on it alone)."""
        only = None if host is None else self.index_of(host)
        if d.invalid is None:
            found = (self._choose(d, group, policy) if self.memo and not self._per_host(d) and only is None
                     else self._choose_host_by_host(d, group, policy, only))
            if found is not None:
                return self._consume(d, found[0], found[1], instance, group)
        return self.explain(d, instance, group, policy, only)

    def index_of(self, host: str) -> int:
        try:
            return self.names.index(host)
        except ValueError:
            raise UserError(f"requested host '{host}' is not in the inventory {self.inventory.path}") from None

    def _per_host(self, d: demand_mod.Demand) -> bool:
        """Placement's order, as the cloud gave it, is per host: hosts of one signature may differ in it."""
        return self.placement is not None and self.placement.known and bool(pciplacement.groups(d.pci_requests))

    def _choose_host_by_host(self, d: demand_mod.Demand, group: str | None, policy: str | None,
                             only: int | None = None) -> tuple[hoststate.HostState, Any] | None:
        passing: dict[int, Any] = {}
        for hs in self.hosts if only is None else [self.hosts[only]]:
            ok, fitted = self._passes(d, hs, group, policy)
            if ok:
                passing[hs.index] = fitted
        if not passing:
            return None
        candidates = [(i, *self.weighers.inputs(self.hosts[i])) for i in passing]
        io: list[float] = []
        weights = self.weighers.weights(candidates, io)
        tied, why = self.weighers.undecided(weights, [1] * len(candidates), (candidates, io))
        index = self._pick(candidates, weights)
        self._undecided = ([], 0, "")
        if why:
            self._undecided = ([self.hosts[candidates[j][0]].name for j in tied][:UNDECIDED_NAMES], len(tied), why)
        return self.hosts[index], passing[index]

    def explain(self, d: demand_mod.Demand, instance: str, group: str | None = None,
                policy: str | None = None, only: int | None = None) -> Failure:
        if d.invalid:
            return Failure(d.name, instance, [("*", reasons.Reason("invalid", d.invalid))])
        if only is not None:  # the requested host's reason; Nova tries no other
            hs = self.hosts[only]
            return Failure(d.name, instance, [(hs.name, reasons.diagnose(d, hs, self._group_reason(group, policy,
                                                                                                  hs)))])
        key = (id(d), group, policy)
        cached = self._explained.get(key)
        if cached is None or cached[0] != self.placed:  # nothing changed since: same reasons (count: N)
            cached = self._explained[key] = (self.placed, self._diagnose_all(d, group, policy))
        return Failure(d.name, instance, list(cached[1]))

    def _diagnose_all(self, d: demand_mod.Demand, group: str | None, policy: str | None) -> list[Any]:
        """Each host's reason; hosts of one signature group (same state: same verdict from every filter and fit)
        with the same server-group reason are diagnosed once."""
        seen: dict[tuple[int, str | None], Any] = {}
        out = []
        for hs in self.hosts:
            why = self._group_reason(group, policy, hs)
            if self.host_order is None:
                out.append((hs.name, reasons.diagnose(d, hs, why)))
                continue
            k = (self.host_order.group_of[hs.index].id, why)
            if k not in seen:
                seen[k] = reasons.diagnose(d, hs, why)
            out.append((hs.name, seen[k]))
        return out

    def _consume(self, d: demand_mod.Demand, hs: hoststate.HostState, fitted: Any, instance: str,
                 group: str | None) -> Placement:
        self.last_fitted = fitted
        self.placed += 1
        same, memo = None, None
        if self.host_order is not None:  # hosts of one group that take the same fit end in the same state
            memo = self.verdicts.get(self.host_order.group_of[hs.index].id, {}).get(id(d))
            if memo is None or fitted is None or memo[1] is not fitted:
                memo = None
            elif memo[3]:
                same = memo[3][0]
        mapping, others = None, []
        if self.placement is not None and pciplacement.groups(d.pci_requests):  # the candidate Nova claims
            mapping = filters.placement_fit(d, hs, self.placement)[2]
            others = filters.other_cells(d, hs, self.placement, [c.id for c in fitted.cells] if fitted else [])
        hs.instances.append(instance)
        devices, outcome = hs.consume(fitted, d.pci_requests, d.vcpus, d.pcpus, d.memory_mb, d.flavor.vcpus, same,
                                      mapping)
        if memo is not None and not memo[3]:
            memo[3].append(outcome)
        if group:
            self.groups.setdefault(group, []).append(hs.index)
        if self.host_order is not None:
            self.host_order.moved(hs)
        where = describe(d, hs, fitted, instance, devices, self._described if self.memo else None)
        where.other_numa_cells = others
        where.undecided, where.undecided_hosts, where.undecided_reason = self._undecided
        return where

    def place_chain(self, chain: Chain, suffix: str = "", stop_on_failure: bool = False) -> ChainResult:
        result = ChainResult()
        for vnf in chain.vnfs:
            if vnf.host is not None and vnf.host not in self.names:
                raise UserError(f"{chain.source}: VNF {vnf.name}: requested host '{vnf.host}' is not in the "
                                f"inventory {self.inventory.path}")
        for vnf in chain.vnfs:
            d = self.demand(vnf)
            group = f"{vnf.server_group}{suffix}" if vnf.server_group else None
            policy = chain.server_groups.get(vnf.server_group or "")
            for i in range(vnf.count):
                name = f"{vnf.name}{suffix}" + (f"-{i + 1}" if vnf.count > 1 else "")
                got = self.place(d, name, group, policy, vnf.host)
                if isinstance(got, Failure):
                    result.failures.append(got)
                    if stop_on_failure:
                        return result
                else:
                    result.placements.append(got)
        return result


def first_of(lists: list[list[int]], n: int) -> list[int]:
    """The n smallest of sorted, disjoint, non-empty lists (host indices: host order). Each of them is among
    the first n of its list, and its list's head among the n smallest heads: the rest is never looked at."""
    if len(lists) == 1:
        return lists[0][:n]
    if len(lists) > n:
        lists = heapq.nsmallest(n, lists, key=operator.itemgetter(0))
    return sorted(itertools.chain.from_iterable(h[:n] for h in lists))[:n]


def describe(d: demand_mod.Demand, hs: hoststate.HostState, fitted: Any, instance: str,
             devices: list[dict[str, Any]], memo: dict[int, tuple[Any, tuple[Any, ...]]] | None = None) -> Placement:
    """The placement as output shows it; ``memo``: the fitted topology's part, per fitted object (hosts of one
    group share theirs), computed once."""
    known = memo.get(id(fitted)) if memo is not None and fitted is not None else None
    if known is not None and known[0] is fitted:
        part = known[1]
    else:
        part = _fitted_part(fitted)
        if memo is not None and fitted is not None:
            memo[id(fitted)] = (fitted, part)
    cells, pinned, emulator, page, policy = part
    pci = []
    for dev in devices:
        entry = {"address": dev.get("device"), "pf": dev.get("address"),
                 "numa_node": None if dev.get("numa_node") in (None, "None") else int(dev["numa_node"]),
                 "vendor_product": f"{dev.get('vendor_id')}:{dev.get('product_id')}",
                 "dev_type": dev.get("dev_type")}
        if dev.get("physical_network"):
            entry["physical_network"] = dev["physical_network"]
        pci.append(entry)
    return Placement(vnf=d.name, instance=instance, host=hs.name, role=hs.spec.role, numa_cells=list(cells),
                     pinned_cpus=list(pinned), emulator_cpus=list(emulator), page_size=page, cpu_policy=policy,
                     pci_devices=pci)


def _fitted_part(fitted: Any) -> tuple[Any, ...]:
    cells: list[int] = []
    pinned: list[int] = []
    emulator: list[int] = []
    page, policy = "-", "shared"
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
    return tuple(cells), tuple(pinned), tuple(emulator), page, policy
