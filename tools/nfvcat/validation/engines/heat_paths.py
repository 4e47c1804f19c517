"""Where in the template a Heat error is: the key path of the offending key, from what Heat gives.

Heat gives a path with most property errors, and names the culprit in the message for the rest: a
dotted path (``(in port.Properties.network)``), a parameter (``Parameter 'vlan' is invalid``), a
reference (``The specified reference "router" (in port)``), or a quoted key or value (``"propertes" is
not a valid keyword``, ``The Resource Type (OS::Neutron::Prot) could not be found``). This module turns
all of that into the path of the key that holds it, so that the finding points at the offending line.
"""

from __future__ import annotations

import re
from typing import Any

SECTIONS = ("resources", "outputs", "parameters", "conditions", "parameter_groups")
_IN_PATH = re.compile(r"\(in ([^)]+)\)")
_PARAM = re.compile(r"[Pp]arameter(?: \(|s? '|s? \"| )([\w.\-:]+)")
_REFERENCE = re.compile(r'reference "([^"]+)"')
# A name in a message ends at a space, a full stop, a comma or the end; at a colon only when a space or the end
# follows it ("Property error: ..."), since names hold colons ("Unknown Property binding:vnic_typo").
_NAME_END = r"(?:[ .,]|:(?:\s|$)|$)"
_TOKENS = (re.compile(r'"([^"]+)"'), re.compile(r"'([^']+)'"), re.compile(r"\(([^()\s]+)\)"),
           re.compile(rf"[Pp]roperty (\S+?){_NAME_END}"), re.compile(rf"[Pp]arameter (\S+?){_NAME_END}"),
           re.compile(r":\s*([\w:./\-]+)\s*\.?$"))
# Group resources whose members are built from one of their properties.
GROUP_PROPERTY = ("resource_def", "resource")


def refine(tpl: Any, path: list[Any], message: str, given: frozenset[str] = frozenset()) -> list[Any]:
    """The most precise path of the offending key that exists in ``tpl``; ``given`` names the parameters
    that have a value (else an invalid parameter is its default)."""
    if not isinstance(tpl, dict):
        return path
    path = _group_member(tpl, list(path))
    path = _normalise(tpl, path)
    if len(path) >= 2 and path[0] == "outputs" and len(path) == 2 and isinstance(at(tpl, path), dict) \
            and "value" in at(tpl, path):
        path = [*path, "value"]
    base = _from_message(tpl, path, message, given)
    return _normalise(tpl, base)


def at(tpl: Any, path: list[Any]) -> Any:
    node = tpl
    for key in path:
        in_list = isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node)
        if in_list or (isinstance(node, dict) and key in node):
            node = node[key]
        else:
            return None
    return node


def _normalise(tpl: Any, path: list[Any]) -> list[Any]:
    """Heat's names to the document's keys: list indices as ints, ``Properties`` as written."""
    out: list[Any] = []
    node = tpl
    for key in path:
        if isinstance(node, list) and isinstance(key, str) and key.isdigit():
            key = int(key)
        elif isinstance(node, dict) and key not in node and isinstance(key, str):
            lower = {k.lower(): k for k in node if isinstance(k, str)}
            key = lower.get(key.lower(), key)
        out.append(key)
        node = at(node, [key]) if node is not None else None
    return out


def existing(tpl: Any, path: list[Any]) -> list[Any]:
    for n in range(len(path), -1, -1):
        if n == 0 or at(tpl, path[:n]) is not None:
            return path[:n]
    return []


def _group_member(tpl: Any, path: list[Any]) -> list[Any]:
    """``resources.grp<nested_stack>.resources.0.properties.x`` is the group's member definition."""
    for i, key in enumerate(path):
        if isinstance(key, str) and key.endswith("<nested_stack>"):
            name = key[: -len("<nested_stack>")]
            props = at(tpl, ["resources", name, "properties"])
            rest = path[i + 3:] if path[i + 1:i + 2] == ["resources"] else []
            for prop in GROUP_PROPERTY:
                if isinstance(props, dict) and prop in props:
                    return [*path[:i], name, "properties", prop, *rest]
            return [*path[:i], name]
    return path


def _dotted(tpl: Any, text: str) -> list[Any] | None:
    parts = [p for p in re.split(r"\.|\[(\d+)\]", text) if p]
    if not parts or parts[0] == "unknown":
        return None
    if parts[0] not in SECTIONS and parts[0] in (tpl.get("resources") or {}):
        parts = ["resources", *parts]
    return parts if parts[0] in SECTIONS else None


_RESOURCE = re.compile(r"[Rr]esource \(?([^\s()]+?)\)? ")


def _from_message(tpl: Any, path: list[Any], message: str, given: frozenset[str]) -> list[Any]:
    here = existing(tpl, path)
    resources = tpl.get("resources") if isinstance(tpl.get("resources"), dict) else {}
    if len(here) < 2:
        named_resource = _RESOURCE.search(message)
        if named_resource and named_resource.group(1) in resources:
            here = ["resources", named_resource.group(1)]
            node = resources[here[1]]
            words = re.findall(r"[\w:]+", message)
            key = next((w for w in words if isinstance(node, dict) and w in node and w != here[1]), None)
            if key is not None:
                return [*here, key]
        elif "type key" in message:  # Heat does not say which resource has no type
            untyped = [n for n, body in resources.items() if not isinstance(body, dict) or "type" not in body]
            if untyped:
                return ["resources", untyped[0]]
    named = _IN_PATH.search(message)
    if named:
        dotted = _dotted(tpl, named.group(1))
        if dotted:
            dotted = _normalise(tpl, dotted)
            if len(existing(tpl, dotted)) > len(here):
                here = existing(tpl, dotted)
    ref = _REFERENCE.search(message)
    if ref:
        found = _find_reference(at(tpl, here), ref.group(1))
        if found is not None:
            return [*here, *found]
    param = _PARAM.search(message)
    params = tpl.get("parameters")
    if param and isinstance(params, dict) and param.group(1) in params and len(here) < 2:
        out = ["parameters", param.group(1)]
        spec = params[param.group(1)]
        if isinstance(spec, dict) and "default" in spec and (
                "default" in message.lower() or param.group(1) not in given):
            out.append("default")
        return out
    node = at(tpl, here)
    if len(here) == 2 and here[0] == "resources" and isinstance(node, dict) and "properties" in node \
            and "propert" in message.lower():
        here = [*here, "properties"]  # a property Heat wants or refuses: among the properties
    if len(here) >= 3 and here[0] == "resources" and here[2] in ("properties", "Properties"):
        # a missing or conflicting property: the one the message names, else the properties key
        for token in _tokens(message):
            found = _search(at(tpl, here), token, keys_only=True)
            if found is not None:
                return [*here, *found]
        return here
    for token in _tokens(message):
        found = _search(at(tpl, here), token)
        if found is not None:
            return _deepen(tpl, [*here, *found], message)
    return _deepen(tpl, here, message)


def _deepen(tpl: Any, path: list[Any], message: str) -> list[Any]:
    node = at(tpl, path)
    if len(path) == 2 and path[0] == "conditions" and isinstance(node, dict) and len(node) == 1:
        return [*path, *node]  # the condition function Heat does not know
    if isinstance(node, dict) and "params" in node and "param" in message:
        return [*path, "params"]  # str_replace's params
    return path


def _tokens(message: str) -> list[str]:
    out: list[str] = []
    for pattern in _TOKENS:
        out += [m.strip() for m in pattern.findall(message) if m.strip()]
    return list(dict.fromkeys(out))


def _search(node: Any, token: str, keys_only: bool = False) -> list[Any] | None:
    """The path below ``node`` of the key ``token`` (preferred), else of the scalar value ``token``."""
    key_hit = _walk(node, lambda k, v: k == token)
    if key_hit is not None or keys_only:
        return key_hit
    return _walk(node, lambda k, v: not isinstance(v, (dict, list)) and str(v) == token)


def _walk(node: Any, match: Any, path: tuple[Any, ...] = ()) -> list[Any] | None:
    if isinstance(node, dict):
        for key, value in node.items():
            if match(key, value):
                return [*path, key]
        for key, value in node.items():
            found = _walk(value, match, (*path, key))
            if found is not None:
                return found
    elif isinstance(node, list):
        for i, value in enumerate(node):
            if not isinstance(value, (dict, list)) and match(None, value):
                return [*path, i]
            found = _walk(value, match, (*path, i))
            if found is not None:
                return found
    return None


def _find_reference(node: Any, name: str) -> list[Any] | None:
    """Where ``node`` refers to resource ``name``: a depends_on entry, get_resource, get_attr."""
    if isinstance(node, dict):
        dep = node.get("depends_on")
        if dep == name:
            return ["depends_on"]
        if isinstance(dep, list) and name in dep:
            return ["depends_on", dep.index(name)]
    return _walk_refs(node, name, ())


def _walk_refs(node: Any, name: str, path: tuple[Any, ...]) -> list[Any] | None:
    if isinstance(node, dict):
        for fn in ("get_resource", "get_attr", "Ref", "Fn::GetAtt"):
            ref = node.get(fn)
            if ref == name or (isinstance(ref, list) and ref[:1] == [name]):
                return list(path)
        for key, value in node.items():
            found = _walk_refs(value, name, (*path, key))
            if found is not None:
                return found
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found = _walk_refs(value, name, (*path, i))
            if found is not None:
                return found
    return None


def missing_file(tpl: Any, template_dir: str, missing: str) -> list[Any]:
    """The key that names a file heatclient could not read (a get_file, a nested template type)."""
    import os

    from nfvcat.core.confine import reference_path

    def names_it(key: Any, value: Any) -> bool:
        return isinstance(value, str) and reference_path(value, template_dir) == os.path.normpath(missing)

    return _walk(tpl, names_it) or []


def conflict(tpl: Any, path: list[Any], message: str) -> list[str]:
    """The properties of the resource at ``path`` that Heat's message names, in the template's order, when it
    names two or more (a conflict between them: ``MinSize can not be greater than MaxSize``); a name matches
    a property written in another case or without its underscores."""
    if len(path) < 2 or path[0] != "resources" or len(path) > 3 or (len(path) == 3 and path[2] != "properties"):
        return []
    props = at(tpl, [*path[:2], "properties"])
    if not isinstance(props, dict):
        return []
    words = {w.lower() for w in re.findall(r"[A-Za-z][\w:]*", message)}
    involved = [k for k in props if isinstance(k, str) and (k.lower() in words or k.replace("_", "").lower() in words)]
    return involved if len(involved) > 1 else []
