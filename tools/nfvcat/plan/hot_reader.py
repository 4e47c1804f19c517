"""A HOT template as a placement request: its servers, their flavors, ports and server groups.

Read statically: a server's flavor is a ``get_resource`` to an ``OS::Nova::Flavor`` (of the template or
one nesting it), or a name (literal or ``get_param`` with a given value or default) of a catalog flavor; a
port's physnet is the ``physical_network`` of an ``OS::Neutron::ProviderNet`` it points at, or of a
catalog provider network by name. Nested templates (a chain's VNFs) are followed with the properties
their parent passes, as the validator's rules do.
"""

from __future__ import annotations

import os
from typing import Any

from nfvcat.core import hot, yamlpos
from nfvcat.core.errors import UserError
from nfvcat.plan.request import GROUP_POLICIES, Chain, Flavor, Port, Vnf, find_flavor, flavor_from_data


def _flavor(data: Any, value: Any, params: dict[str, Any], dirs: list[str] | None, where: str,
            outer: tuple[Any, ...] = ()) -> Flavor:
    target = hot.follow(data, value, params, outer, "OS::Nova::Flavor")
    ref = hot.resource_ref(value if hot.resource_ref(value) else hot.resolve(data, value, params))
    if ref:
        if not isinstance(target, tuple):
            raise UserError(f"{where}: flavor points at '{ref}', which is not an OS::Nova::Flavor")
        scope, body = target
        scope_params = params if scope is data else {}
        p = {k: hot.resolve(scope, v, scope_params) for k, v in hot.props(body).items()}
        if any(v is hot.UNRESOLVED for k, v in p.items() if k in ("vcpus", "ram", "extra_specs")):
            raise UserError(f"{where}: flavor '{ref}' has values that cannot be resolved statically")
        p.setdefault("name", p.get("name") or ref)
        return flavor_from_data(p, f"{where} (flavor {ref})")
    name = hot.resolve(data, value, params)
    if name is hot.UNRESOLVED or not isinstance(name, str) or not name:
        raise UserError(f"{where}: flavor has no value (give it with -P NAME=VALUE)")
    return find_flavor(name, dirs)


def _port(data: Any, res: dict[str, Any], entry: Any, params: dict[str, Any],
          networks: dict[str, dict[str, Any]], outer: tuple[Any, ...]) -> Port | None:
    if not isinstance(entry, dict):
        return None
    port_name = hot.resource_ref(entry.get("port"))
    vnic, port = "normal", {"properties": {"network": entry.get("network")}}
    if port_name and isinstance(res.get(port_name), dict):
        port = res[port_name]
        value = hot.resolve(data, hot.props(port).get("binding:vnic_type", "normal"), params)
        vnic = value if isinstance(value, str) else "normal"
    # an OS::Neutron::ProviderNet of the template (or one nesting it), or a provider network by name
    net = hot.network_of(data, port, params, {**networks, **hot.provider_networks(data)}, outer)
    physnet = net.get("physical_network") if net else None
    return Port(vnic_type=vnic, physnet=physnet if isinstance(physnet, str) and physnet else None)


def _group(data: Any, hints: Any, params: dict[str, Any], groups: dict[str, str],
           outer: tuple[Any, ...]) -> str | None:
    hints = hot.resolve(data, hints, params)
    if not isinstance(hints, dict):
        return None
    target = hot.follow(data, hints.get("group"), params, outer, "OS::Nova::ServerGroup")
    if not isinstance(target, tuple):
        return None
    name = next(k for k, v in target[0]["resources"].items() if v is target[1])
    props = hot.props(target[1])
    policies = props.get("policies") or [props.get("policy", "anti-affinity")]
    policy = str(policies[0]) if isinstance(policies, list) and policies else "anti-affinity"
    groups[name] = policy if policy in GROUP_POLICIES else "anti-affinity"
    return name


def read_yaml(path: Any) -> Any:
    """A YAML file's data, or None when it cannot be read or parsed (bounded as every catalog file is)."""
    try:
        with open(path, encoding="utf-8") as f:
            return yamlpos.load(f.read(yamlpos.MAX_BYTES + 1))[0]
    except (OSError, UnicodeDecodeError, yamlpos.DocumentError):
        return None


def from_template(path: str, data: Any, environments: list[Any], parameters: dict[str, Any],
                  flavor_dirs: list[str] | None, root: Any = None) -> Chain:
    """The chain ``nfvcat plan TEMPLATE -e ENV... -P NAME=VALUE...`` places: the environments' parameters, then
    the given ones, and the catalog's provider networks (``root``, else the catalog found from here)."""
    from nfvcat import catalog

    params: dict[str, Any] = {}
    for env in environments:
        params.update(environment_parameters(str(env)))
    params.update(parameters)
    networks = catalog.provider_networks(root if root is not None else catalog.find_root(), read_yaml)
    return load(path, data, params, flavor_dirs, networks)


def load(path: str, data: Any, params: dict[str, Any], flavor_dirs: list[str] | None,
         networks: dict[str, dict[str, Any]] | None = None) -> Chain:
    res = data.get("resources") if isinstance(data, dict) else None
    if not isinstance(res, dict):
        raise UserError(f"{path}: the template has no resources")
    groups: dict[str, str] = {}
    vnfs: list[Vnf] = []
    _servers(path, data, params, flavor_dirs, networks or {}, (), "", groups, vnfs)
    if not vnfs:
        raise UserError(f"{path}: no OS::Nova::Server resources to place")
    return Chain(source=path, vnfs=vnfs, server_groups=groups)


def _servers(path: str, data: Any, params: dict[str, Any], flavor_dirs: list[str] | None,
             networks: dict[str, dict[str, Any]], outer: tuple[Any, ...], prefix: str,
             groups: dict[str, str], vnfs: list[Vnf]) -> None:
    res = data.get("resources") if isinstance(data, dict) else None
    if not isinstance(res, dict) or len(outer) > 5:
        return
    for name, body in hot.resources(data, "OS::Nova::Server"):
        props = hot.props(body)
        where = f"{path}: resources/{name}"
        flavor = _flavor(data, props.get("flavor"), params, flavor_dirs, where, outer)
        nets_value = props.get("networks")
        nets: list[Any] = nets_value if isinstance(nets_value, list) else []
        ports = [p for p in (_port(data, res, n, params, networks, outer) for n in nets) if p]
        vnfs.append(Vnf(name=prefix + name, flavor=flavor, ports=ports,
                        server_group=_group(data, props.get("scheduler_hints"), params, groups, outer)))
    for name, child_path, properties in hot.nested_templates(data, os.path.dirname(os.path.abspath(path))):
        try:
            with open(child_path, encoding="utf-8") as f:
                child, _ = yamlpos.load(f.read())
        except (OSError, UnicodeDecodeError, yamlpos.DocumentError) as exc:
            raise UserError(f"{path}: resources/{name}: nested template {child_path}: "
                            f"{getattr(exc, 'message', exc)}") from None
        _servers(child_path, child, hot.child_parameters(data, properties, params), flavor_dirs, networks,
                 (data, *outer), f"{prefix}{name}.", groups, vnfs)


def environment_parameters(path: str) -> dict[str, Any]:
    """The ``parameters`` of a Heat environment file."""
    try:
        with open(path, encoding="utf-8") as f:
            data = yamlpos.load(f.read(yamlpos.MAX_BYTES + 1))[0]
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, yamlpos.DocumentError) as exc:
        raise UserError(f"{path}: not a Heat environment: {getattr(exc, 'message', exc)}") from None
    params = data.get("parameters") if isinstance(data, dict) else None
    if not isinstance(params, dict):
        raise UserError(f"{path}: not a Heat environment with parameters")
    return params
