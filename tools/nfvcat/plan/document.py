"""The plan of a HOT template on a host inventory (the reference inventory unless told) as plain data: the
document ``nfvcat plan TEMPLATE -e ENV --format json`` prints, made by the same calls, with what a drawing of it
needs besides: each VNF's flavor figures, the NUMA cells of the hosts it uses, and the inventory's PCI aliases
(which name a VF that is not a NIC's, a QAT VF say). The catalog site draws it (nfvcat.packaging.site)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nfvcat.catalog import inventory
from nfvcat.core.errors import UserError
from nfvcat.plan import hot_reader, output
from nfvcat.plan.demand import page_label
from nfvcat.plan.planner import Planner


def _cells(host: inventory.HostSpec) -> list[dict[str, Any]]:
    return [{"id": c.id, "socket": c.socket, "dedicated_cpus": len(c.dedicated), "shared_cpus": len(c.shared),
             "memory_mb": c.memory_mb,
             "hugepages": [{"size": page_label(p.size_kb), "total": p.total, "reserved": p.reserved}
                           for p in c.hugepages]}
            for c in host.cells]


def of_template(template: Path, environment: Path | None = None, root: Path | None = None,
                inventory_path: str | None = None, strategy: str = "spread") -> dict[str, Any]:
    """The plan document of ``template`` with ``environment``'s parameters; a template the planner cannot read
    (no server to place, a flavor it cannot resolve) gives ``{"error": message}``, plan's own one line."""
    inv = inventory.load(inventory_path)
    data = hot_reader.read_yaml(template)
    try:
        chain = hot_reader.from_template(str(template), data, [environment] if environment else [], {}, None, root)
        planner = Planner(inv, strategy)
    except UserError as exc:
        return {"error": str(exc)}
    result = planner.place_chain(chain)
    doc = output.plan_doc(result, output.meta(inv.path, len(inv.hosts), chain.source, strategy,
                                              inv.enabled_filters))
    doc["vnfs"] = {v.name: {"flavor": v.flavor.name, "vcpus": v.flavor.vcpus, "ram_mb": v.flavor.ram,
                            "count": v.count} for v in chain.vnfs}
    used = {p.host for p in result.placements}
    doc["host_cells"] = {h.name: {"role": h.role, "cells": _cells(h)} for h in inv.hosts if h.name in used}
    doc["pci_alias"] = list(inv.pci_alias)
    return doc
