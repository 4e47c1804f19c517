"""What a Heat job carries besides its payload: the data of the template and of the templates it nests, as the
run read them, for the worker to take instead of parsing the same text again."""

from __future__ import annotations

import binascii
import marshal
import os
from collections.abc import Callable
from typing import Any

from nfvcat.core import hot
from nfvcat.core.documents import Document


def handover(doc: Document, read: Callable[[str], Document] | None) -> dict[str, Any]:
    """The data of the template and of the templates it nests (as the run read them: an edited VNF template
    nested in a chain), where heatclient's parse makes the same (parsed_as_heatclient_parses)."""
    parsed: list[dict[str, str]] = []
    seen: set[str] = set()

    def add(one: Document, depth: int) -> None:
        if one.abspath in seen or depth > 5:
            return
        seen.add(one.abspath)
        given = parsed_as_heatclient_parses(one)
        if given:
            parsed.append(given)
        if read is not None and one.kind == "hot":
            for _, path, _ in hot.nested_templates(one.data, os.path.dirname(one.abspath)):
                add(read(path), depth + 1)

    add(doc, 0)
    return {"parsed": parsed} if parsed else {}


def parsed_as_heatclient_parses(doc: Document) -> dict[str, str] | None:
    """``_parsed_as_heatclient_parses``, once per document (a nested template is handed over with every
    template that nests it, and the engine server keeps an unchanged document between validations)."""
    if "heat.parsed" not in doc.derived:
        doc.derived["heat.parsed"] = _parsed_as_heatclient_parses(doc)
    return doc.derived["heat.parsed"]


def _parsed_as_heatclient_parses(doc: Document) -> dict[str, str] | None:
    """The template's data as read here, for the worker to take instead of parsing the text again (YAML is a
    sixth of a changed template's validation), where heatclient's parse makes the same data by construction:
    libyaml read it (heatclient's loader is libyaml's, with the same constructors: timestamps stay strings),
    it is a mapping, not JSON (heatclient gives a text that starts with '{' to json), and the text heatclient
    parses (stripped) reads as the whole text does: nothing before it, only line ends after it, and its last
    node is no string that ends in white space (a block scalar's line ends, which stripping removes) under
    a key that does. The worker takes it only for that exact text; None where the parses may differ."""
    text, data, pos = doc.text, doc.data, doc.positions
    stripped = text.strip()
    if not (pos.libyaml and isinstance(data, dict) and text.startswith(stripped)
            and not text[len(stripped):].strip("\n") and not stripped.startswith("{")):
        return None
    last = max(pos.marks, key=lambda path: (pos.marks[path], len(path)), default=())
    value: Any = data
    for step in last:  # the marks name a key by its text: a mapping with keys of other types is not followed
        if isinstance(value, dict) and not all(isinstance(key, str) for key in value):
            return None
        if not isinstance(value, (dict, list)) or (isinstance(value, list) and not isinstance(step, int)):
            return None
        try:
            value = value[step]
        except (KeyError, IndexError, TypeError):
            return None
    if any(isinstance(v, str) and v != v.rstrip() for v in (value, *last[-1:])):
        return None
    return {"text": stripped, "data": binascii.b2a_base64(marshal.dumps(data), newline=False).decode()}
