"""BaseHOT for a VNF package, generated from the catalog: one source for HOT, CSAR and lifecycle.

A vnfd entry's ``basehot.yaml`` names the catalog HOT entry its VDU is (``catalog``), the VDU
(``vdu``), what the top template passes to each of the catalog template's parameters (``properties``),
mostly from Tacker's ``nfv`` map, and which catalog resource is which VNFD node (``resources``: the server
is the VDU, each port a VduCp). From that, the VNFD and the catalog template, ``basehot_files`` returns,
by member name:

- ``BaseHOT/<flavour>/<entry name>.yaml``: the top template Tacker's LCM creates. One ``nfv`` parameter
  (type json, built by the package's UserData), the catalog parameters listed in ``additional_params``
  (their definitions copied from the catalog template; Tacker fills them from ``additionalParams``), an
  ``OS::Nova::Flavor`` from the VDU's ``virtual_compute`` (vCPUs, memory, local disk, ``nova_extra_specs``),
  a network and subnet per internal ``VnfVirtualLink`` (named after it), the VDU as a resource of the
  catalog template's type, and every catalog output passed through. A VDU the VNFD scales (a target of a
  ``VduScalingAspectDeltas``, :mod:`scaling`) is the member of ``<VDU>_scale_group``, an
  ``OS::Heat::AutoScalingGroup`` sized by ``nfv.VDU.<VDU>.desired_capacity`` (which Tacker's v2 scale sets),
  ``min_size``/``max_size`` from its ``vdu_profile``, as in Tacker's v2 samples; its outputs are then lists, one
  item per member.
- ``BaseHOT/<flavour>/nested/<template>``: the catalog template with its resources renamed after the VNFD
  nodes (``server`` -> the VDU id, each port -> its VduCp id; every ``get_resource``, ``get_attr`` and
  ``depends_on`` follows), nothing else changed. Tacker's v2 LCM (sol_refactored
  ``infra_drivers/openstack``) reads the stack's resources (nested_depth 2) and reports an
  ``OS::Nova::Server`` as a ``vnfcResourceInfo`` only when its resource name is a VDU of the flavour, a
  port as a VNFC CP / ``extCpInfo`` only when its name is a VduCp and it is required by that server in
  the same nested stack, and heals a VNFC by marking the resource named after the VDU unhealthy in that
  stack. Its resource type in the top template is the bare file name: Tacker sends each
  ``nested/*.yaml`` to Heat under its file name in the stack's ``files``.
- every file the catalog template ``get_file``s, byte for byte, at the path that ``get_file`` names seen
  from ``nested/``: ``../../../hooks/vrouter/user-data.yaml`` is ``hooks/vrouter/user-data.yaml`` at the
  root of the CSAR, so no path is rewritten. A path that would leave the CSAR is an error.

The VNFD must declare what the BaseHOT makes and nothing more: every VduCp of the VDU is a renamed port,
the server resource is the VDU id and the server is named after the VDU's ``name`` (the catalog parameter
its ``name`` comes from must be set to it), and
a ``Vdu.VirtualBlockStorage`` the stack does not create is an error (the VDU boots from the image of its own
``sw_image_data`` onto the flavor's local disk).
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path
from typing import Any

import yaml

from nfvcat.catalog import entries, specs, units
from nfvcat.core.errors import UserError
from nfvcat.packaging import scaling

MAPPING_FILE = "basehot.yaml"


class _Dumper(yaml.SafeDumper):
    """Block style, keys in the order built, long strings not folded."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = None
    if "\n" in value.rstrip("\n"):
        style = "|"
    elif value.endswith("\n"):
        style = ">"  # a folded description, as the catalog writes them
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


def _list(dumper: yaml.SafeDumper, value: list[Any]) -> yaml.SequenceNode:
    short = all(isinstance(v, (str, int)) for v in value) and len(str(value)) <= 60
    return dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=short)


_Dumper.add_representer(str, _str)
_Dumper.add_representer(list, _list)


def walk(node: Any, key: str) -> list[Any]:
    """Every argument of the intrinsic function ``key`` in a template, in document order."""
    found: list[Any] = []
    if isinstance(node, dict):
        for k, v in node.items():
            if k == key:
                found.append(v)
            found.extend(walk(v, key))
    elif isinstance(node, list):
        for v in node:
            found.extend(walk(v, key))
    return found


def _load(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except (OSError, yaml.YAMLError) as exc:
        raise UserError(f"{path}: {exc}") from None


def read_mapping(entry_dir: Path) -> dict[str, Any] | None:
    path = entry_dir / MAPPING_FILE
    if not path.is_file():
        return None
    data = _load(path)
    if not isinstance(data, dict):
        raise UserError(f"{path}: not a mapping")
    for key in ("catalog", "vdu"):
        if not isinstance(data.get(key), str):
            raise UserError(f"{path}: '{key}' is missing")
    if not isinstance(data.get("properties", {}), dict):
        raise UserError(f"{path}: 'properties' must be a mapping")
    if not isinstance(data.get("additional_params", []), list):
        raise UserError(f"{path}: 'additional_params' must be a list")
    # none at all: a first release's mapping (only in a release's tree), its template nested byte for byte
    old = "resources" not in data and entries.release_rules(entry_dir) is not None
    res = data.get("resources", {} if old else None)
    if not isinstance(res, dict) or (not old and not res) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in res.items()):
        raise UserError(f"{path}: 'resources' must map catalog resource names to VNFD node names "
                        "(the server to the VDU, each port to its VduCp)")
    nets = data.get("ext_networks", {})
    if not isinstance(nets, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in nets.items()):
        raise UserError(f"{path}: 'ext_networks' must map external CPs to network names")
    return data


def _rename_refs(node: Any, names: dict[str, str]) -> Any:
    """``node`` with every get_resource, get_attr and depends_on naming a renamed resource following it."""
    if isinstance(node, list):
        return [_rename_refs(v, names) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[Any, Any] = {}
    for k, v in node.items():
        if k == "get_resource" and isinstance(v, str):
            out[k] = names.get(v, v)
        elif k == "get_attr" and isinstance(v, list) and v and isinstance(v[0], str):
            out[k] = [names.get(v[0], v[0]), *_rename_refs(v[1:], names)]
        elif k == "depends_on" and isinstance(v, (str, list)):
            out[k] = names.get(v, v) if isinstance(v, str) else [names.get(d, d) for d in v]
        else:
            out[k] = _rename_refs(v, names)
    return out


def _nodes_of(nodes: dict[str, Any], node_type: str) -> list[str]:
    return [n for n, d in nodes.items() if isinstance(d, dict) and d.get("type") == node_type]


def _bound_to(node: dict[str, Any], requirement: str) -> list[str]:
    return [r[requirement] for r in node.get("requirements") or []
            if isinstance(r, dict) and isinstance(r.get(requirement), str)]


def nested_template(catalog: dict[str, Any], mapping: dict[str, Any], nodes: dict[str, Any],
                    nested_name: str) -> dict[str, Any]:
    """The catalog template with its server and ports renamed after the VDU and its VduCps (see above)."""
    vdu = mapping["vdu"]
    names: dict[str, str] = dict(mapping["resources"])
    resources = catalog.get("resources") or {}
    types = {"tosca.nodes.nfv.Vdu.Compute": "OS::Nova::Server", "tosca.nodes.nfv.VduCp": "OS::Neutron::Port"}
    for old, new in names.items():
        res = resources.get(old)
        if not isinstance(res, dict):
            raise UserError(f"basehot.yaml: resources: {old} is not a resource of {nested_name}")
        node_type = (nodes.get(new) or {}).get("type") if isinstance(nodes.get(new), dict) else None
        if node_type not in types:
            raise UserError(f"basehot.yaml: resources: {new} is not a VDU or VduCp of the flavour")
        if res.get("type") != types[node_type]:
            raise UserError(f"basehot.yaml: resources: {old} is a {res.get('type')}, {new} needs a {types[node_type]}")
        if new in resources and new not in names:
            raise UserError(f"basehot.yaml: resources: {new} is already a resource of {nested_name}")
    if len(set(names.values())) != len(names):
        raise UserError("basehot.yaml: resources: two catalog resources renamed to one VNFD node")
    if vdu not in names.values():
        raise UserError(f"basehot.yaml: resources: no server is the VDU {vdu}")
    cps = [n for n in _nodes_of(nodes, "tosca.nodes.nfv.VduCp") if vdu in _bound_to(nodes[n], "virtual_binding")]
    missing = sorted(set(cps) - set(names.values()))
    if missing:
        raise UserError(f"basehot.yaml: resources: no port is the VduCp {', '.join(missing)} (Tacker would "
                        "report no connection point for it)")
    storage = _nodes_of(nodes, "tosca.nodes.nfv.Vdu.VirtualBlockStorage")
    if storage:
        raise UserError(f"VNFD: {', '.join(storage)}: a virtual storage the BaseHOT does not create (the VDU "
                        "boots from its image on the flavor's local disk: put sw_image_data on the VDU)")
    server_name = ((resources[next(o for o, n in names.items() if n == vdu)].get("properties") or {})
                   .get("name"))
    param = server_name.get("get_param") if isinstance(server_name, dict) else None
    vdu_name = (nodes[vdu].get("properties") or {}).get("name")
    if isinstance(param, str) and (mapping.get("properties") or {}).get(param) != vdu_name:
        raise UserError(f"basehot.yaml: properties: {param} must be {vdu_name!r}, the name of the VDU {vdu} "
                        "(the server is named after its VDU)")
    out = dict(catalog)
    out["resources"] = {names.get(k, k): _rename_refs(v, names) for k, v in resources.items()}
    if "outputs" in catalog:
        out["outputs"] = _rename_refs(catalog["outputs"], names)
    return out


def catalog_template(entry_dir: Path, mapping: dict[str, Any]) -> Path:
    """The catalog HOT entry's main template (``template`` of its entry.yaml)."""
    entry = entries.load((entry_dir / mapping["catalog"]).resolve())
    if entry.kind != "heat":
        raise UserError(f"{entry.dir}: not a catalog HOT entry (kind: heat)")
    return entry.template


def vnfd_topology(entry_dir: Path, template: str, flavour: str) -> dict[str, Any]:
    """The ``topology_template`` of the deployment flavour's VNFD file (the file substituting the VNF node type
    with that flavour_id), found next to the entry's top-level VNFD."""
    definitions = (entry_dir / template).parent
    for path in sorted(definitions.glob("*.yaml")):
        data = _load(path)
        topo = data.get("topology_template") if isinstance(data, dict) else None
        if not isinstance(topo, dict):
            continue
        sub = topo.get("substitution_mappings")
        if isinstance(sub, dict) and (sub.get("properties") or {}).get("flavour_id") == flavour:
            return topo
    raise UserError(f"{definitions}: no VNFD for deployment flavour '{flavour}'")


def vnfd_flavour(entry_dir: Path, template: str, flavour: str) -> dict[str, Any]:
    """The node templates of the deployment flavour's VNFD file."""
    return vnfd_topology(entry_dir, template, flavour).get("node_templates") or {}


def vnfd_scaling(entry_dir: Path, template: str, flavour: str) -> scaling.Scaling:
    """The deployment flavour's scaling model (aspects, deltas, instantiation levels)."""
    return scaling.model(vnfd_topology(entry_dir, template, flavour))


def _flavor(vdu: str, node: dict[str, Any]) -> dict[str, Any]:
    props = (((node.get("capabilities") or {}).get("virtual_compute") or {}).get("properties") or {})
    try:
        vcpus = props["virtual_cpu"]["num_virtual_cpu"]
        ram = units.tosca_size(props["virtual_memory"]["virtual_mem_size"], "MiB")
        storage = props.get("virtual_local_storage") or []
        disk = units.tosca_size(storage[0]["size_of_storage"], "GiB") if storage else 0
    except (KeyError, TypeError):
        raise UserError(f"{vdu}: virtual_compute needs virtual_cpu.num_virtual_cpu and "
                        "virtual_memory.virtual_mem_size") from None
    except units.SizeError as exc:
        raise UserError(f"{vdu}: {exc}") from None
    raw = (props.get("compute_requirements") or {}).get("nova_extra_specs") or {}
    extra = specs.sol001_specs(raw)
    if extra is None:
        raise UserError(f"{vdu}: nova_extra_specs is not a mapping (nor a YAML/JSON string of one)")
    flavor: dict[str, Any] = {"vcpus": vcpus, "ram": ram, "disk": disk}
    if extra:
        flavor["extra_specs"] = specs.stringify(extra)
    return {"type": "OS::Nova::Flavor", "properties": flavor}


def _internal_vl(node: dict[str, Any]) -> dict[str, Any]:
    for proto in ((node.get("properties") or {}).get("vl_profile") or {}).get("virtual_link_protocol_data") or []:
        l3 = (proto or {}).get("l3_protocol_data") or {}
        if l3.get("cidr"):
            return {"ip_version": 6 if str(l3.get("ip_version")) == "ipv6" else 4, "cidr": l3["cidr"],
                    "enable_dhcp": bool(l3.get("dhcp_enabled", True))}
    return {}


def hook_members(template: Path, nested_dir: str) -> dict[str, Path]:
    """Member name in the CSAR -> source file, for every ``get_file`` of the catalog template."""
    found: dict[str, Path] = {}
    for ref in walk(_load(template), "get_file"):
        if not isinstance(ref, str) or "://" in ref:
            raise UserError(f"{template}: get_file {ref!r} is not a relative path")
        member = posixpath.normpath(posixpath.join(nested_dir, ref))
        if member.startswith("../") or posixpath.isabs(member):
            raise UserError(f"{template}: get_file {ref} would lie outside the package (as {member})")
        source = Path(os.path.normpath(template.parent / ref))
        if not source.is_file():
            raise UserError(f"{template}: get_file {ref}: no such file {source}")
        found[member] = source
    return found


def top_template(entry: dict[str, Any], mapping: dict[str, Any], catalog: dict[str, Any],
                 topology: dict[str, Any], nested_name: str) -> dict[str, Any]:
    vdu = mapping["vdu"]
    nodes = topology.get("node_templates") or {}
    if not isinstance(nodes.get(vdu), dict) or nodes[vdu].get("type") != "tosca.nodes.nfv.Vdu.Compute":
        raise UserError(f"basehot.yaml: vdu {vdu} is not a tosca.nodes.nfv.Vdu.Compute of the flavour")
    cat_params = catalog.get("parameters") or {}
    properties = dict(mapping.get("properties") or {})
    unknown = sorted(set(properties) - set(cat_params))
    passed = list(mapping.get("additional_params") or [])
    unknown += sorted(set(passed) - set(cat_params))
    if unknown:
        raise UserError(f"basehot.yaml: not parameters of {nested_name}: {', '.join(unknown)}")
    params: dict[str, Any] = {"nfv": {
        "type": "json",
        "description": "Tacker's nfv map (VDU images, external CP networks), built by UserData/lcm_user_data.py."}}
    for name in passed:
        params[name] = dict(cat_params[name])
        properties[name] = {"get_param": name}
    missing = sorted(n for n, p in cat_params.items()
                     if isinstance(p, dict) and "default" not in p and n not in properties)
    if missing:
        raise UserError(f"basehot.yaml: {nested_name} needs a value for {', '.join(missing)}")

    resources: dict[str, Any] = {f"{vdu}_flavor": _flavor(vdu, nodes[vdu])}
    subnets = []
    for name, node in nodes.items():
        if isinstance(node, dict) and node.get("type") == "tosca.nodes.nfv.VnfVirtualLink":
            resources[name] = {"type": "OS::Neutron::Net"}
            subnet = _internal_vl(node)
            if subnet:
                resources[f"{name}_subnet"] = {"type": "OS::Neutron::Subnet",
                                               "properties": {"network": {"get_resource": name}, **subnet}}
                subnets.append(f"{name}_subnet")
    vdu_resource: dict[str, Any] = {"type": nested_name, "properties": {
        k: properties[k] for k in cat_params if k in properties}}
    model = scaling.model(topology)
    name, attr = vdu, []
    if model.scaled(vdu):  # Tacker's v2 scale sets nfv.VDU.<VDU>.desired_capacity of the VDU's scaling group
        low, high = scaling.bounds(model, vdu, nodes[vdu])
        name, attr = f"{vdu}_scale_group", ["outputs_list"]
        vdu_resource = {"type": "OS::Heat::AutoScalingGroup", "properties": {
            "min_size": low, "max_size": high,
            "desired_capacity": {"get_param": ["nfv", "VDU", vdu, "desired_capacity"]},
            "resource": vdu_resource}}
    if subnets:
        vdu_resource["depends_on"] = subnets  # ports on an internal network need its subnet
    resources[name] = vdu_resource
    outputs = {out_name: {"description": out.get("description", ""), "value": {"get_attr": [name, *attr, out_name]}}
               for out_name, out in (catalog.get("outputs") or {}).items() if isinstance(out, dict)}
    return {
        "heat_template_version": catalog.get("heat_template_version"),
        "description": (f"{entry['name']} {entry['version']}, deployment flavour '{mapping.get('flavour', 'default')}'"
                        f": the Heat stack Tacker's LCM creates. Generated by nfvcat package: {vdu} is the "
                        f"catalog template nested/{nested_name}.\n"),
        "parameters": params,
        "resources": resources,
        "outputs": outputs,
    }


def basehot_files(entry_dir: Path, entry: dict[str, Any]) -> dict[str, bytes]:
    """BaseHOT/ and the hook files for the package, by member name; {} for an entry with no basehot.yaml."""
    mapping = read_mapping(entry_dir)
    if mapping is None:
        return {}
    flavour = str(mapping.get("flavour", "default"))
    template = catalog_template(entry_dir, mapping)
    catalog = _load(template)
    if not isinstance(catalog, dict):
        raise UserError(f"{template}: not a HOT template")
    nested_name = template.name
    top_name = f"{entry['name']}.yaml"
    if nested_name == top_name:
        raise UserError(f"{template}: the nested template may not be named like the top template {top_name}")
    topology = vnfd_topology(entry_dir, entry["template"], flavour)
    nodes = topology.get("node_templates") or {}
    top = top_template(entry, mapping, catalog, topology, nested_name)
    header = (f"# Generated by `nfvcat package` from {entry_dir.name}/{MAPPING_FILE}, the VNFD and the catalog\n"
              f"# template {nested_name}. Do not edit: change those instead.\n")
    base = f"BaseHOT/{flavour}"
    files = {f"{base}/{top_name}": (header + yaml.dump(top, Dumper=_Dumper, sort_keys=False, width=120)).encode()}
    if "resources" in mapping:
        nested = nested_template(catalog, mapping, nodes, nested_name)
        renamed = ", ".join(f"{o} -> {n}" for o, n in mapping["resources"].items())
        nested_header = (f"# Generated by `nfvcat package`: the catalog template {nested_name} with its resources "
                         f"named\n# after the VNFD ({renamed}).\n")
        files[f"{base}/nested/{nested_name}"] = (nested_header + yaml.dump(nested, Dumper=_Dumper, sort_keys=False,
                                                                           width=120)).encode()
    else:  # a first release's mapping (no resources): the catalog template byte for byte, as it was packaged
        files[f"{base}/nested/{nested_name}"] = template.read_bytes()
    for member, source in hook_members(template, f"{base}/nested").items():
        if member in files:
            raise UserError(f"{template}: get_file {member} clashes with a generated file")
        files[member] = source.read_bytes()
    return files
