"""The host inventory (``kind: nfvcat/inventory``): reading, schema validation and expansion.

The format follows Nova's objects: a cell is a ``NUMACell`` (cpu_dedicated_set -> pcpuset, cpu_shared_set
-> cpuset, siblings, memory, huge pages as ``NUMAPagesTopology``), a device is a ``PciDevice``.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import jsonschema

from nfvcat.catalog import units
from nfvcat.core import yamlpos
from nfvcat.core.errors import UserError

REFERENCE = "reference-inventory.yaml"
SETTINGS = ("role", "cpu_allocation_ratio", "ram_allocation_ratio", "reserved_host_memory_mb", "ovs_physnets",
            "tunneled", "physnet_numa_nodes", "tunneled_numa_nodes", "capabilities", "aggregate_metadata",
            "traits")


@dataclass
class PageSpec:
    size_kb: int
    total: int
    reserved: int = 0
    used: int = 0


@dataclass
class CellSpec:
    id: int
    socket: int | None
    dedicated: set[int]
    shared: set[int]
    siblings: list[set[int]]
    memory_mb: int
    hugepages: list[PageSpec]
    pinned: set[int] = field(default_factory=set)
    cpu_usage: int = 0
    memory_usage: int = 0
    small_pages_used_mb: int = 0


@dataclass
class VfSpec:
    count: int
    product_id: str
    vendor_id: str
    used: int = 0


@dataclass
class DeviceSpec:
    address: str
    vendor_id: str
    product_id: str
    numa_node: int | None
    kind: str = "nic"
    device: str | None = None
    physnet: str | None = None
    passthrough: str = "vfs"
    vfs: VfSpec | None = None
    used: bool = False

    def vf_addresses(self) -> list[str]:
        """Addresses of the VFs: on the PF's bus, slots 0x02 + 8 * PF function onwards."""
        if not self.vfs:
            return []
        dom, bus, slot_fn = self.address.split(":")
        fn = int(slot_fn.split(".")[1])
        return [f"{dom}:{bus}:{2 + fn * 8 + i // 8:02x}.{i % 8}" for i in range(self.vfs.count)]


@dataclass
class HostSpec:
    name: str
    index: int
    role: str
    cells: list[CellSpec]
    devices: list[DeviceSpec]
    device_spec: list[dict[str, Any]] | None
    cpu_allocation_ratio: float = 4.0
    ram_allocation_ratio: float = 1.0
    reserved_host_memory_mb: int = 0
    ovs_physnets: list[str] = field(default_factory=list)
    tunneled: bool = True
    physnet_numa_nodes: dict[str, list[int]] = field(default_factory=dict)
    tunneled_numa_nodes: list[int] = field(default_factory=list)
    capabilities: dict[str, Any] = field(default_factory=dict)
    aggregate_metadata: dict[str, str] = field(default_factory=dict)
    traits: list[str] = field(default_factory=list)
    used_vcpus: int = 0
    used_memory_mb: int = 0
    hypervisor: str = "simulated"  # simulated | libvirt (nfvcat devcloud: the machine itself, no cells given)


DEFAULT_FILTERS = ["ComputeFilter", "ComputeCapabilitiesFilter", "ImagePropertiesFilter",
                   "ServerGroupAntiAffinityFilter", "ServerGroupAffinityFilter", "AggregateInstanceExtraSpecsFilter",
                   "NUMATopologyFilter", "PciPassthroughFilter"]


@dataclass
class Inventory:
    path: str
    hosts: list[HostSpec]
    pci_alias: list[dict[str, Any]]
    enabled_filters: list[str] = field(default_factory=lambda: list(DEFAULT_FILTERS))


def parse_cpu_spec(spec: Any) -> set[int]:
    """'0-3,^2,8' -> {0, 1, 3, 8} (Nova's syntax); a list of ints is taken as is."""
    if isinstance(spec, list):
        return {int(c) for c in spec}
    wanted: set[int] = set()
    unwanted: set[int] = set()
    for part in str(spec).split(","):
        part = part.strip()
        if not part:
            continue
        target = unwanted if part.startswith("^") else wanted
        part = part.lstrip("^")
        if "-" in part:
            lo, hi = (int(x) for x in part.split("-", 1))
            if lo > hi:
                raise ValueError(f"invalid range '{part}'")
            target.update(range(lo, hi + 1))
        else:
            target.add(int(part))
    return wanted - unwanted


def cpu_spec(cpus: set[int] | list[int]) -> str:
    """{0, 1, 3, 8} -> '0-1,3,8' (Nova's syntax, parse_cpu_spec's inverse)."""
    out: list[str] = []
    for c in sorted(set(cpus)):
        if out and _last(out[-1]) == c - 1:
            first = out[-1].split("-")[0]
            out[-1] = f"{first}-{c}"
        else:
            out.append(str(c))
    return ",".join(out)


def _last(part: str) -> int:
    return int(part.split("-")[-1])


def schema() -> dict[str, Any]:
    text = resources.files("nfvcat").joinpath("data/schemas/inventory.schema.json").read_text()
    return dict(json.loads(text))


def reference_path() -> str:
    return str(resources.files("nfvcat").joinpath("data", REFERENCE))


def _schema_error(path: str, exc: jsonschema.ValidationError) -> UserError:
    where = "/" + "/".join(str(p) for p in exc.absolute_path)
    msg = exc.message if len(exc.message) < 160 else exc.message[:157] + "..."
    return UserError(f"{path}: inventory does not match the schema at {where}: {msg}")


def load(path: str | None) -> Inventory:
    path = path or reference_path()
    data, _ = yamlpos.read_file(path, what="inventory")
    return from_data(data, path)


def from_data(data: Any, path: str = "<inventory>") -> Inventory:
    if not isinstance(data, dict):
        raise UserError(f"{path}: not an inventory (expected a mapping with kind: nfvcat/inventory)")
    errors = sorted(jsonschema.Draft202012Validator(schema()).iter_errors(data),
                    key=lambda e: (len(list(e.absolute_path)), list(map(str, e.absolute_path))))
    if errors:
        deepest = max(errors, key=lambda e: len(list(e.absolute_path)))
        raise _schema_error(path, deepest)
    defaults = data.get("defaults") or {}
    hosts: list[HostSpec] = []
    for i, raw in enumerate(data["hosts"]):
        count = int(raw.get("count", 1))
        try:
            first = _host(raw, defaults, 1 if count > 1 or "{index" in raw["name"] else 0, len(hosts))
        except (ValueError, KeyError, IndexError) as exc:
            raise UserError(f"{path}: /hosts/{i}: {exc}") from None
        hosts.append(first)
        for n in range(2, count + 1):  # the same entry: the same host but for its name (what it holds is shared)
            hosts.append(dataclasses.replace(first, name=_name(raw, n), index=len(hosts)))
    names = [h.name for h in hosts]
    dup = sorted({n for n in names if names.count(n) > 1}) if len(set(names)) != len(names) else []
    if dup:
        raise UserError(f"{path}: /hosts: duplicate host name '{dup[0]}'")
    rel = os.path.relpath(path) if os.path.isabs(path) else path
    return Inventory(path=path if rel.startswith("..") else rel, hosts=hosts,
                     pci_alias=list((data.get("pci") or {}).get("alias") or []),
                     enabled_filters=list((data.get("scheduler") or {}).get("enabled_filters") or DEFAULT_FILTERS))


def _siblings(raw: Any, cpus: set[int]) -> list[set[int]]:
    if raw is None:  # no SMT: each CPU is its own core, as libvirt reports it
        return [{c} for c in sorted(cpus)]
    if isinstance(raw, dict):
        off = int(raw["offset"])
        paired = {c for c in cpus if c + off in cpus} | {c + off for c in cpus if c + off in cpus}
        return [{c, c + off} for c in sorted(cpus) if c + off in cpus] + [{c} for c in sorted(cpus - paired)]
    return [parse_cpu_spec(s) for s in raw]


def _cell(raw: dict[str, Any]) -> CellSpec:
    dedicated = parse_cpu_spec(raw.get("cpu_dedicated_set", ""))
    shared = parse_cpu_spec(raw.get("cpu_shared_set", ""))
    if dedicated & shared:
        raise ValueError(f"cell {raw['id']}: CPUs {sorted(dedicated & shared)} are both dedicated and shared")
    pages = [PageSpec(units.page_size_kib(p["size"], host=True), int(p["total"]), int(p.get("reserved", 0)),
                      int(p.get("used", 0)))
             for p in raw.get("hugepages") or []]
    huge_mb = sum(p.size_kb * p.total for p in pages) // 1024
    if huge_mb > int(raw["memory_mb"]):
        raise ValueError(f"cell {raw['id']}: huge pages ({huge_mb} MiB) exceed memory_mb")
    used = raw.get("used") or {}
    pinned = parse_cpu_spec(used.get("pinned_cpus", ""))
    if pinned - dedicated:
        raise ValueError(f"cell {raw['id']}: pinned CPUs {sorted(pinned - dedicated)} are not dedicated")
    return CellSpec(id=int(raw["id"]), socket=raw.get("socket"), dedicated=dedicated, shared=shared,
                    siblings=_siblings(raw.get("siblings"), dedicated | shared), memory_mb=int(raw["memory_mb"]),
                    hugepages=pages, pinned=pinned, cpu_usage=int(used.get("cpu_usage", 0)),
                    memory_usage=int(used.get("memory_mb", 0)),
                    small_pages_used_mb=int(used.get("small_pages_mb", 0)))


def _device(raw: dict[str, Any]) -> DeviceSpec:
    vfs = raw.get("vfs")
    vf = None
    if vfs:
        vf = VfSpec(int(vfs["count"]), vfs["product_id"].lower(), (vfs.get("vendor_id") or raw["vendor_id"]).lower(),
                    int(vfs.get("used", 0)))
        if vf.used > vf.count:
            raise ValueError(f"device {raw['address']}: {vf.used} VFs used of {vf.count}")
    return DeviceSpec(address=raw["address"].lower(), vendor_id=raw["vendor_id"].lower(),
                      product_id=raw["product_id"].lower(), numa_node=raw.get("numa_node"),
                      kind=raw.get("kind", "nic"), device=raw.get("device"), physnet=raw.get("physnet"),
                      passthrough=raw.get("passthrough", "vfs" if vf and vf.count else "pf"), vfs=vf,
                      used=bool(raw.get("used", False)))


def _name(raw: dict[str, Any], index: int) -> str:
    return str(raw["name"].format(index=index) if "{index" in raw["name"] else (
        f"{raw['name']}-{index}" if index else raw["name"]))


def _host(raw: dict[str, Any], defaults: dict[str, Any], index: int, position: int) -> HostSpec:
    merged = {k: raw.get(k, defaults.get(k)) for k in SETTINGS}
    name = _name(raw, index)
    cells = [_cell(c) for c in raw.get("numa_cells") or []]
    ids = [c.id for c in cells]
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate NUMA cell id")
    devices = [_device(d) for d in raw.get("pci_devices") or []]
    for d in devices:
        if d.numa_node is not None and d.numa_node not in ids:
            raise ValueError(f"device {d.address}: numa_node {d.numa_node} is not a cell of the host")
    used = raw.get("used") or {}
    host = HostSpec(name=name, index=position, role=merged["role"] or "compute", cells=cells, devices=devices,
                    device_spec=raw.get("device_spec"), used_vcpus=int(used.get("vcpus", 0)),
                    used_memory_mb=int(used.get("memory_mb", 0)), hypervisor=raw.get("hypervisor", "simulated"))
    for key in SETTINGS[1:]:
        if merged[key] is not None:
            setattr(host, key, merged[key])
    return host
