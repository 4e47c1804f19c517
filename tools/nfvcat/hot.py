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


def resolve(data: Any, value: Any, given: dict[str, Any], depth: int = 0) -> Any:
    """A literal, a ``get_param`` (given, else default), an ``if`` whose condition can be decided from
    the parameters, or UNRESOLVED."""
    if isinstance(value, dict) and len(value) == 1 and depth < 20:
        (fn, arg), = value.items()
        if fn == "get_param" and isinstance(arg, str):
            return param_value(data, arg, given)
        if fn == "if" and isinstance(arg, list) and len(arg) == 3:
            decided = condition(data, arg[0], given, depth + 1)
            if decided is UNRESOLVED:
                return UNRESOLVED
            return resolve(data, arg[1] if decided else arg[2], given, depth + 1)
        return UNRESOLVED
    return value


def _truth(value: Any) -> bool:
    return str(value).strip().lower() in ("true", "1", "yes", "on", "t", "y")


def condition(data: Any, cond: Any, given: dict[str, Any], depth: int = 0) -> Any:
    """Heat's condition functions (equals, not, and, or, a named condition, a boolean parameter),
    decided from the parameters; UNRESOLVED when they depend on anything else."""
    if depth > 20:
        return UNRESOLVED
    if isinstance(cond, bool):
        return cond
    if isinstance(cond, str):
        named = data.get("conditions") if isinstance(data, dict) else None
        if not isinstance(named, dict) or cond not in named:
            return UNRESOLVED
        return condition(data, named[cond], given, depth + 1)
    if not (isinstance(cond, dict) and len(cond) == 1):
        return UNRESOLVED
    (fn, arg), = cond.items()
    if fn == "equals" and isinstance(arg, list) and len(arg) == 2:
        a, b = (resolve(data, v, given, depth + 1) for v in arg)
        if a is UNRESOLVED or b is UNRESOLVED:
            return UNRESOLVED
        if isinstance(a, bool) or isinstance(b, bool):
            return _truth(a) == _truth(b)
        return str(a) == str(b)
    if fn == "not":
        inner = condition(data, arg, given, depth + 1)
        return inner if inner is UNRESOLVED else not inner
    if fn in ("and", "or") and isinstance(arg, list):
        values = [condition(data, c, given, depth + 1) for c in arg]
        if fn == "and" and any(v is False for v in values):
            return False
        if fn == "or" and any(v is True for v in values):
            return True
        return UNRESOLVED if any(v is UNRESOLVED for v in values) else fn == "and"
    if fn == "get_param":
        value = resolve(data, cond, given, depth + 1)
        return value if value is UNRESOLVED else _truth(value)
    return UNRESOLVED


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
