"""Values nfvcat invents for parameters that have none, so that strict validation can run.

A user's real value satisfies every constraint the parameter declares (allowed values, every allowed
pattern, length, range, offline custom constraints such as net_cidr) and fits every property it is
given to (an integer property takes an integer, a CIDR property a CIDR). The invented value is chosen
among candidates drawn from those constraints and property schemas, and kept only when Heat's own
Parameter and Property code accepts it. A finding that still depends on an invented value is
reported as such (W1005), never as an error of the template.
"""

from __future__ import annotations

import itertools
import json
import re
import uuid
from re import _constants as sre_constants  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

# Values of the format each of Heat's offline custom constraints checks: two of each, so that a second round
# of validation tries another value of the same format (an error that stays is the template's, whatever the
# value; one that goes came from the value).
CONSTRAINT_VALUES = {
    "ip_addr": ("192.0.2.1", "198.51.100.1"), "net_cidr": ("192.0.2.0/24", "198.51.100.0/24"),
    "ip_or_cidr": ("192.0.2.0/24", "198.51.100.1"), "mac_addr": ("fa:16:3e:00:00:01", "fa:16:3e:00:00:02"),
    "iso_8601": ("2026-01-01T00:00:00Z", "2027-06-30T12:00:00Z"), "cron_expression": ("0 * * * *", "30 2 * * 1"),
    "dns_name": ("vnf.example.org", "vnf2.example.net"), "dns_domain": ("example.org.", "example.net."),
    "rel_dns_name": ("vnf", "vnf2"), "expiration": ("2099-01-01T00:00:00Z", "2098-06-30T12:00:00Z"),
    "json_string": ("{}", "[]"), "timezone": ("UTC", "Europe/Paris"),
}
# For a string no constraint or property schema shapes, one of each format a property may check in its own
# code (an IP, a CIDR, a MAC, a UUID as Nova and Neutron give ids, a number, a name...) in turn: each round of
# validation tries the next one, so an error said to stay "whatever the value" has met a value of the format
# the property needed (a nested template's UUID pattern fed through str_replace, say).
GENERIC_STRINGS = ["placeholder", "192.0.2.1", "192.0.2.0/24", "fa:16:3e:00:00:01",
                   str(uuid.uuid5(uuid.NAMESPACE_OID, "nfvcat.invented")), "1", "a", "0", "a1",
                   "Placeholder1", "example.org", "2026-01-01T00:00:00Z"]


class Tried(tuple):
    """The values earlier rounds invented for a parameter: the next round invents none of them."""
_PAD = "aA0"


def classes(env: Any, files: Any) -> Any:
    """The stack environment's ``get_class`` that reads a template resource's template from the stack's files (as
    Heat does when it builds the resource): its properties are the nested template's parameters, each with its
    constraints (a UUID pattern, a range...), which a value fed to it must satisfy."""
    def get_class(resource_type: str) -> Any:
        return env.get_class(resource_type, files=files)
    return get_class


def property_uses(tpl: Any, name: str, get_class: Any, path: tuple[Any, ...] = ()) -> list[Any]:
    """Heat property schemas (``properties.Schema``) of the resource properties fed ``get_param: name``
    (or ``get_param: [name, *path]`` for a json parameter) directly, looked up through the stack's
    environment (``get_class``), nested lists and maps walked."""
    from heat.engine import properties

    found: list[Any] = []
    resources = tpl.get("resources") if isinstance(tpl, dict) else None
    for body in (resources or {}).values() if isinstance(resources, dict) else []:
        if not isinstance(body, dict) or not isinstance(body.get("type"), str):
            continue
        try:
            cls = get_class(body["type"])
            schema = {k: properties.Schema.from_legacy(v) for k, v in cls.properties_schema.items()}
        except Exception:  # an unknown type or a template resource: Heat reports the type itself
            continue
        _walk(body.get("properties"), schema, [name, *path], found)
    return found


def _walk(value: Any, schema: Any, ref: list[Any], found: list[Any]) -> None:
    from heat.engine import properties

    if isinstance(schema, dict):  # a properties mapping
        if isinstance(value, dict):
            for key, sub in value.items():
                if key in schema:
                    _walk(sub, schema[key], ref, found)
        return
    if not isinstance(schema, properties.Schema):
        return
    if _is_param(value, ref):
        found.append(schema)
    elif schema.type == schema.LIST and isinstance(value, list) and schema.schema is not None:
        item_schema = schema.schema["*"]  # Heat keeps a list's item schema under any index
        for item in value:
            _walk(item, item_schema, ref, found)
    elif schema.type == schema.MAP and isinstance(value, dict) and schema.schema:
        _walk(value, dict(schema.schema), ref, found)


def _is_param(value: Any, ref: list[Any]) -> bool:
    if isinstance(value, dict) and len(value) == 1 and "get_param" in value:
        got = value["get_param"]
        return got == ref or (len(ref) == 1 and got == ref[0])
    return False


def json_paths(tpl: Any, name: str) -> list[list[Any]]:
    """The paths the template reads from a json parameter (``get_param: [nfv, CP, CP1, fixed_ips, 0, subnet]``)."""
    found: list[list[Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("get_param") if len(node) == 1 else None
            if (isinstance(ref, list) and len(ref) > 1 and ref[0] == name
                    and all(isinstance(k, (str, int)) and not isinstance(k, bool) for k in ref[1:])):
                found.append(list(ref[1:]))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(tpl)
    return found


NOTHING = object()  # no value to avoid


def invent(name: str, schema: Any, tpl: Any, get_class: Any, context: Any, avoid: Any = NOTHING) -> Any:
    """The first candidate Heat accepts for the parameter and for every property it feeds (for a json
    parameter: a value holding every path the template reads, each leaf fit for the property it feeds).
    With ``avoid`` (the value a first validation invented), another one: the first other candidate Heat
    accepts, else the first other candidate, so that a second validation tries a different value."""
    return invent_judged(name, schema, tpl, get_class, context, avoid)[0]


def invent_judged(name: str, schema: Any, tpl: Any, get_class: Any, context: Any,
                  avoid: Any = NOTHING) -> tuple[Any, bool]:
    """``invent``, and whether the value satisfies the parameter's constraints and every property it feeds
    (False: none of the candidates does, or a json value whose leaves are not judged together)."""
    if schema.type in ("Json", "json"):
        leaves = {tuple(p): _leaf(property_uses(tpl, name, get_class, tuple(p)), context)
                  for p in json_paths(tpl, name)}
        return _json_tree(leaves), False
    uses = property_uses(tpl, name, get_class)
    items = _item_uses(tpl, name, get_class, uses) if schema.type in LIST_TYPES else {}
    made = _list_candidates(schema, uses, items) if items else _candidates(schema, uses)
    avoided = avoid if isinstance(avoid, Tried) else () if avoid is NOTHING else (avoid,)
    candidates = [c for c in dict.fromkeys(made) if c not in avoided]
    for value in candidates:
        if _accepted(name, schema, uses, value, context, items):
            return value, True
    return (candidates[0] if candidates else "placeholder"), False


LIST_TYPES = ("CommaDelimitedList", "comma_delimited_list")


def _item_uses(tpl: Any, name: str, get_class: Any, uses: list[Any]) -> dict[int | None, list[Any]]:
    """The property schemas a list parameter's items feed: by index for ``get_param: [name, i]``, and under
    None the item schema of a list property the whole list feeds."""
    out: dict[int | None, list[Any]] = {}
    for path in json_paths(tpl, name):
        if len(path) == 1 and isinstance(path[0], int) and 0 <= path[0] < 64:
            out.setdefault(path[0], []).extend(property_uses(tpl, name, get_class, (path[0],)))
    for use in uses:
        item = use.schema.get("*") if use.type == use.LIST and use.schema else None
        if item is not None:
            out.setdefault(None, []).append(item)
    return {k: v for k, v in out.items() if v}


def _list_candidates(schema: Any, uses: list[Any], items: dict[int | None, list[Any]]) -> list[Any]:
    """Lists whose items fit every property an item feeds (an IP for an ip_address, a CIDR for a cidr...):
    as many items as the template reads (and the parameter's length asks), each index its own candidates
    (the k-th list takes each index's k-th), an item the whole list feeds and an index fed nothing those of
    every item."""
    import types

    low, _ = _length(_constraints(schema))
    count = max([low, 1, *((i + 1) for i in items if i is not None)])
    item_schema = types.SimpleNamespace(type="String", constraints=[
        c for c in _constraints(schema) if type(c).__name__ in ("AllowedValues", "AllowedPattern")])

    def strings(fed: list[Any]) -> list[str]:
        return [str(v) for v in dict.fromkeys(_candidates(item_schema, fed)) if "," not in str(v)] or ["a"]

    every = items.get(None, [])
    per_index = [strings(items.get(i, []) + every) for i in range(count)]
    depth = max(len(c) for c in per_index)
    made = [",".join(c[min(k, len(c) - 1)] for c in per_index) for k in range(depth)]
    return made + _candidates(schema, uses)


def _leaf(uses: list[Any], context: Any) -> Any:
    import types

    from heat.engine import properties

    for value in dict.fromkeys(_candidates(types.SimpleNamespace(type="String", constraints=[]), uses)):
        try:
            for use in uses:
                properties.Property(use, name="leaf", context=context).get_value(value, validate=True)
        except Exception:
            continue
        return value
    return "placeholder"


def _accepted(name: str, schema: Any, uses: list[Any], value: Any, context: Any,
              items: dict[int | None, list[Any]] | None = None) -> bool:
    from heat.engine import parameters, properties

    try:
        param = parameters.Parameter(name, schema, value)
        param.validate(validate_value=True, context=context)
        resolved = param.value()
        for use in uses:
            properties.Property(use, name=name, context=context).get_value(resolved, validate=True)
        for index, fed in (items or {}).items():  # each item read, for what it feeds
            for item in resolved if index is None else [resolved[index]]:
                for use in fed:
                    properties.Property(use, name=name, context=context).get_value(item, validate=True)
    except Exception:
        return False
    return True


def _constraints(schema: Any) -> list[Any]:
    return list(getattr(schema, "constraints", None) or [])


def _candidates(schema: Any, uses: list[Any]) -> list[Any]:
    from heat.engine import constraints

    kind = schema.type
    out: list[Any] = []
    everything = [*_constraints(schema), *(c for use in uses for c in _constraints(use))]
    for c in everything:
        if isinstance(c, constraints.AllowedValues):
            out += list(c.allowed)
        elif isinstance(c, constraints.CustomConstraint) and c.name in CONSTRAINT_VALUES:
            out += list(CONSTRAINT_VALUES[c.name])
    numeric = kind in ("Number", "number") or any(
        use.type in (use.INTEGER, use.NUMBER) for use in uses)
    if numeric:
        out += _numbers(everything)
    if kind in ("Boolean", "boolean") or any(use.type == use.BOOLEAN for use in uses):
        out += ["false", "true"]
    low, high = _length(everything)
    patterns = [c.pattern for c in everything if isinstance(c, constraints.AllowedPattern)]
    strings = _pattern_strings(patterns, low, high) + GENERIC_STRINGS
    if kind in ("CommaDelimitedList", "comma_delimited_list"):
        count = max(low, 1)
        return out + [",".join([s] * count) for s in strings if "," not in s]
    out += [_fit(s, low, high) for s in strings]
    return [v for v in out if v is not None]


def _json_tree(leaves: dict[tuple[Any, ...], Any]) -> str:
    """A json value holding every path the template reads (keys and list indices), as a real one would."""
    tree: dict[str, Any] = {}
    for path, value in leaves.items():
        _put(tree, list(path), value)
    return json.dumps(tree)


def _put(node: Any, path: list[Any], value: Any) -> None:
    key, rest = path[0], path[1:]
    if isinstance(node, list):
        if not isinstance(key, int) or key < 0 or key > 64:
            return
        while len(node) <= key:
            node.append({})
        if not rest:
            node[key] = node[key] if node[key] not in ({}, []) else value
            return
        if not isinstance(node[key], (dict, list)) or (isinstance(rest[0], int) != isinstance(node[key], list)):
            node[key] = [] if isinstance(rest[0], int) else {}
        _put(node[key], rest, value)
    elif isinstance(node, dict) and isinstance(key, str):
        if not rest:
            node.setdefault(key, value)
            return
        child = node.setdefault(key, [] if isinstance(rest[0], int) else {})
        if isinstance(child, (dict, list)):
            _put(child, rest, value)


def _numbers(constraints_: list[Any]) -> list[Any]:
    from heat.engine import constraints

    lows = [c.min for c in constraints_ if isinstance(c, constraints.Range) and c.min is not None]
    highs = [c.max for c in constraints_ if isinstance(c, constraints.Range) and c.max is not None]
    low = max(lows) if lows else None
    high = min(highs) if highs else None
    out: list[Any] = []
    if low is not None:
        out += [int(low) if float(low).is_integer() else low, int(low) + 1]
    if high is not None:
        out.append(int(high) if float(high).is_integer() else high)
    return out + [1, 0, 22, 80]


def _length(constraints_: list[Any]) -> tuple[int, int | None]:
    from heat.engine import constraints

    lows = [c.min for c in constraints_ if isinstance(c, constraints.Length) and c.min is not None]
    highs = [c.max for c in constraints_ if isinstance(c, constraints.Length) and c.max is not None]
    return (int(max(lows)) if lows else 0), (int(min(highs)) if highs else None)


def _fit(value: str, low: int, high: int | None) -> str | None:
    if len(value) < low:
        value = value + (value[-1:] or "a") * (low - len(value))
    return value if high is None or len(value) <= high else None


def _pattern_strings(patterns: list[str], low: int, high: int | None) -> list[str]:
    """Strings made to match each pattern, and concatenations of them that may match all at once
    (``[A-Z].*`` and ``.*[0-9].*`` together: ``A0``), also stretched to the minimal length."""
    samples = [s for p in patterns for s in _samples(p, max(low, 1))]
    out = list(samples)
    for n in range(2, min(len(patterns), 4) + 1):
        for combo in itertools.permutations(samples, n):
            out.append("".join(combo))
    stretched = []
    for s in out:
        for pad in _PAD:
            if len(s) < low:
                stretched.append(s + pad * (low - len(s)))
                stretched.append(s[:1] + pad * (low - len(s)) + s[1:])
    return out + stretched


def _samples(pattern: str, length: int) -> list[str]:
    try:
        tree = sre_parse.parse(pattern)
    except Exception:
        return []
    out = []
    for extra in (0, 1, length):
        try:
            out.append(_gen(tree, extra))
        except (ValueError, RecursionError):
            continue
    return out


_CATEGORY_CHAR = {"CATEGORY_DIGIT": "0", "CATEGORY_NOT_DIGIT": "a", "CATEGORY_WORD": "a",
                  "CATEGORY_NOT_WORD": "-", "CATEGORY_SPACE": " ", "CATEGORY_NOT_SPACE": "a"}


def _gen(tree: Any, extra: int) -> str:
    out = []
    for op, arg in tree:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(arg))
        elif name == "NOT_LITERAL":
            out.append("a" if chr(arg) != "a" else "b")
        elif name == "ANY":
            out.append("a")
        elif name == "IN":
            out.append(_in(arg))
        elif name == "BRANCH":
            out.append(_gen(arg[1][0], extra))
        elif name == "SUBPATTERN":
            out.append(_gen(arg[-1], extra))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, sub = arg
            count = low if high == low else min(low + extra, high if high != sre_constants.MAXREPEAT else low + extra)
            out.append(_gen(sub, extra) * count)
        elif name in ("AT", "ASSERT", "ASSERT_NOT", "GROUPREF"):
            continue
        else:
            raise ValueError(name)
    return "".join(out)


def _in(items: Any) -> str:
    negate = any(str(op) == "NEGATE" for op, _ in items)
    allowed: list[str] = []
    for op, arg in items:
        name = str(op)
        if name == "LITERAL":
            allowed.append(chr(arg))
        elif name == "RANGE":
            allowed.append(chr(arg[0]))
        elif name == "CATEGORY":
            allowed.append(_CATEGORY_CHAR.get(str(arg), "a"))
    if not negate:
        return allowed[0] if allowed else "a"
    for c in "aA0-_x.":
        if c not in allowed:
            return c
    return "z"


def get_params(node: Any) -> set[str]:
    """Parameters a template fragment reads (get_param, Ref), raw or parsed into Heat's functions."""
    from heat.engine import function

    found: set[str] = set()
    if isinstance(node, function.Function):
        if getattr(node, "fn_name", "") in ("get_param", "Ref"):
            found |= _param_name(node.args)
        return found | get_params(node.args)
    if isinstance(node, dict):
        if len(node) == 1 and ("get_param" in node or "Ref" in node):
            found |= _param_name(next(iter(node.values())))
        for value in node.values():
            found |= get_params(value)
    elif isinstance(node, list):
        for value in node:
            found |= get_params(value)
    return found


def _param_name(ref: Any) -> set[str]:
    name = ref[0] if isinstance(ref, list) and ref else ref
    return {name} if isinstance(name, str) else set()


_PARAMETER_NAMED = re.compile(r"[Pp]arameter '([^']+)'")


def depends_on(tpl: Any, path: list[Any], message: str, invented: dict[str, Any]) -> list[str]:
    """The invented parameters a finding at ``path`` may depend on: the parameter it names, or those
    read by the template fragment it points at (the property, the output...)."""
    if not invented:
        return []
    names: set[str] = {m for m in _PARAMETER_NAMED.findall(message) if m in invented}
    from nfvcat.validation.engines import heat_paths

    where = heat_paths.existing(tpl, list(path))
    node, depth = heat_paths.at(tpl, where), len(where)
    if depth >= 2 and path[:1] != ["parameters"]:  # at least a resource or an output, not a whole section
        names |= get_params(node) & set(invented)
    return sorted(names)
