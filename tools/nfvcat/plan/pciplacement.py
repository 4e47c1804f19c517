"""PCI devices tracked in Placement (nova.conf ``[filter_scheduler] pci_in_placement``, as the dev cloud runs it).

There, each device a flavor's PCI alias asks for is a request group of its own (Nova's
``RequestSpec.generate_request_groups_from_pci_requests``; SR-IOV ports stay outside Placement). Placement
answers with allocation candidates, each naming one resource provider per group: a PF (its VFs) or a device.
Nova's NUMATopologyFilter keeps the candidates ``numa_fit_instance_to_host`` accepts with that candidate's
provider mapping, the scheduler claims the first one left, and the compute node's claim takes its devices
from that provider: the provider, and with it the guest's NUMA cell, is the first fitting candidate in
Placement's order.

That order is not Nova's and no inventory holds it: Placement returns ``list()`` of a Python set of candidates
(``placement.objects.allocation_candidate._merge_candidates``) whose hashes mix resource-class names, so it
follows the Placement process's string-hash seed (PYTHONHASHSEED, random unless set). ``ask`` takes it from the
cloud's Placement (GET /allocation_candidates with the scheduler's own query, built by Nova's
``ResourceRequest``). Offline the candidates are tried in provider address order and a placement names the other
cells Nova may choose (``Placement.other_numa_cells``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nfvcat.plan.novaenv import nova

# Nova's scheduler asks at the microversion of same_subtree (nova.scheduler.client.report.SAME_SUBTREE_VERSION)
MICROVERSION = "1.36"


def tracked(requests: list[Any]) -> list[Any]:
    """The requests Placement allocates: a flavor alias's (a port's stay Nova's own PCI claim)."""
    alias = nova().objects.InstancePCIRequest.FLAVOR_ALIAS
    return [r for r in requests if r.source == alias]


def groups(requests: list[Any]) -> list[tuple[str, Any]]:
    """(requester id, request) per device, as Nova names the request groups: ``{request_id}-{i}``."""
    return [(f"{r.request_id}-{i}", r) for r in tracked(requests) for i in range(r.count)]


@dataclass
class Candidates:
    """The allocation candidates' PCI provider mappings per request and host, in the order Nova tries them.

    ``asked``: (the requests' key, host name) -> mappings in the cloud's Placement order; None offline, where
    every combination of the host's matching providers is tried in address order."""

    asked: dict[tuple[str, str], list[dict[str, list[str]]]] | None = None

    @property
    def known(self) -> bool:
        return self.asked is not None

    def mappings(self, requests: list[Any], hs: Any) -> list[dict[str, list[str]]]:
        wanted = groups(requests)
        if not wanted:
            return []
        if self.asked is not None:
            return self.asked.get((key(requests), hs.name), [])
        if hs.pci is None:
            return []
        providers = [sorted({str(p["rp_uuid"]) for p in hs.pci._filter_pools_for_spec(hs.pci.pools, r)
                             if "rp_uuid" in p}) for _, r in wanted]
        names = [g for g, _ in wanted]
        return [{g: [rp] for g, rp in zip(names, combo, strict=True)} for combo in itertools.product(*providers)]


def key(requests: list[Any]) -> str:
    return ",".join(g for g, _ in groups(requests))


def tag_pools(pools: list[dict[str, Any]]) -> None:
    """Each pool's resource provider, as Nova's PCI-in-Placement pools carry it: the PF (or device) address
    the pool is split by (``PciDeviceStats._create_pool_keys_from_dev``). Devices with a physnet are Neutron's
    SR-IOV ports', which Nova keeps out of Placement (``pci_placement_translator``): their pools have none (the
    dev cloud's compute_nodes.pci_stats, read on 2026-11-26, are so)."""
    for p in pools:
        if not p.get("physical_network"):
            p["rp_uuid"] = str(p["address"])


def query(d: Any) -> str:
    """The scheduler's GET /allocation_candidates query string for a demand (Nova's own ResourceRequest)."""
    n = nova()
    o = n.objects
    spec = o.RequestSpec(flavor=d.flavor, image=d.image, is_bfv=False, requested_resources=[],
                         pci_requests=o.InstancePCIRequests(requests=tracked(d.pci_requests)),
                         numa_topology=d.topology)
    spec.generate_request_groups_from_pci_requests()
    return str(n.scheduler_utils.ResourceRequest.from_request_spec(spec).to_querystring())


def ask(get: Callable[[str], Any], demands: list[Any], hosts: list[Any]) -> Candidates:
    """The cloud's Placement order for each demand with devices Placement tracks. ``get``: a GET of a
    Placement path at MICROVERSION, answering its JSON (admin: resource providers). A provider is matched to a
    host by Nova's names: the compute node's root provider is the host's hypervisor name, a PCI provider
    ``<root>_<ADDRESS>``."""
    names = {h.name for h in hosts}
    providers = get("/resource_providers").get("resource_providers", [])
    by_uuid = {p["uuid"]: p for p in providers}
    asked: dict[tuple[str, str], list[dict[str, list[str]]]] = {}
    for d in demands:
        if d.invalid or not groups(d.pci_requests):
            continue
        answer = get("/allocation_candidates?" + query(d))
        for cand in answer.get("allocation_requests", []):
            roots = {by_uuid[u]["root_provider_uuid"] for u in cand["allocations"] if u in by_uuid}
            host = next((by_uuid[r]["name"] for r in roots if by_uuid.get(r, {}).get("name") in names), None)
            if host is None:
                continue
            mapping = {}
            for group, rps in (cand.get("mappings") or {}).items():
                if group:
                    mapping[group] = [_address(by_uuid.get(rp, {}).get("name", ""), host) for rp in rps]
            asked.setdefault((key(d.pci_requests), host), []).append(mapping)
    return Candidates(asked)


def _address(name: str, host: str) -> str:
    """``devcloud-smt_0000:3D:00.0`` -> ``0000:3d:00.0`` (the pool's address)."""
    return name[len(host) + 1:].lower() if name.startswith(f"{host}_") else name

