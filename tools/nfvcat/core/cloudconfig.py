"""Where a document carries cloud-config, and how a key path inside it maps to the document's lines.

A cloud-config file is its own document. In a HOT template it is an ``OS::Heat::CloudConfig``'s
``cloud_config`` mapping (part of the template's YAML), or text: a server's literal ``user_data`` or an
``OS::Heat::SoftwareConfig``'s ``config`` that starts with ``#cloud-config``, or the ``str_replace``
template such text is made from (its keys are known, its values are placeholders), or an
``OS::Heat::MultipartMime`` part's inline ``config`` of such text. Text in a literal block (``user_data: |``)
maps line for line to the file, so a finding points at the line inside the block. A Jinja-templated
cloud-config (``## template: jinja``, then ``#cloud-config``) is read with its template syntax set aside
(``nfvcat.core.jinja``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from nfvcat.core import hot, jinja, yamlpos
from nfvcat.core.documents import Document

# Intrinsic functions inside: the value is only known at deploy time.
_DEPLOY_TIME = ("get_param", "get_attr", "get_resource", "str_replace", "list_join", "get_file", "if", "yaql",
                "str_split")
_LITERAL_BLOCK = re.compile(r":\s*\|[1-9+-]{0,2}\s*(#.*)?$")
_TEXT_HOLDERS = (("OS::Nova::Server", "user_data"), ("OS::Heat::SoftwareConfig", "config"))


@dataclass
class CloudConfig:
    data: Any  # the parsed cloud-config (a mapping, or what the user wrote instead)
    where: tuple[Any, ...]  # key path of the cloud-config in the document
    label: str = ""  # message prefix for cloud-config carried as text ("user_data: ")
    positions: yamlpos.Positions | None = None  # of the text, when it is text
    block: tuple[int, int] | None = None  # file line before the block's first line, and its indent
    error: str | None = None  # the text is not YAML
    template: bool = False  # values known only at deploy time (str_replace placeholders, get_param...)
    jinja: jinja.SetAside | None = None  # a Jinja template cloud-init renders at boot: values holding
    # jinja.PLACEHOLDER are known only then

    def locate(self, path: tuple[Any, ...] | list[Any]) -> tuple[tuple[Any, ...], int | None, int | None]:
        """The document key path for ``path`` inside the cloud-config, and the file line and column when
        the cloud-config is text in a literal block (None, None otherwise: the runner maps the path)."""
        if self.positions is None:
            return self.where + tuple(path), None, None
        if self.block is None:
            return self.where, None, None
        line, column = self.positions.locate(tuple(path))
        return self.where, self.block[0] + line, self.block[1] + column

    def locate_line(self, line: int) -> tuple[tuple[Any, ...], int | None, int | None]:
        """The position of a line of the cloud-config's own text."""
        if not self.where:
            return (), line, 1  # the document is the cloud-config
        if self.block is None:
            return self.where, None, None
        return self.where, self.block[0] + line, self.block[1] + 1


def _has_functions(value: Any) -> bool:
    if isinstance(value, dict):
        if len(value) == 1 and next(iter(value)) in _DEPLOY_TIME:
            return True
        return any(_has_functions(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_functions(v) for v in value)
    return False


def _block(doc: Document, where: tuple[Any, ...]) -> tuple[int, int] | None:
    """(line of ``key: |``, indentation of the block's text) for a literal block scalar at ``where``."""
    line, _ = doc.locate(where)
    lines = doc.text.splitlines()
    if where not in doc.positions.marks or line > len(lines) or not _LITERAL_BLOCK.search(lines[line - 1]):
        return None
    for text in lines[line:]:
        if text.strip():
            return line, len(text) - len(text.lstrip(" "))
    return None


def is_cloud_config(text: str) -> bool:
    """What cloud-init takes for cloud-config by its first line (after rendering, for a Jinja template)."""
    return text.startswith("#cloud-config") or (jinja.is_template(text)
                                                 and jinja.rendered_head(text).startswith("#cloud-config"))


def _from_text(doc: Document, where: tuple[Any, ...], text: str, label: str, template: bool = False) -> CloudConfig:
    aside = jinja.set_aside(text) if jinja.is_template(text) else None
    try:
        data, positions = yamlpos.load(aside.text if aside else text)
    except yamlpos.DocumentError as exc:
        return CloudConfig(None, where, label, error=exc.message, template=template, jinja=aside)
    return CloudConfig(data, where, label, positions, _block(doc, where), template=template, jinja=aside)


def cloud_configs(doc: Document) -> Iterator[CloudConfig]:
    """Every cloud-config of a cloud-config file or a HOT template whose content is known offline."""
    if doc.kind == "cloud-config":
        yield CloudConfig(doc.data, (), jinja=doc.derived.get("jinja"))
        return
    if doc.kind != "hot":
        return
    for name, body in hot.resources(doc.data, "OS::Heat::CloudConfig"):
        cfg = hot.props(body).get("cloud_config")
        if isinstance(cfg, dict):  # with intrinsic functions inside, only its keys are known offline
            yield CloudConfig(cfg, ("resources", name, "properties", "cloud_config"), template=_has_functions(cfg))
    for rtype, prop in _TEXT_HOLDERS:
        for name, body in hot.resources(doc.data, rtype):
            text = hot.props(body).get(prop)
            where = ("resources", name, "properties", prop)
            if isinstance(text, str) and is_cloud_config(text):
                yield _from_text(doc, where, text, f"{prop}: ")
            elif isinstance(text, dict) and len(text) == 1 and next(iter(text)) in hot.STR_REPLACE:
                args = next(iter(text.values()))
                template = args.get("template") if isinstance(args, dict) else None
                if isinstance(template, str) and is_cloud_config(template):
                    fn = next(iter(text))
                    yield _from_text(doc, (*where, fn, "template"), template, f"{prop} template: ", True)
    for name, body in hot.resources(doc.data, "OS::Heat::MultipartMime"):
        parts = hot.props(body).get("parts")
        for i, part in enumerate(parts if isinstance(parts, list) else []):
            text = part.get("config") if isinstance(part, dict) else None
            if isinstance(text, str) and is_cloud_config(text):  # inline: a referenced config is checked where it is
                yield _from_text(doc, ("resources", name, "properties", "parts", i, "config"), text,
                                 f"parts[{i}].config: ")
