"""E6005: ``## template: jinja`` that is not the user data's first line."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from nfvcat.core import cloudconfig, hot, jinja
from nfvcat.core.documents import Document
from nfvcat.core.findings import RawFinding
from nfvcat.validation.rules.base import Context, Rule

_MEANT = re.compile(r"##\s*template:\s*jinja\b", re.I)  # a header as its author meant it
_HOLDERS = (("OS::Nova::Server", "user_data"), ("OS::Heat::SoftwareConfig", "config"))


class JinjaHeaderNotFirst(Rule):
    id = "E6005"
    shortdesc = "`## template: jinja` that is not the user data's first line"
    description = ("cloud-init renders user data as a Jinja template only when its very first line is "
                   "`## template: jinja` (templater.TYPE_MATCHER on the first line; the jinja handler's prefix). "
                   "Anywhere else, after `#cloud-config` say, it is a comment: nothing is rendered, each "
                   "`{{ ... }}` stays as written (an unquoted one is not even YAML, and cloud-init then drops the "
                   "whole cloud-config).")
    source_url = "https://cloudinit.readthedocs.io/en/latest/explanation/instancedata.html"
    engine = "cloud-init"
    kinds = ("cloud-config", "hot")

    def check(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        if doc.kind == "cloud-config":
            for line in _late_headers(doc.text):
                yield RawFinding(self.id, (), _message(""), self.engine, line=line, column=1)
            return
        for where, text in _texts(doc):
            block = cloudconfig.block_of(doc, where)
            for line in _late_headers(text):
                if block is None:
                    yield self.finding(where, _message(f"{where[-1]}: "))
                    break
                yield RawFinding(self.id, where, _message(f"{where[-1]}: "), self.engine, line=block[0] + line,
                                 column=block[1] + 1)


def _message(label: str) -> str:
    return (f"{label}'## template: jinja' is not the first line: cloud-init takes it only there, so here it is a "
            "comment and no Jinja is rendered ({{ ... }} stays as written); move it to line 1, before "
            "#cloud-config")


def _late_headers(text: str) -> list[int]:
    lines = text.lstrip("\ufeff").split("\n")
    if jinja.is_template(text):
        return []
    return [i for i, line in enumerate(lines[1:], 2) if _MEANT.match(line.strip())]


def _texts(doc: Document) -> Iterator[tuple[tuple[Any, ...], str]]:
    for rtype, prop in _HOLDERS:
        for name, body in hot.resources(doc.data, rtype):
            text = hot.props(body).get(prop)
            if isinstance(text, str):
                yield ("resources", name, "properties", prop), text
    for name, body in hot.resources(doc.data, "OS::Heat::MultipartMime"):
        parts = hot.props(body).get("parts")
        for i, part in enumerate(parts if isinstance(parts, list) else []):
            text = part.get("config") if isinstance(part, dict) else None
            if isinstance(text, str):
                yield ("resources", name, "properties", "parts", i, "config"), text
