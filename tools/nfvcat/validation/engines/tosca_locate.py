"""Where a tosca-parser message points: the document and key path of the template, property or value it
names. tosca-parser's messages carry no position, only the names they quote."""

from __future__ import annotations

import re
import zipfile
from typing import Any

import yaml

SECTIONS = ("node_templates", "inputs", "outputs", "policies", "groups", "relationship_templates")


def _names(data: Any) -> dict[str, list[Any]]:
    """Template names in one TOSCA document -> the key path where each is defined."""
    names: dict[str, list[Any]] = {}
    if not isinstance(data, dict):
        return names
    topo = data.get("topology_template")
    if isinstance(topo, dict):
        for section in SECTIONS:
            items = topo.get(section)
            if isinstance(items, dict):
                for key in items:
                    names.setdefault(str(key), ["topology_template", section, key])
            elif isinstance(items, list):  # policies and groups as a list of one-key maps
                for i, item in enumerate(items):
                    if isinstance(item, dict):
                        for key in item:
                            names.setdefault(str(key), ["topology_template", section, i, key])
    return names


def _get(data: Any, path: list[Any]) -> Any:
    for key in path:
        data = data[key]
    return data


def _find_key(node: Any, keys: list[str], base: list[Any], depth: int = 8) -> list[Any] | None:
    """Breadth-first: the path of the first key among ``keys`` in ``node`` (a key whose value is also
    quoted in the message wins), else of the first value among them."""
    level: list[tuple[Any, list[Any]]] = [(node, base)]
    fallback: list[Any] | None = None
    by_value: list[Any] | None = None
    for _ in range(depth):
        following: list[tuple[Any, list[Any]]] = []
        for value, path in level:
            items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(
                value, list) else ()
            for key, child in items:
                scalar = isinstance(child, (str, int, float)) and not isinstance(child, bool)
                if isinstance(key, str) and key in keys:
                    if scalar and str(child) in keys:
                        return [*path, key]
                    fallback = fallback or [*path, key]
                elif scalar and str(child) in keys:
                    by_value = by_value or [*path, key]
                following.append((child, [*path, key]))
        if fallback:
            return fallback
        level = following
    return by_value


def _refine(data: Any, path: list[Any], names: list[str]) -> list[Any]:
    """Down from ``path`` while the mapping there has a key the message also quotes: '"properties" of
    template "server" contains unknown field "cores"' is about ``cores``, not ``properties``."""
    node = _get(data, path)
    while isinstance(node, dict):
        below = [n for n in names if n in node and n not in path]
        if not below:
            break
        path = [*path, below[0]]
        node = node[below[0]]
    left = [n for n in names if n not in path]
    if left and isinstance(node, (dict, list)):  # a name quoted deeper: an interface's operation, a delta
        deeper = _find_key(node, left, path, depth=4)
        if deeper and any(k in left for k in deeper[len(path):]):
            return deeper
    return path


QUOTED = re.compile(r'"([^"]+)"|\'([^\']+)\'')


def locate(message: str, docs: list[tuple[str, Any]]) -> tuple[str, list[Any]]:
    """The document (of ``(name, data)`` pairs, the main one first) and key path a tosca-parser message
    is about, from the names it quotes."""
    quoted = [a or b for a, b in QUOTED.findall(message)]
    words = re.findall(r"[\w.-]+", message)
    for candidates in (quoted, words):
        for name in candidates:
            for where, data in docs:
                found = _names(data).get(name)
                if found:
                    others = [q for q in quoted if q != name]
                    deeper = _find_key(_get(data, found), others, found) if others else None
                    return where, _refine(data, deeper or found, others)
    for where, data in docs:  # no template named: a property and its value, somewhere in the topology
        topo = data.get("topology_template") if isinstance(data, dict) else None
        if quoted and isinstance(topo, dict):
            deeper = _find_key(topo, quoted, ["topology_template"])
            if deeper and len(deeper) > 2:
                return where, deeper
    if "import" in message.lower():
        return docs[0][0], ["imports"]
    return docs[0][0], []


STOPPED = "tosca-parser stopped early ("


def crash_at_cause(errors: list[str], located: list[tuple[str, list[Any]]]) -> list[tuple[str, list[Any]]]:
    """Where each message is; tosca-parser stopping early (a crash on a bad value it had reported) is put at
    the last error located before it, the value it stopped on, not at the top of the document."""
    out = list(located)
    for i, message in enumerate(errors):
        if message.startswith(STOPPED) and not out[i][1]:
            before = [place for place in out[:i] if place[1]]
            if before:
                out[i] = before[-1]
    return out


def manifest_line(path: str, message: str) -> tuple[str | None, str | None, list[Any], int]:
    """For a tacker message quoting an artifact, the manifest and the line of its ``Source:``."""
    with zipfile.ZipFile(path) as zf:
        try:
            meta = yaml.safe_load(zf.read("TOSCA-Metadata/TOSCA.meta"))
            manifest = meta.get("ETSI-Entry-Manifest") if isinstance(meta, dict) else None
            text = zf.read(manifest).decode("utf-8") if manifest else None
        except (KeyError, yaml.YAMLError, UnicodeDecodeError):
            return None, None, [], 1
    if not manifest or text is None:
        return None, None, [], 1
    quoted = [a or b for a, b in QUOTED.findall(message)]
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith(("Source:", "Name:")) and line.split(":", 1)[1].strip() in quoted:
            return manifest, text, [], number
    if "manifest" in message.lower():
        return manifest, text, [], 1
    return None, None, [], 1  # not about the manifest: about the VNFD
