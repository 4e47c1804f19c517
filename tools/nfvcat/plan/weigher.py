"""Host choice as Nova's scheduler makes it: its weighers (``[filter_scheduler] weight_classes``), each
weigher's raw values normalised across the hosts that passed the filters (``nova.weights.normalize`` with
the weigher's minval/maxval), multiplied by its multiplier (nova.conf, or the host aggregate's metadata),
summed in weigher order; the highest weight wins, ties to the host listed first (Nova's sort is stable,
host_subset_size 1).

Where Nova's choice is not decided by the weights, the plan says so (``choice``): hosts of equal weight keep
the order nova-scheduler holds its host states in (HostManager._get_host_states yields them from a set of
(host, node) keys, an order fixed by string hashes per scheduler process, not Placement's nor the
inventory's), so the plan's first host is one of them, not necessarily Nova's; ``host_subset_size`` N > 1
makes Nova pick at random among its N best; ``shuffle_best_same_weighed_hosts`` shuffles the hosts that
share the best weight. One weigher reads a count no API shows: num_io_ops (IoOpsWeigher). Nova's resource
tracker counts a build in a host's io_workload when it claims it and recounts only at its periodic
update_available_resource (update_resources_interval, every 60 s by default, per compute service), so what
Nova weighs is the builds since that host's last update: anywhere between none and every server the plan put
there. Where that term, anywhere in its range on each host, could put another host first, the plan names
those hosts too (``IO_RACE``).

The weighers are Nova's own classes, asked for one host's raw value through ``weigh_objects``; what they
read comes from the plan's host state, as the scheduler's HostState has it after the compute node's
report: free_ram_mb (total memory - reserved_host_memory_mb - memory of the instances), vcpus_total x
cpu_allocation_ratio - vcpus_used (the flavors' vCPUs, pinned ones too; vcpus_total is the compute node's
count, cpu_shared_set as libvirt reports it), the PCI pools, num_instances, and num_io_ops: the instances
the plan put on the host, as builds (the upper end of the race above). What an inventory does not describe
is the same on every host, which Nova's normalisation makes weigh alike: free disk (no disk sizes in an
inventory), build failures, hypervisor version, cell. Soft (anti-)affinity groups weigh 0 (the planner does
not model them). A weigher the plan cannot feed (ImagePropertiesWeigher, MetricsWeigher with a setting) is
refused when its multiplier is not 0.
"""

from __future__ import annotations

import itertools
import operator
from types import SimpleNamespace
from typing import Any

from nfvcat.core.errors import UserError
from nfvcat.plan.hoststate import HostState
from nfvcat.plan.novaenv import nova

STRATEGIES = ("spread", "pack")
PACKED = ("ram_weight_multiplier", "cpu_weight_multiplier")  # -1.0 with --strategy pack
DESCRIPTION = {
    "spread": "spread: Nova's weighers as the cloud's nova.conf sets them (RAM and CPU multipliers 1.0 unless "
              "set), normalised over the hosts that fit",
    "pack": "pack: Nova's weighers, RAM and CPU multipliers -1.0 (least free first), normalised over the hosts "
            "that fit",
}
OPTIONS = ("weight_classes", "ram_weight_multiplier", "cpu_weight_multiplier", "disk_weight_multiplier",
           "io_ops_weight_multiplier", "pci_weight_multiplier", "soft_affinity_weight_multiplier",
           "soft_anti_affinity_weight_multiplier", "build_failure_weight_multiplier",
           "cross_cell_move_weight_multiplier", "hypervisor_version_weight_multiplier",
           "num_instances_weight_multiplier", "image_props_weight_multiplier", "host_subset_size",
           "shuffle_best_same_weighed_hosts")
CHOICE = ("host_subset_size", "shuffle_best_same_weighed_hosts")  # how Nova picks among the weighed hosts
TIE = "equal weight: nova-scheduler keeps its own order of host states among them (not known outside it)"
IO_RACE = ("num_io_ops: Nova weighs the builds since each host's last periodic resource update (every 60 s by "
           "default), which no API shows; the plan counts every server it put on the host")


class _Request(SimpleNamespace):
    """The RequestSpec the weighers read: no server group (soft policies are not modelled), no move."""

    def __contains__(self, name: str) -> bool:  # a NovaObject's "is this field set"
        return name in self.__dict__


REQUEST = _Request(instance_group=None, requested_destination=None, image=None, pci_requests=None)


class Weighers:
    def __init__(self, strategy: str, settings: dict[str, str] | None = None) -> None:
        """``settings``: [filter_scheduler] options from the cloud's nova.conf (OPTIONS), as text."""
        n = nova()
        conf = n.CONF
        for name in OPTIONS:  # the process may have planned for another cloud before (the engine server)
            conf.clear_override(name, group="filter_scheduler")
        for name, value in (settings or {}).items():
            try:
                conf.set_override(name, [v.strip() for v in value.split(",")] if name == "weight_classes"
                                  else _choice_value(name, value) if name in CHOICE
                                  else float(value), group="filter_scheduler")
            except (ValueError, n.exception.NovaException) as exc:
                raise UserError(f"nova.conf [filter_scheduler] {name} = {value}: {exc}") from None
        if strategy == "pack":
            for name in PACKED:
                conf.set_override(name, -1.0, group="filter_scheduler")
        handler = n.scheduler_weights.HostWeightHandler()
        try:
            classes = handler.get_matching_classes(conf.filter_scheduler.weight_classes)
        except (ImportError, n.exception.NovaException) as exc:
            raise UserError(f"nova.conf [filter_scheduler] weight_classes: {exc}") from None
        self.weighers = [cls() for cls in classes]
        fs = conf.filter_scheduler
        for w in self.weighers:
            name = type(w).__name__
            if (name == "ImagePropertiesWeigher" and fs.image_props_weight_multiplier) or (
                    name == "MetricsWeigher" and w.setting and conf.metrics.weight_multiplier):
                raise UserError(f"the plan cannot feed Nova's {name} (what it weighs is not in an inventory): "
                                f"set its multiplier to 0 to plan")
        self.handler = handler
        self.io = next((i for i, w in enumerate(self.weighers) if type(w).__name__ == "IoOpsWeigher"), None)
        self.subset = max(1, int(fs.host_subset_size))
        self.shuffle = bool(fs.shuffle_best_same_weighed_hosts)

    def view(self, hs: HostState) -> Any:
        """What Nova's weighers read from a scheduler HostState, from the plan's host."""
        spec = hs.spec
        memory = sum(c.memory_mb for c in spec.cells)
        return SimpleNamespace(
            host=hs.name, nodename=hs.name, free_ram_mb=memory - spec.reserved_host_memory_mb - hs.mem_used,
            vcpus_total=sum(len(c.shared) for c in spec.cells), cpu_allocation_ratio=spec.cpu_allocation_ratio,
            vcpus_used=hs.flavor_vcpus_used, free_disk_mb=0, num_io_ops=len(hs.instances), failed_builds=0,
            hypervisor_version=0,
            num_instances=len(hs.instances), instances={}, pci_stats=hs.pci, cell_uuid=None, metrics=[],
            aggregates=[SimpleNamespace(metadata=spec.aggregate_metadata)] if spec.aggregate_metadata else [])

    def inputs(self, hs: HostState) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """The host's raw value (clipped to minval/maxval, as weigh_objects does) and multiplier per weigher."""
        view = self.view(hs)
        objs = [self.handler.object_class(view, 0.0)]
        return (tuple(w.weigh_objects(objs, REQUEST)[0] for w in self.weighers),
                tuple(w.weight_multiplier(view) for w in self.weighers))

    def weights(self, candidates: list[tuple[int, tuple[float, ...], tuple[float, ...]]],
                io_terms: list[float] | None = None) -> list[float]:
        """Each candidate's total weight, as BaseWeightHandler.get_weighed_objects sums it for (position, raw
        values, multipliers) in Nova's host order: per weigher, nova.weights.normalize over the candidates,
        times the host's multiplier, added in weigher order. A weigher whose every score is 0 (multipliers 0,
        or equal raw values normalised to 0) adds only zeros to the sums, which leaves them as they are: it is
        skipped. One candidate: Nova does not weigh (0.0). ``io_terms``, when given, gets each candidate's
        IoOpsWeigher term (0.0 where it adds nothing)."""
        if len(candidates) == 1:
            if io_terms is not None:
                io_terms[:] = [0.0]
            return [0.0]
        # candidates with the same inputs get the same weight (the same operations on the same values, and the
        # list's min and max are those of its distinct values): each distinct input is weighed once
        slot: dict[tuple[tuple[float, ...], tuple[float, ...]], int] = {}
        at = [slot.setdefault((c[1], c[2]), len(slot)) for c in candidates]
        distinct = list(slot)
        weights = [0.0] * len(distinct)
        io = [0.0] * len(distinct)
        raws = list(zip(*(c[0] for c in distinct), strict=True))
        mults = list(zip(*(c[1] for c in distinct), strict=True))
        for i, w in enumerate(self.weighers):
            values, m = raws[i], mults[i]
            if not any(m):
                continue
            # nova.weights.normalize's operations, in its order: maxval and minval (the weigher's, else the
            # list's), as floats; all equal normalise to 0, which adds nothing; else (x - minval) / range
            high = float(max(values) if w.maxval is None else w.maxval)
            low = float(min(values) if w.minval is None else w.minval)
            if low == high:
                continue
            span = high - low
            if i == self.io:
                for j, x in enumerate(values):
                    weights[j] += (term := m[j] * ((x - low) / span))
                    io[j] = term
                continue
            for j, x in enumerate(values):
                weights[j] += m[j] * ((x - low) / span)
        if io_terms is not None:
            io_terms[:] = [io[k] for k in at]
        return [weights[k] for k in at]

    def best(self, candidates: list[tuple[int, tuple[float, ...], tuple[float, ...]]]) -> int:
        """Of (position, raw values, multipliers) in Nova's host order, the position Nova's weighing puts
        first: the weights' stable descending sort."""
        if len(candidates) == 1:
            return candidates[0][0]
        weights = self.weights(candidates)
        top = max(weights)
        return next(c[0] for c, wt in zip(candidates, weights, strict=True) if wt == top)

    def undecided(self, weights: list[float], hosts: list[int],
                  race: tuple[list[tuple[int, tuple[float, ...], tuple[float, ...]]], list[float]] | None = None
                  ) -> tuple[list[int], str | None]:
        """Which candidates Nova may take instead of the first of the best, and why: ``weights`` per candidate,
        ``hosts`` how many hosts each candidate stands for (hosts of one group weigh alike). With
        host_subset_size N, the hosts weighing at least the N-th best weight (Nova takes one of its N first at
        random, and hosts of that weight are in its own order); with N 1, those of the best weight. Else, with
        ``race`` (the candidates and their io_terms from :meth:`weights`), those the num_io_ops race may put
        first (:meth:`io_race`). ([], None) when the weights decide."""
        if not weights:
            return [], None
        order = sorted(range(len(weights)), key=lambda j: -weights[j])
        seen, floor = 0, weights[order[0]]
        for j in order:
            floor = weights[j]
            seen += hosts[j]
            if seen >= self.subset:
                break
        chosen = [j for j in range(len(weights)) if weights[j] >= floor]
        raced = self.io_race(race[0], weights, race[1]) if race is not None else []
        if sum(hosts[j] for j in chosen) < 2:
            return (raced, IO_RACE) if raced else ([], None)
        if self.subset > 1:
            why = (f"host_subset_size {self.subset}: Nova picks at random among its {self.subset} best-weighed "
                   f"hosts (those of equal weight in its own order)")
        elif self.shuffle:
            why = "equal weight: Nova shuffles the best-weighed hosts (shuffle_best_same_weighed_hosts)"
        else:
            why = TIE
        if set(raced) - set(chosen):
            return sorted({*chosen, *raced}), f"{why}; {IO_RACE}"
        return chosen, why

    def io_race(self, candidates: list[tuple[int, tuple[float, ...], tuple[float, ...]]], weights: list[float],
                io_terms: list[float]) -> list[int]:
        """The candidates (the chosen one among them, in order) that could come first once each host's
        IoOpsWeigher term is anywhere in its range: between 0 and its multiplier for a host the plan put builds
        on (Nova may count all, some or none of them), 0 for a host with none (its count is then the least,
        which normalises to 0). [] when no other candidate can."""
        if self.io is None or len(candidates) < 2:
            return []
        k, counts = self.io, not self.weighers[self.io].minval  # minval 0 (or none): a count of 0 normalises to 0

        def reach(j: int, sign: float) -> float:  # the term's least (sign -1) or most (+1) for candidate j
            m = candidates[j][2][k]
            return 0.0 if not m or (counts and candidates[j][1][k] <= 0) else (min if sign < 0 else max)(0.0, m)

        c = weights.index(max(weights))
        floor = weights[c] - io_terms[c] + reach(c, -1)
        # reaching the chosen one's least is enough: among equal weights nova-scheduler keeps its own order. Without
        # the IoOpsWeigher term, a candidate reaches its weight less its term, plus its most (0 unless positive)
        base = list(map(operator.sub, weights, io_terms))
        if all(cand[2][k] <= 0 for cand in candidates):
            others = list(itertools.compress(range(len(base)), map(floor.__le__, base)))
        else:
            others = [j for j, b in enumerate(base) if b + reach(j, 1) >= floor]
        return others if len(others) > 1 else []  # c is always among them


def _choice_value(name: str, value: str) -> int | bool:
    if name == "host_subset_size":
        return int(value)
    low = value.strip().lower()
    if low not in ("true", "1", "on", "yes", "false", "0", "off", "no"):
        raise ValueError(f"{value!r} is not a boolean")
    return low in ("true", "1", "on", "yes")
