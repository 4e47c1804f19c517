"""Hosts grouped by signature, the groups in the order of their first host.

Hosts with the same signature (``HostState.signature``: static template, free NUMA state, PCI pools,
placement counters) get the same verdict from every filter and Nova's fit, and the same raw values from
every weigher, so Nova's normalisation over the hosts that pass needs one host of each group: its first
(lowest index) member, which also wins its group's ties. A consumed host moves to the group of its new
signature.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from typing import Any

from nfvcat.plan.hoststate import HostState


class Group:
    __slots__ = ("id", "members", "signature")

    def __init__(self, gid: int, signature: tuple[Any, ...]) -> None:
        self.id = gid
        self.signature = signature
        self.members: list[int] = []

    def entry(self) -> tuple[int, int]:
        return (self.members[0], self.id)


class HostOrder:
    def __init__(self, hosts: list[HostState], dropped: Callable[[int], None]) -> None:
        self.hosts = hosts
        self.dropped = dropped  # called with the id of a group that emptied
        self.groups: dict[tuple[Any, ...], Group] = {}
        self.by_id: dict[int, Group] = {}
        self.group_of: list[Group] = []
        self.next_id = 0
        for hs in hosts:
            g = self._group(hs)
            g.members.append(hs.index)
            self.group_of.append(g)
        self.order = sorted(g.entry() for g in self.groups.values())

    def _group(self, hs: HostState) -> Group:
        sig = hs.signature()
        g = self.groups.get(sig)
        if g is None:
            g = self.groups[sig] = self.by_id[self.next_id] = Group(self.next_id, sig)
            self.next_id += 1
        return g

    def _unlist(self, g: Group) -> None:
        del self.order[bisect.bisect_left(self.order, g.entry())]

    def moved(self, hs: HostState) -> None:
        """After the host's state changed: into the group of its new signature."""
        old = self.group_of[hs.index]
        self._unlist(old)
        del old.members[bisect.bisect_left(old.members, hs.index)]
        if old.members:
            bisect.insort(self.order, old.entry())
        else:
            del self.groups[old.signature], self.by_id[old.id]
            self.dropped(old.id)
        g = self._group(hs)
        if g.members:
            self._unlist(g)
        bisect.insort(g.members, hs.index)
        bisect.insort(self.order, g.entry())
        self.group_of[hs.index] = g
