"""What ``nfvcat preflight`` reads of a cloud (:class:`CloudFacts`), each API once: Nova's flavors with their
extra specs, host aggregates, availability zones, microversion and hypervisors; Glance's images; Neutron's agents,
extensions and QoS rule types; Heat's resource types and template versions; Placement's providers (inventories,
usages, traits). A 403 or 404 is None (unknown), never an error. From these and each host's own cells (host
access), the inventory ``plan`` places on, and what of it was estimated (:class:`Estimated`)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from nfvcat.catalog import inventory as inventory_mod
from nfvcat.cloud.connect import call

FLAVOR_MICROVERSION = "2.61"  # flavors/detail with extra_specs
HYPERVISOR_MICROVERSION = "2.53"  # service.host, cpu_info as an object (2.88 drops vcpus, memory_mb, cpu_info)


def get(adapter: Any, path: str, what: str, **kw: Any) -> Any:
    """A GET whose 403 (admin-only) or 404 (not offered) is None: unknown, never an error."""
    return call(adapter, "GET", path, what, ok=(200, 403, 404), **kw)


class CloudFacts:
    """What the cloud's APIs show, each read once on first use (None: hidden or not offered)."""

    def __init__(self, conn: Any, read_host: Any = None) -> None:
        self.conn = conn
        self.read_host = read_host  # hostaccess.reader(access): host -> (source, inventory cells) | None

    @cached_property
    def flavors(self) -> dict[str, dict[str, Any]] | None:
        body = get(self.conn.compute, "/flavors/detail?is_public=None", "flavors",
                    microversion=FLAVOR_MICROVERSION)
        return None if body is None else {f["name"]: f for f in body.get("flavors") or []}

    @cached_property
    def aggregates(self) -> list[dict[str, Any]] | None:
        body = get(self.conn.compute, "/os-aggregates", "host aggregates")
        return None if body is None or "aggregates" not in body else list(body["aggregates"])

    @cached_property
    def zones(self) -> list[str] | None:
        body = get(self.conn.compute, "/os-availability-zone", "availability zones")
        return None if body is None else sorted(z["zoneName"] for z in body.get("availabilityZoneInfo") or []
                                                if (z.get("zoneState") or {}).get("available"))

    @cached_property
    def nova_microversion(self) -> str | None:
        body = get(self.conn.compute, "/", "Nova's versions")
        version = (body or {}).get("version") or {}
        return str(version.get("version") or "") or None

    def images(self, name: str) -> list[dict[str, Any]]:
        body = get(self.conn.image, f"/images?name={name}", f"image {name}") or {}
        return list(body.get("images") or [])

    @cached_property
    def agents(self) -> list[dict[str, Any]] | None:
        body = get(self.conn.network, "/agents", "Neutron agents")
        return None if body is None or "agents" not in body else list(body["agents"])

    @cached_property
    def extensions(self) -> set[str] | None:
        body = get(self.conn.network, "/extensions", "Neutron extensions")
        return None if body is None else {str(e.get("alias")) for e in body.get("extensions") or []}

    @cached_property
    def qos_rule_types(self) -> set[str] | None:
        if self.extensions is not None and "qos" not in self.extensions:
            return set()
        body = get(self.conn.network, "/qos/rule-types", "QoS rule types")
        return None if body is None else {str(r.get("type")) for r in body.get("rule_types") or []}

    @cached_property
    def resource_types(self) -> set[str] | None:
        body = get(self.conn.orchestration, "/resource_types", "Heat resource types")
        return None if body is None else {str(t) for t in body.get("resource_types") or []}

    @cached_property
    def template_versions(self) -> set[str] | None:
        body = get(self.conn.orchestration, "/template_versions", "Heat template versions")
        return None if body is None else {str(v.get("version")) for v in body.get("template_versions") or []}

    @cached_property
    def hypervisors(self) -> list[dict[str, Any]] | None:
        body = get(self.conn.compute, "/os-hypervisors/detail", "hypervisors", microversion=HYPERVISOR_MICROVERSION)
        if body is None or "hypervisors" not in body:
            return None
        return [{"name": h.get("hypervisor_hostname"), "host": (h.get("service") or {}).get("host"),
                 "cpu_info": h.get("cpu_info"), "vcpus": h.get("vcpus"), "memory_mb": h.get("memory_mb"),
                 "state": h.get("state"), "status": h.get("status")} for h in body["hypervisors"]]

    @cached_property
    def providers(self) -> dict[str, dict[str, Any]] | None:
        body = get(self.conn.placement, "/resource_providers", "resource providers")
        if body is None or "resource_providers" not in body:
            return None
        out = {}
        for rp in body["resource_providers"]:
            uuid = rp["uuid"]
            inv = (get(self.conn.placement, f"/resource_providers/{uuid}/inventories", "inventories") or {})
            traits = get(self.conn.placement, f"/resource_providers/{uuid}/traits", "traits",
                          microversion="1.6") or {}
            usages = get(self.conn.placement, f"/resource_providers/{uuid}/usages", "usages") or {}
            out[rp["name"]] = {"inventories": inv.get("inventories") or {}, "traits": traits.get("traits") or [],
                               "usages": usages.get("usages") or {}}
        return out

    @cached_property
    def collected(self) -> tuple[dict[str, Any], dict[str, tuple[str, list[dict[str, Any]]]]] | None:
        """The inventory data of the hosts that are up and enabled (``nfvcat.plan.collect``: estimated cells, or
        each host's own with host access; Placement's usages; each host's aggregate metadata, merged as Nova's
        filters merge it), and the hosts whose cells were read on the host. None: hypervisors or Placement's
        providers hidden (admin), or no host up."""
        from nfvcat.plan import collect

        if self.hypervisors is None or self.providers is None:
            return None
        up = [h for h in self.hypervisors if h.get("state") in (None, "up") and h.get("status") in (None, "enabled")]
        if not up:
            return None
        measured: collect.Measured = {}
        for hv in up:
            name = str(hv["host"] or hv["name"])
            got = self.read_host(name) if self.read_host else None
            if got is not None:
                measured[name] = got
        data = collect.build(up, self.providers, self.agents or [], measured)
        by_name = {str(h["host"] or h["name"]): h["name"] for h in up}
        merged = host_aggregate_metadata(self.aggregates or [])
        for host in data["hosts"]:
            usages = (self.providers.get(by_name.get(host["name"], "")) or {}).get("usages") or {}
            if host["name"] not in measured:  # Nova's own record already counts the host's guests
                host["used"] = {"vcpus": int(usages.get("VCPU") or 0), "memory_mb": int(usages.get("MEMORY_MB") or 0)}
            meta = merged.get(host["name"])
            if meta:
                host["aggregate_metadata"] = {k: ",".join(sorted(v)) for k, v in meta.items()}
        return data, measured

    @cached_property
    def inventory(self) -> tuple[inventory_mod.Inventory, Estimated] | None:
        """The collected inventory, loaded, and what of it was estimated."""
        if self.collected is None:
            return None
        data, measured = self.collected
        estimated = Estimated({h["name"] for h in data["hosts"] if h["name"] not in measured},
                              {h["name"] for h in data["hosts"]}, self.aggregates is None)
        return inventory_mod.from_data(data, "the cloud's inventory"), estimated


# reasons of the plan that API facts decide (aggregates, agents, traits, groups): never estimated
CERTAIN = {"aggregate", "anti-affinity", "affinity", "port-binding", "traits", "role", "capabilities", "invalid"}


@dataclass
class Estimated:
    """What of the collected inventory no API showed: the hosts whose NUMA cells (CPU sets, huge pages, usage per
    cell) were estimated (no host access), and those whose PCI devices were (every host: no API lists a host's
    devices, and the host access reads cells only; VFs are estimated from the SR-IOV agents' device counts)."""
    cells: set[str]
    devices: set[str]
    aggregates: bool = False  # the aggregates are admin-only: no host's metadata is known

    def decides(self, host: str, code: str) -> bool:
        """Whether a reason of this code on this host rests on something estimated."""
        if code == "aggregate":
            return self.aggregates
        if code.startswith("pci") or code == "vswitch-numa":
            return host in self.devices or host in self.cells
        return code not in CERTAIN and host in self.cells

    def why(self, host: str, code: str = "") -> str:
        if code == "aggregate" and self.aggregates:
            return "the host aggregates are admin-only"
        return ("NUMA cells and huge pages estimated (no host access)" if host in self.cells else
                "its PCI devices and their NUMA nodes estimated (no API shows them; VFs from the SR-IOV agent)")


def host_aggregate_metadata(aggs: list[dict[str, Any]]) -> dict[str, dict[str, set[str]]]:
    """Each host's aggregate metadata as Nova's filters merge it (scheduler.filters.utils
    .aggregate_metadata_get_by_host): per key, the values of all its aggregates, comma lists split."""
    out: dict[str, dict[str, set[str]]] = {}
    for agg in aggs:
        for host in agg.get("hosts") or []:
            meta = out.setdefault(str(host), {})
            for k, v in (agg.get("metadata") or {}).items():
                meta.setdefault(str(k), set()).update(x.strip() for x in str(v).split(","))
    return out
