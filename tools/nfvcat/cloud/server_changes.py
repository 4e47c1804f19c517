"""Whether an update really replaces a server that Heat's preview names as replaced.

Heat's update preview (``PATCH .../preview``) builds the new stack in memory and compares each resource's
properties with the deployed one's. The new stack has no resource data, so every ``get_attr`` in it resolves to
None: a server whose user data takes a port's MAC or IP address (every vRouter of the catalog) differs from the
deployed one in the preview, and is named "replaced", while the update itself resolves the same attributes to
the same values and leaves the server alone (measured: chain-vrouter 1.1.0 -> 1.1.1, which changes only the
image's default of a stack given its image, was previewed as replacing the vRouter; the update replaced nothing).

So the plan checks each server the preview replaces against both versions' definitions, taken symbolically:
parameters (the stack's values, the update's, then each template's defaults; a nested template's from its
parent resource's properties), files and conditions resolved; ``get_attr`` and ``get_resource`` kept as the
references they are. When both definitions are the same, and no resource they reference is added, replaced or
updated by the preview (its attributes then stay the same), the server does not go down. Anything else keeps
Heat's verdict: an unknown is never taken for "stays".
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml

from nfvcat.core import hot

OUTER = "@outer"  # a value a nested template got from its parent: its references are the parent's
MAX_DEPTH = 40


@dataclass
class Scope:
    """A template and what its get_param and get_file resolve to."""

    data: dict[str, Any]
    params: dict[str, Any]
    files: dict[str, str]


def symbolic(scope: Scope, value: Any, depth: int = 0) -> Any:
    """``value`` with every get_param, get_file and decidable ``if`` resolved; other functions kept as they are."""
    if depth > MAX_DEPTH:
        return value
    if isinstance(value, list):
        return [symbolic(scope, v, depth + 1) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        (fn, arg), = value.items()
        if fn == "get_param":
            return _param(scope, arg, depth)
        if fn == "get_file" and isinstance(arg, str) and arg in scope.files:
            return scope.files[arg]
        if fn == "if" and isinstance(arg, list) and len(arg) in (2, 3):
            decided = hot.condition(scope.data, arg[0], _literal_params(scope))
            if decided is not hot.UNRESOLVED:
                if not decided and len(arg) == 2:
                    return None
                return symbolic(scope, arg[1] if decided else arg[2], depth + 1)
    return {k: symbolic(scope, v, depth + 1) for k, v in value.items()}


def _literal_params(scope: Scope) -> dict[str, Any]:
    return {k: v for k, v in scope.params.items() if not (isinstance(v, dict) and OUTER in v)}


def _param(scope: Scope, arg: Any, depth: int) -> Any:
    name, path = (arg, []) if isinstance(arg, str) else (arg[0], list(arg[1:])) if isinstance(arg, list) and arg \
        else (None, [])
    if not isinstance(name, str):
        return {"get_param": arg}
    value = scope.params[name] if name in scope.params else hot.param_value(scope.data, name, {})
    if value is hot.UNRESOLVED:
        return {"get_param": arg}
    for key in path:
        try:
            value = value[key] if not isinstance(value, dict) or OUTER not in value else {"get_param": arg}
        except (KeyError, IndexError, TypeError):
            return {"get_param": arg}
    return value


def references(value: Any, up: int = 0) -> Iterator[tuple[int, str]]:
    """(how many templates up its scope is, resource name) of every get_attr and get_resource in a symbolic
    value."""
    if isinstance(value, list):
        for v in value:
            yield from references(v, up)
    elif isinstance(value, dict):
        if len(value) == 1:
            (fn, arg), = value.items()
            if fn == OUTER:
                yield from references(arg, up + 1)
                return
            if fn == "get_resource" and isinstance(arg, str):
                yield up, arg
            elif fn == "get_attr" and isinstance(arg, list) and arg and isinstance(arg[0], str):
                yield up, arg[0]
        for v in value.values():
            yield from references(v, up)


def _load(text: Any) -> dict[str, Any]:
    try:
        data = yaml.safe_load(text) if isinstance(text, str) else text
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}


def scopes(top: Scope, parents: list[str]) -> list[Scope] | None:
    """The scopes from ``top`` down to the nested stack reached through the template resources ``parents``
    (outermost first); None when one is not a template resource of the bundle."""
    out = [top]
    for name in parents:
        scope = out[-1]
        body = (scope.data.get("resources") or {}).get(name)
        rtype = body.get("type") if isinstance(body, dict) else None
        if not isinstance(rtype, str) or rtype not in scope.files:
            return None
        props = symbolic(scope, hot.props(body) if isinstance(body, dict) else {})
        out.append(Scope(_load(scope.files[rtype]), {k: v if _literal(v) else {OUTER: v} for k, v in props.items()},
                         scope.files))
    return out


def _literal(value: Any) -> bool:
    return not any(True for _ in references(value))


def unchanged(old: Scope, new: Scope, parents: list[str], server: str,
              changed: dict[tuple[str, str], str]) -> bool:
    """Whether the server ``server`` of the nested stack at ``parents`` has the same definition in both bundles,
    and so has every resource it references (and they reference, in their own scope), none of them added,
    replaced or updated by the preview (``changed``: (parent, name) -> how, parent as the preview names it: the
    innermost template resource, "" at the top)."""
    a, b = scopes(old, parents), scopes(new, parents)
    if a is None or b is None:
        return False
    names = ["", *parents]  # the preview's parent name of each scope, outermost first
    todo, seen = [(len(a) - 1, server)], set()
    while todo:
        level, name = todo.pop()
        if (level, name) in seen:
            continue
        seen.add((level, name))
        if (level, name) != (len(a) - 1, server) and (names[level], name) in changed:
            return False
        body_a = (a[level].data.get("resources") or {}).get(name)
        body_b = (b[level].data.get("resources") or {}).get(name)
        if not isinstance(body_a, dict) or not isinstance(body_b, dict) or name in parents[level:level + 1]:
            return False  # not defined in both, or the nested stack itself (its definition is the bundle's)
        sym_a, sym_b = symbolic(a[level], body_a), symbolic(b[level], body_b)
        if sym_a != sym_b:
            return False
        for up, ref in references(sym_b):
            if up > level:
                return False
            todo.append((level - up, ref))
    return True


def properties(old: Scope, new: Scope, parents: list[str], name: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The symbolic properties of resource ``name`` of the nested stack at ``parents`` in both bundles; None when
    either does not define it."""
    a, b = scopes(old, parents), scopes(new, parents)
    body_a = (a[-1].data.get("resources") or {}).get(name) if a else None
    body_b = (b[-1].data.get("resources") or {}).get(name) if b else None
    if a is None or b is None or not isinstance(body_a, dict) or not isinstance(body_b, dict):
        return None
    return symbolic(a[-1], hot.props(body_a)), symbolic(b[-1], hot.props(body_b))


# (property, its update policy property, the policy's default, what the policies that take the server down do)
DISRUPTING = (("image", "image_update_policy", "REBUILD", {"REBUILD": "rebuilt", "REBUILD_PRESERVE_EPHEMERAL":
                                                            "rebuilt", "REPLACE": "replaced"}),
              ("user_data", "user_data_update_policy", "REPLACE",
               {"REBUILD": "refused by Nova: Heat's user_data_update_policy REBUILD hands Nova the user data as the "
                           "image", "REPLACE": "replaced"}),
              ("flavor", "flavor_update_policy", "RESIZE", {"RESIZE": "resized", "REPLACE": "replaced"}))


def disruption(old: Scope, new: Scope, parents: list[str], server: str) -> str | None:
    """How an update the preview calls "updated" takes the server down: "rebuilt (image)" (Nova rebuilds it in
    place: same id, new disk, a reboot), "resized (flavor)" (a resize: a reboot), "refused by Nova ..." (Heat's
    REBUILD of new user data calls Nova's rebuild with the user data as the image, in the Heat of constraints.txt),
    "unknown" when its definition cannot be compared, or None (it keeps running)."""
    props = properties(old, new, parents, server)
    if props is None:
        return "unknown"
    pa, pb = props
    for prop, policy, default, effects in DISRUPTING:
        if pa.get(prop) != pb.get(prop):
            how = effects.get(str(pb.get(policy) or pa.get(policy) or default))  # Heat: the new policy, else the old
            if how:
                return f"{how} ({prop.replace('_', ' ')})"
    return None


def address_change(old: Scope, new: Scope, parents: list[str], port: str) -> list[str]:
    """What a port the preview calls "updated" loses in place: "IP address" when its fixed_ips differ, "MAC
    address" when its mac_address does; ["IP address", "MAC address"] when it cannot tell."""
    props = properties(old, new, parents, port)
    if props is None:
        return ["IP address", "MAC address"]
    pa, pb = props
    return [what for prop, what in (("fixed_ips", "IP address"), ("mac_address", "MAC address"))
            if pa.get(prop) != pb.get(prop)]
