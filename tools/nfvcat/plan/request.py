"""What to place: VNFs (a flavor, image properties, ports, a count, a server group) forming a chain.

A placement request file (``kind: nfvcat/placement-request``)::

    vnfs:
      - name: vrouter
        flavor: vrouter-dpdk          # a catalog flavor (flavors/<name>/flavor.yaml) or an inline mapping
        image_properties: {hw_vif_multiqueue_enabled: "true"}
        ports: [{vnic_type: direct, physnet: sriov1}, {vnic_type: normal, physnet: dpdk1}]
        count: 2
        server_group: vrouter-ha
        host: compute-7               # optional: Nova's requested host (server create ``host``, 2.74)
    server_groups:
      vrouter-ha: {policy: anti-affinity}
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from nfvcat.catalog import flavors as catalog_flavors
from nfvcat.catalog.specs import stringify
from nfvcat.core import yamlpos
from nfvcat.core.errors import UserError

VNIC_TYPES = {"normal", "direct", "macvtap", "direct-physical", "virtio-forwarder", "vdpa", "remote-managed",
              "baremetal", "smart-nic", "accelerator-direct", "accelerator-direct-physical"}
GROUP_POLICIES = {"anti-affinity", "affinity", "soft-anti-affinity", "soft-affinity"}


@dataclass
class Flavor:
    name: str
    vcpus: int
    ram: int
    disk: int = 0
    extra_specs: dict[str, str] = field(default_factory=dict)
    host: dict[str, Any] = field(default_factory=dict)  # flavor.yaml 'host:' requirements (role, ...)


@dataclass
class Port:
    vnic_type: str = "normal"
    physnet: str | None = None


@dataclass
class Vnf:
    name: str
    flavor: Flavor
    image_properties: dict[str, Any] = field(default_factory=dict)
    ports: list[Port] = field(default_factory=list)
    count: int = 1
    server_group: str | None = None
    host: str | None = None  # the requested host: the filters run on it alone (Nova's ``host``, 2.74)


@dataclass
class Chain:
    source: str
    vnfs: list[Vnf]
    server_groups: dict[str, str] = field(default_factory=dict)  # name -> policy


def flavor_from_data(data: Any, where: str) -> Flavor:
    if not isinstance(data, dict):
        raise UserError(f"{where}: a flavor must be a mapping with vcpus and ram")
    try:
        vcpus, ram = int(data["vcpus"]), int(data["ram"])
    except KeyError as exc:
        raise UserError(f"{where}: flavor has no {exc.args[0]}") from None
    except (TypeError, ValueError):
        raise UserError(f"{where}: flavor vcpus and ram must be integers") from None
    if vcpus < 1 or ram < 1:
        raise UserError(f"{where}: flavor vcpus and ram must be positive")
    specs = data.get("extra_specs") or {}
    if not isinstance(specs, dict):
        raise UserError(f"{where}: extra_specs must be a mapping")
    host = data.get("host") or {}
    if not isinstance(host, dict):
        raise UserError(f"{where}: host must be a mapping")
    return Flavor(name=str(data.get("name") or os.path.basename(where)), vcpus=vcpus, ram=ram,
                  disk=int(data.get("disk") or 0), extra_specs=stringify(specs),
                  host=host)


def find_flavor(name: str, dirs: list[str] | None = None) -> Flavor:
    """A catalog flavor (entry directory, Nova name or flavor.yaml path) as the planner's Flavor; ``dirs``
    replaces the catalog's flavors/ (``nfvcat plan --flavors DIR``)."""
    found = catalog_flavors.find(name, dirs=dirs)
    return flavor_from_data(found.data, str(found.path))


def port_from_data(data: Any, where: str) -> Port:
    if isinstance(data, str):  # "direct:sriov1" or "normal"
        vnic_name, _, net = data.partition(":")
        data = {"vnic_type": vnic_name, "physnet": net or None}
    if not isinstance(data, dict):
        raise UserError(f"{where}: a port is a mapping with vnic_type and physnet")
    vnic = str(data.get("vnic_type") or "normal")
    if vnic not in VNIC_TYPES:
        raise UserError(f"{where}: unknown vnic_type '{vnic}' (one of {', '.join(sorted(VNIC_TYPES))})")
    physnet = data.get("physnet")
    return Port(vnic_type=vnic, physnet=str(physnet) if physnet else None)


def load(path: str, flavor_dirs: list[str] | None = None) -> Chain:
    data, _ = yamlpos.read_file(path, what="placement request")
    if not isinstance(data, dict) or not isinstance(data.get("vnfs"), list) or not data["vnfs"]:
        raise UserError(f"{path}: a placement request needs a non-empty 'vnfs' list")
    if data.get("kind", "nfvcat/placement-request") != "nfvcat/placement-request":
        raise UserError(f"{path}: kind must be nfvcat/placement-request")
    groups: dict[str, str] = {}
    for gname, g in (data.get("server_groups") or {}).items():
        policy = (g or {}).get("policy", "anti-affinity") if isinstance(g, dict) else str(g)
        if policy not in GROUP_POLICIES:
            raise UserError(f"{path}: server_groups/{gname}: unknown policy '{policy}'")
        groups[str(gname)] = policy
    vnfs = []
    for i, raw in enumerate(data["vnfs"]):
        where = f"{path}: vnfs/{i}"
        if not isinstance(raw, dict) or "flavor" not in raw:
            raise UserError(f"{where}: a VNF needs a flavor")
        fl = raw["flavor"]
        flavor = flavor_from_data(fl, where + "/flavor") if isinstance(fl, dict) else find_flavor(str(fl),
                                                                                                 flavor_dirs)
        group = raw.get("server_group")
        if raw.get("anti_affinity") and not group:
            group = f"{raw.get('name', f'vnf{i}')}-anti-affinity"
            groups[group] = "anti-affinity"
        if group is not None and str(group) not in groups:
            raise UserError(f"{where}: server_group '{group}' is not defined in server_groups")
        try:
            count = int(raw.get("count", 1))
        except (TypeError, ValueError):
            raise UserError(f"{where}: count must be an integer") from None
        if count < 1:
            raise UserError(f"{where}: count must be at least 1")
        props = raw.get("image_properties") or {}
        if not isinstance(props, dict):
            raise UserError(f"{where}: image_properties must be a mapping")
        ports = raw.get("ports") or []
        if not isinstance(ports, list):
            raise UserError(f"{where}: ports must be a list")
        host = raw.get("host")
        if host is not None and (not isinstance(host, str) or not host):
            raise UserError(f"{where}: host must be a host name of the inventory")
        vnfs.append(Vnf(name=str(raw.get("name") or flavor.name), flavor=flavor, image_properties=props,
                        ports=[port_from_data(p, f"{where}/ports/{j}") for j, p in enumerate(ports)],
                        count=count, server_group=str(group) if group else None, host=host))
    names = [v.name for v in vnfs]
    if len(set(names)) != len(names):
        raise UserError(f"{path}: VNF names must be unique")
    return Chain(source=path, vnfs=vnfs, server_groups=groups)
