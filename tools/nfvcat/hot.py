"""Small read-only helpers over a parsed HOT template, for the rules Heat has no opinion on."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

UNRESOLVED = object()


def resources(data: Any, *types: str) -> Iterator[tuple[str, dict[str, Any]]]:
    res = data.get("resources") if isinstance(data, dict) else None
    if not isinstance(res, dict):
        return
    for name, body in res.items():
        if isinstance(body, dict) and (not types or body.get("type") in types):
            yield str(name), body


def props(body: dict[str, Any]) -> dict[str, Any]:
    p = body.get("properties")
    return p if isinstance(p, dict) else {}


def param_value(data: Any, name: str, given: dict[str, Any]) -> Any:
    if name in given:
        return given[name]
    params = data.get("parameters") if isinstance(data, dict) else None
    spec = params.get(name) if isinstance(params, dict) else None
    if isinstance(spec, dict) and "default" in spec:
        return spec["default"]
    return UNRESOLVED


def resolve(data: Any, value: Any, given: dict[str, Any]) -> Any:
    """A literal, the value of a ``get_param`` (given, else default), or UNRESOLVED."""
    if isinstance(value, dict) and len(value) == 1:
        (fn, arg), = value.items()
        if fn == "get_param" and isinstance(arg, str):
            return param_value(data, arg, given)
        return UNRESOLVED
    return value


def resource_ref(value: Any) -> str | None:
    """The resource a ``get_resource`` points at."""
    if isinstance(value, dict) and len(value) == 1 and isinstance(value.get("get_resource"), str):
        return value["get_resource"]
    return None


SRIOV_VNIC_TYPES = ("direct", "direct-physical", "macvtap")


def network_of(data: Any, port: dict[str, Any]) -> dict[str, Any] | None:
    """The properties of the OS::Neutron::ProviderNet a port's ``network`` points at, if in this template."""
    ref = resource_ref(props(port).get("network"))
    res = data.get("resources") if isinstance(data, dict) else None
    body = res.get(ref) if isinstance(res, dict) and ref else None
    if isinstance(body, dict) and body.get("type") == "OS::Neutron::ProviderNet":
        return props(body)
    return None


def server_ports(data: Any, server: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The OS::Neutron::Port resources a server's ``networks`` list points at."""
    nets = props(server).get("networks")
    res = data.get("resources") if isinstance(data, dict) else None
    if not isinstance(nets, list) or not isinstance(res, dict):
        return
    for item in nets:
        ref = resource_ref(item.get("port")) if isinstance(item, dict) else None
        body = res.get(ref) if ref else None
        if isinstance(body, dict) and body.get("type") == "OS::Neutron::Port":
            yield str(ref), body


def flavor_specs(data: Any, server: dict[str, Any], given: dict[str, Any],
                 catalog: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The extra specs of a server's flavor: an OS::Nova::Flavor in the template or a catalog flavor."""
    value = props(server).get("flavor")
    ref = resource_ref(value)
    res = data.get("resources") if isinstance(data, dict) else None
    if ref and isinstance(res, dict) and isinstance(res.get(ref), dict):
        specs = props(res[ref]).get("extra_specs")
        return specs if isinstance(specs, dict) else {}
    name = resolve(data, value, given)
    if isinstance(name, str) and name in catalog:
        specs = catalog[name].get("extra_specs")
        return specs if isinstance(specs, dict) else {}
    return None
