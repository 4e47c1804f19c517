"""Jinja-templated user data, as cloud-init reads it: a first line ``## template: jinja`` (cloud-init's
``templater.TYPE_MATCHER``, ``##\\s*template:(.*)``, case-insensitive, naming ``jinja``) makes cloud-init render
the rest with the instance's data, then read the result by its own first line (``#cloud-config``, a script...).

The instance's data is not known offline, so the template's syntax is set aside, line and column kept: an
expression ``{{ ... }}`` becomes a placeholder of the same length (:data:`PLACEHOLDER` characters: a value
holding one is known only at boot, and is not judged), a statement ``{% ... %}`` or a comment ``{# ... #}``
becomes blanks. Both branches of an ``{% if %}`` stay, so a key they both set is no duplicate. The template
itself is parsed by Jinja2 (what cloud-init renders with): a syntax error is reported with its line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

HEADER = re.compile(r"##\s*template:(.*)", re.I)
PLACEHOLDER = "\u00a7"  # a character YAML takes in a plain scalar, that no schema value matches by accident
_SYNTAX = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.S)


@dataclass
class SetAside:
    text: str  # the text with the template's syntax set aside
    statements: bool  # it has {% ... %} statements (branches, loops)
    error: str | None = None  # Jinja2's syntax error
    line: int = 1


def is_template(text: str) -> bool:
    """cloud-init's test: the first line names the jinja template type."""
    match = HEADER.match(text.lstrip("\ufeff").split("\n", 1)[0])
    return bool(match and match.group(1).strip().lower() == "jinja")


def rendered_head(text: str) -> str:
    """The line cloud-init reads the rendered text's type from: the one after the header."""
    rest = text.lstrip("\ufeff").split("\n", 1)
    return rest[1] if len(rest) > 1 else ""


def set_aside(text: str) -> SetAside:
    def blank(match: re.Match[str]) -> str:
        source = match.group(0)
        if source.startswith("{{"):
            return "".join(c if c == "\n" else PLACEHOLDER for c in source)
        return "".join(c if c == "\n" else " " for c in source)

    out = SetAside(_SYNTAX.sub(blank, text), "{%" in text)
    import jinja2  # only for templated user data

    try:
        jinja2.Environment().parse(text)
    except jinja2.TemplateSyntaxError as exc:
        out.error, out.line = exc.message or str(exc), exc.lineno or 1
    return out
