"""Small read-only helpers over a parsed HOT template, for the rules Heat has no opinion on."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

UNRESOLVED = object()
# HOT's intrinsic functions (up to 2021-04-16): a one-key mapping with another key is a literal.
FUNCTIONS = frozenset({
    "get_attr", "get_file", "get_param", "get_resource", "list_join", "repeat", "resource_facade",
    "str_replace", "str_replace_strict", "str_replace_vstrict", "str_split", "digest", "map_merge",
    "map_replace", "yaql", "equals", "if", "not", "and", "or", "filter", "make_url", "list_concat",
    "list_concat_unique", "contains", "Fn::Select", "Ref", "Fn::GetAtt", "Fn::Join", "Fn::Base64",
})
STR_REPLACE = ("str_replace", "str_replace_strict", "str_replace_vstrict")


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
    the parameters, a ``list_join`` of such values, or UNRESOLVED."""
    if isinstance(value, dict) and len(value) == 1 and depth < 20:
        (fn, arg), = value.items()
        if fn == "get_param" and isinstance(arg, str):
            return param_value(data, arg, given)
        if fn == "if" and isinstance(arg, list) and len(arg) in (2, 3):
            decided = condition(data, arg[0], given, depth + 1)
            if decided is UNRESOLVED:
                return UNRESOLVED
            if not decided and len(arg) == 2:
                return None  # HOT 2021-04-16: the property is left out
            return resolve(data, arg[1] if decided else arg[2], given, depth + 1)
        if fn == "list_join" and isinstance(arg, list) and len(arg) == 2 and isinstance(arg[1], list):
            parts = [resolve(data, item, given, depth + 1) for item in arg[1]]
            if isinstance(arg[0], str) and all(isinstance(p, (str, int, float)) for p in parts):
                return arg[0].join(str(p) for p in parts)
        if fn in FUNCTIONS:
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


def find_resource(ref: str, data: Any, outer: tuple[Any, ...] = ()) -> tuple[Any, dict[str, Any]] | None:
    """(template, body) of the resource ``ref`` names: in this template, else in the templates that nest it."""
    for scope in (data, *outer):
        res = scope.get("resources") if isinstance(scope, dict) else None
        body = res.get(ref) if isinstance(res, dict) else None
        if isinstance(body, dict):
            return scope, body
    return None


def follow(data: Any, raw: Any, given: dict[str, Any], outer: tuple[Any, ...],
           rtype: str | tuple[str, ...]) -> tuple[Any, dict[str, Any]] | str | None:
    """What a property naming another object points at: (template, body) of a resource of type ``rtype``
    (one of them, if several; in this template or one nesting it), or a name (an existing flavor or network),
    or None."""
    value = raw if resource_ref(raw) else resolve(data, raw, given)
    ref = resource_ref(value)
    if ref:
        found = find_resource(ref, data, outer)
        types = (rtype,) if isinstance(rtype, str) else rtype
        return found if found is not None and found[1].get("type") in types else None
    return value if isinstance(value, str) else None


PROVIDER_KEYS = ("network_type", "physical_network", "segmentation_id")
# The Neutron resources that name a network's segment, and where: a provider network's and a segment's own
# properties, a network's provider attributes passed through value_specs (what Neutron's API takes).
PROVIDER_RESOURCES = ("OS::Neutron::ProviderNet", "OS::Neutron::Segment", "OS::Neutron::Net")


def provider_paths(body: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    """Where a resource names each provider attribute (key path from the resource), for those it names."""
    p = props(body)
    if body.get("type") == "OS::Neutron::Net":
        specs = p.get("value_specs")
        return {k: ("properties", "value_specs", f"provider:{k}") for k in PROVIDER_KEYS
                if isinstance(specs, dict) and f"provider:{k}" in specs}
    return {k: ("properties", k) for k in PROVIDER_KEYS if k in p}


def provider_resources(data: Any) -> Iterator[tuple[str, dict[str, Any], dict[str, tuple[Any, ...]]]]:
    """(name, body, where each provider attribute is) of every resource that names a segment's attributes."""
    for name, body in resources(data, *PROVIDER_RESOURCES):
        paths = provider_paths(body)
        if paths:
            yield name, body, paths


def provider_values(scope: Any, body: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """A resource's provider attributes, resolved (a network's without them: all None)."""
    paths = provider_paths(body)
    return {k: resolve(scope, _at(body, paths[k]), given) if k in paths else None for k in PROVIDER_KEYS}


def _at(body: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        if not isinstance(body, dict):
            return None
        body = body.get(key)
    return body


def network_of(data: Any, port: dict[str, Any], given: dict[str, Any],
               networks: Mapping[str, dict[str, Any]] | None = None,
               outer: tuple[Any, ...] = ()) -> dict[str, Any] | None:
    """The provider attributes (network_type, physical_network, segmentation_id) of a port's network:
    an OS::Neutron::ProviderNet or an OS::Neutron::Net with provider value_specs in this template or one nesting
    it, or a catalog network by name."""
    target = follow(data, props(port).get("network"), given, outer, ("OS::Neutron::ProviderNet", "OS::Neutron::Net"))
    if isinstance(target, tuple):
        scope, body = target
        return provider_values(scope, body, given if scope is data else {})
    return (networks or {}).get(target) if isinstance(target, str) else None


def provider_networks(data: Any) -> dict[str, dict[str, Any]]:
    """Provider networks a template creates, by their name (as resolved from parameter defaults)."""
    out = {}
    for _, body in resources(data, "OS::Neutron::ProviderNet", "OS::Neutron::Net"):
        name = resolve(data, props(body).get("name"), {})
        if isinstance(name, str) and provider_paths(body):
            out[name] = provider_values(data, body, {})
    return out


def nested_templates(data: Any, base: str) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(resource name, path of the nested template file, properties) for template resources."""
    for name, body in resources(data):
        rtype = body.get("type")
        if isinstance(rtype, str) and rtype.endswith((".yaml", ".yml", ".template")) and "://" not in rtype:
            yield name, os.path.normpath(os.path.join(base, rtype)), props(body)


# Group resources and the property holding their member's definition (a type and its properties).
GROUP_MEMBERS = {"OS::Heat::ResourceGroup": "resource_def", "OS::Heat::AutoScalingGroup": "resource"}


def group_templates(data: Any, base: str) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(resource name, path of the member's template file, the member's properties) for ResourceGroup and
    AutoScalingGroup resources whose member is a template file: Heat makes each member a nested stack of it."""
    for name, body in resources(data, *GROUP_MEMBERS):
        member = props(body).get(GROUP_MEMBERS[str(body.get("type"))])
        if not isinstance(member, dict):
            continue
        rtype, properties = member.get("type"), member.get("properties")
        if isinstance(rtype, str) and rtype.endswith((".yaml", ".yml", ".template")) and "://" not in rtype:
            yield name, os.path.normpath(os.path.join(base, rtype)), properties if isinstance(properties, dict) else {}


def reached_templates(data: Any, base: str) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """Every template a stack of this one makes a nested stack of: template resources and group members."""
    yield from nested_templates(data, base)
    yield from group_templates(data, base)


def child_parameters(data: Any, properties: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """What a parent passes to a nested template: resolved values, and get_resource references kept as
    they are so the child can follow them back into the parent."""
    out = {}
    for key, value in properties.items():
        if resource_ref(value):
            out[key] = value
            continue
        resolved = resolve(data, value, given)
        if resolved is not UNRESOLVED:
            out[key] = resolved
    return out


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
                 catalog: dict[str, dict[str, Any]], outer: tuple[Any, ...] = ()) -> dict[str, Any] | None:
    """The extra specs of a server's flavor: an OS::Nova::Flavor in the template (or one nesting it) or a
    catalog flavor by name."""
    target = follow(data, props(server).get("flavor"), given, outer, "OS::Nova::Flavor")
    if isinstance(target, tuple):
        specs = props(target[1]).get("extra_specs")
    elif isinstance(target, str) and target in catalog:
        specs = catalog[target].get("extra_specs")
    else:
        return None
    return specs if isinstance(specs, dict) else {}


QOS_RULES = {"OS::Neutron::QoSBandwidthLimitRule": "bandwidth_limit", "OS::Neutron::QoSDscpMarkingRule": "dscp_marking",
             "OS::Neutron::QoSMinimumBandwidthRule": "minimum_bandwidth"}


def qos_policies(data: Any, given: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The QoS policies a template creates, by the name of the output that returns each (else the resource's):
    ``{"resource", "name", "rules": [{"type", property: value...}]}``, values resolved from the parameters
    (``given``, else defaults); a value that cannot be resolved is UNRESOLVED."""
    policies: dict[str, dict[str, Any]] = {}
    for name, body in resources(data, "OS::Neutron::QoSPolicy"):
        policies[name] = {"resource": name, "name": resolve(data, props(body).get("name"), given), "rules": []}
    for _, body in resources(data, *QOS_RULES):
        p = props(body)
        target = resource_ref(p.get("policy"))
        if target in policies:
            rule = {k: resolve(data, v, given) for k, v in p.items() if k != "policy"}
            policies[target]["rules"].append({"type": QOS_RULES[str(body["type"])], **rule})
    outputs = data.get("outputs") if isinstance(data, dict) else None
    by_output = {}
    for out, spec in (outputs or {}).items():
        ref = resource_ref(spec.get("value")) if isinstance(spec, dict) else None
        if ref in policies:
            by_output[str(out)] = policies[ref]
    named = {p["resource"] for p in by_output.values()}
    return {**by_output, **{k: v for k, v in policies.items() if k not in named}}
