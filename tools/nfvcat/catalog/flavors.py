"""Catalog flavors: the one loader of flavor files, and the three forms an operator uses: an
``OS::Nova::Flavor`` resource for HOT, an ``openstack flavor create`` command line, and the nova.conf /
kernel settings the compute host needs."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from nfvcat import catalog
from nfvcat.catalog.specs import stringify
from nfvcat.core import yamlpos
from nfvcat.core.errors import UserError


@dataclass
class CatalogFlavor:
    entry: str  # the directory name, e.g. nfv-pinned-1g
    path: Path
    data: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.data.get("name") or self.entry)

    def specs(self) -> dict[str, str]:
        return stringify(self.data.get("extra_specs") if isinstance(self.data.get("extra_specs"), dict) else {})

    def pci_aliases(self) -> list[str] | None:
        return pci_aliases(self.data)


def pci_aliases(data: Any) -> list[str] | None:
    """The ``[pci] alias`` entries a flavor's ``host`` section states, as the JSON strings Nova reads."""
    host = data.get("host") if isinstance(data, dict) else None
    if not isinstance(host, dict):
        return None
    flat = host.get("pci_alias")
    if isinstance(flat, list) and flat:
        return [a if isinstance(a, str) else json.dumps(a) for a in flat]
    for holder in (host, host.get("nova_conf"), host.get("nova.conf")):
        pci = holder.get("pci") if isinstance(holder, dict) else None
        alias = pci.get("alias") if isinstance(pci, dict) else None
        if isinstance(alias, list) and alias:
            return [a if isinstance(a, str) else json.dumps(a) for a in alias]
    return None


def load_file(path: Path) -> CatalogFlavor:
    """One flavor file (``flavors/<entry>/flavor.yaml``, or any file of that form)."""
    data, _ = yamlpos.read_file(path, what="flavor")
    if not isinstance(data, dict):
        raise UserError(f"{path}: a flavor is a mapping with vcpus, ram and extra_specs")
    return CatalogFlavor(path.parent.name, path, data)


def flavor_dirs(root: Path | None = None, extra: list[str] | None = None) -> list[Path]:
    """Where flavors are looked up: the directories given (``nfvcat plan --flavors DIR``), else the catalog's."""
    if extra:
        return [Path(d) for d in extra]
    return [(root or catalog.require_root()) / "flavors"]


def flavor_files(root: Path | None = None, dirs: list[str] | None = None) -> list[Path]:
    return [path for d in flavor_dirs(root, dirs) for path in sorted(d.glob("*/flavor.yaml"))]


def all_flavors(root: Path | None = None, dirs: list[str] | None = None) -> list[CatalogFlavor]:
    return [load_file(path) for path in flavor_files(root, dirs)]


def by_name(root: Path | None, read: Callable[[Path], Any]) -> dict[str, dict[str, Any]]:
    """Nova name -> data of the catalog's flavors, read by ``read`` (the validator's reader, which gives None
    for a file that does not read: it reports that itself); {} outside a catalog."""
    if root is None:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for path in flavor_files(root):
        data = read(path)
        if isinstance(data, dict) and isinstance(data.get("name"), str):
            out[data["name"]] = data
    return out


def find(name: str, root: Path | None = None, dirs: list[str] | None = None) -> CatalogFlavor:
    """A flavor by file path, entry directory name or Nova name."""
    if name.endswith((".yaml", ".yml")) and Path(name).is_file():
        return load_file(Path(name))
    flavors = all_flavors(root, dirs)
    for f in flavors:
        if name in (f.entry, f.name):
            return f
    raise UserError(f"no catalog flavor '{name}' (known: {', '.join(f.entry for f in flavors)})")


def as_cli(f: CatalogFlavor) -> str:
    """The ``openstack flavor create`` line (microversion 2.86: Nova validates the extra specs)."""
    d = f.data
    lines = [["openstack", "--os-compute-api-version", "2.86", "flavor", "create"],
             ["--vcpus", str(d["vcpus"]), "--ram", str(d["ram"]), "--disk", str(d.get("disk", 0))]]
    if d.get("ephemeral"):
        lines[-1] += ["--ephemeral", str(d["ephemeral"])]
    lines[-1].append("--public" if d.get("is_public", True) else "--private")
    if d.get("description"):
        lines.append(["--description", " ".join(str(d["description"]).split())])
    lines += [["--property", f"{key}={value}"] for key, value in f.specs().items()]
    lines.append([f.name])
    return " \\\n    ".join(" ".join(shlex.quote(a) for a in line) for line in lines)


def as_hot(f: CatalogFlavor) -> str:
    """A HOT template holding the flavor as an ``OS::Nova::Flavor`` (paste the resource into a template)."""
    d = f.data
    props: dict[str, Any] = {"name": f.name, "vcpus": d["vcpus"], "ram": d["ram"], "disk": d.get("disk", 0),
                             "is_public": bool(d.get("is_public", True)), "extra_specs": f.specs()}
    if d.get("ephemeral"):
        props["ephemeral"] = d["ephemeral"]
    resource = f.entry.replace("-", "_")
    tpl = {"heat_template_version": "2021-04-16",
           "description": f"Catalog flavor {f.entry} ({f.name}), rendered by nfvcat flavor render --as hot",
           "resources": {resource: {"type": "OS::Nova::Flavor", "properties": props}},
           "outputs": {"flavor_id": {"description": "ID of the flavor.", "value": {"get_resource": resource}}}}
    return yaml.safe_dump(tpl, sort_keys=False, width=120)


def as_host(f: CatalogFlavor) -> str:
    """What a compute host needs for the flavor: nova.conf options, kernel arguments, OVS-DPDK settings."""
    host = f.data.get("host") or {}
    conf: dict[str, list[str]] = {}
    for item in host.get("reserved_huge_pages") or []:  # a multi-valued option: one line per NUMA node
        conf.setdefault("DEFAULT", []).append(f"reserved_huge_pages = {item}")
    for key in ("cpu_dedicated_set", "cpu_shared_set"):
        if host.get(key):
            conf.setdefault("compute", []).append(f"{key} = {host[key]}")
    for key, option in (("pci_alias", "alias"), ("pci_device_spec", "device_spec")):
        for item in host.get(key) or []:
            conf.setdefault("pci", []).append(f"{option} = {json.dumps(item, separators=(',', ':'))}")
    if host.get("scheduler_filters"):
        conf.setdefault("filter_scheduler", []).append(
            "enabled_filters = " + ",".join(host["scheduler_filters"]))
    lines = [f"# compute host for catalog flavor {f.entry} ({f.name})", "# nova.conf"]
    for section, options in conf.items():
        lines += [f"[{section}]", *options]
    if host.get("kernel_args"):
        lines += ["# kernel command line", " ".join(host["kernel_args"])]
    if host.get("realtime_kernel"):
        lines.append("# a real-time (PREEMPT_RT) kernel is required")
    if host.get("ovs_dpdk"):
        lines.append("# OVS-DPDK (ovs-vsctl set Open_vSwitch . other_config:KEY=VALUE)")
        lines += [f"{k} = {v}" for k, v in host["ovs_dpdk"].items() if k != "note"]
    return "\n".join(lines) + "\n"
