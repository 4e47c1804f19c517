"""A HOT template as a placement request: its servers, their flavors, ports and server groups.

Read statically: a server's flavor is a ``get_resource`` to an ``OS::Nova::Flavor`` of the template, or a
name (literal or ``get_param`` with a given value or default) of a catalog flavor; a port's physnet is the
``physical_network`` of an ``OS::Neutron::ProviderNet`` it points at with ``get_resource``.
"""

from __future__ import annotations

from typing import Any

from nfvcat import hot
from nfvcat.errors import UserError
from nfvcat.plan.request import GROUP_POLICIES, Chain, Flavor, Port, Vnf, find_flavor, flavor_from_data


def _flavor(data: Any, value: Any, params: dict[str, Any], dirs: list[str], where: str) -> Flavor:
    ref = hot.resource_ref(value)
    if ref:
        body = (data.get("resources") or {}).get(ref)
        if not isinstance(body, dict) or body.get("type") != "OS::Nova::Flavor":
            raise UserError(f"{where}: flavor points at '{ref}', which is not an OS::Nova::Flavor")
        p = {k: hot.resolve(data, v, params) for k, v in hot.props(body).items()}
        if any(v is hot.UNRESOLVED for k, v in p.items() if k in ("vcpus", "ram", "extra_specs")):
            raise UserError(f"{where}: flavor '{ref}' has values that cannot be resolved statically")
        p.setdefault("name", p.get("name") or ref)
        return flavor_from_data(p, f"{where} (flavor {ref})")
    name = hot.resolve(data, value, params)
    if name is hot.UNRESOLVED or not isinstance(name, str) or not name:
        raise UserError(f"{where}: flavor has no value (give it with -P NAME=VALUE)")
    return find_flavor(name, dirs)


def _port(data: Any, res: dict[str, Any], entry: Any, params: dict[str, Any]) -> Port | None:
    if not isinstance(entry, dict):
        return None
    port_name = hot.resource_ref(entry.get("port"))
    vnic, port = "normal", {"properties": {"network": entry.get("network")}}
    if port_name and isinstance(res.get(port_name), dict):
        port = res[port_name]
        value = hot.resolve(data, hot.props(port).get("binding:vnic_type", "normal"), params)
        vnic = value if isinstance(value, str) else "normal"
    # an OS::Neutron::ProviderNet of the template, by get_resource or by name
    net = hot.network_of(data, port, params, hot.provider_networks(data))
    physnet = net.get("physical_network") if net else None
    return Port(vnic_type=vnic, physnet=physnet if isinstance(physnet, str) and physnet else None)


def _group(data: Any, res: dict[str, Any], hints: Any, groups: dict[str, str]) -> str | None:
    if not isinstance(hints, dict):
        return None
    name = hot.resource_ref(hints.get("group"))
    body = res.get(name) if name else None
    if not name or not isinstance(body, dict) or body.get("type") != "OS::Nova::ServerGroup":
        return None
    props = hot.props(body)
    policies = props.get("policies") or [props.get("policy", "anti-affinity")]
    policy = str(policies[0]) if isinstance(policies, list) and policies else "anti-affinity"
    groups[name] = policy if policy in GROUP_POLICIES else "anti-affinity"
    return name


def load(path: str, data: Any, params: dict[str, Any], flavor_dirs: list[str]) -> Chain:
    res = data.get("resources") if isinstance(data, dict) else None
    if not isinstance(res, dict):
        raise UserError(f"{path}: the template has no resources")
    groups: dict[str, str] = {}
    vnfs = []
    for name, body in hot.resources(data, "OS::Nova::Server"):
        props = hot.props(body)
        where = f"{path}: resources/{name}"
        flavor = _flavor(data, props.get("flavor"), params, flavor_dirs, where)
        nets_value = props.get("networks")
        nets: list[Any] = nets_value if isinstance(nets_value, list) else []
        ports = [p for p in (_port(data, res, n, params) for n in nets) if p]
        vnfs.append(Vnf(name=name, flavor=flavor, ports=ports,
                        server_group=_group(data, res, props.get("scheduler_hints"), groups)))
    if not vnfs:
        raise UserError(f"{path}: no OS::Nova::Server resources to place")
    return Chain(source=path, vnfs=vnfs, server_groups=groups)
