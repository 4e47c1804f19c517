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
    error_line: int = 1  # the line of the text where it stops being YAML

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


def block_of(doc: Document, where: tuple[Any, ...]) -> tuple[int, int] | None:
    """(line of ``key: |``, indentation of the block's text) for a literal block scalar at ``where``."""
    return _block(doc, where)


def is_cloud_config(text: str) -> bool:
    """What cloud-init takes for cloud-config by its first line (after rendering, for a Jinja template)."""
    return text.startswith("#cloud-config") or (jinja.is_template(text)
                                                 and jinja.rendered_head(text).startswith("#cloud-config"))


def as_cloud_init_reads(text: str, data: Any) -> Any:
    """The data cloud-init makes of cloud-config text (``util.load_yaml``: PyYAML's safe loader), where it
    differs from the data read here the way Heat reads YAML: an unquoted date (``2030-01-01``) is a date, not a
    string. ``data`` (what yamlpos read, with its limits checked) when the text is not plain YAML."""
    import yaml

    try:
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (yaml.YAMLError, ValueError, TypeError, RecursionError):
        return data


def _from_text(doc: Document, where: tuple[Any, ...], text: str, label: str, template: bool = False,
               offset: int = 0) -> CloudConfig:
    """The cloud-config of ``text``, the value at ``where``; ``offset``: the lines before it in that value (a
    MIME part's, after the message's headers and the parts before it)."""
    aside = jinja.set_aside(text) if jinja.is_template(text) else None
    block = _block(doc, where)
    if block is not None:
        block = (block[0] + offset, block[1])
    try:
        data, positions = yamlpos.load(aside.text if aside else text)
    except yamlpos.DocumentError as exc:
        return CloudConfig(None, where, label, error=exc.message, template=template, jinja=aside,
                           block=block, error_line=exc.line)
    data = as_cloud_init_reads(aside.text if aside else text, data)
    return CloudConfig(data, where, label, positions, block, template=template, jinja=aside)


# cloud-init 22.4.2 (cloudinit/handlers/__init__.py INCLUSION_TYPES_MAP, user_data.py): the first line that
# makes a part's type when its Content-Type is text/plain or text/x-not-multipart (or text/x-shellscript),
# longest first, and the types its handlers take; any other type is logged ("Unhandled unknown
# content-type") and the part is dropped.
STARTS_WITH = {
    "#include": "text/x-include-url", "#include-once": "text/x-include-once-url", "#!": "text/x-shellscript",
    "#cloud-config": "text/cloud-config", "#part-handler": "text/part-handler",
    "#cloud-boothook": "text/cloud-boothook", "#cloud-config-archive": "text/cloud-config-archive",
    "#cloud-config-jsonp": "text/cloud-config-jsonp", "## template: jinja": "text/jinja2",
}
HANDLED_TYPES = frozenset({*STARTS_WITH.values(), "text/x-shellscript-per-boot", "text/x-shellscript-per-instance",
                           "text/x-shellscript-per-once", "text/upstart-job"})
_SNIFFED = ("text/plain", "text/x-not-multipart", "text/x-shellscript")


def cloud_init_type(declared: str, payload: str) -> str:
    """The type cloud-init gives a part (user_data._process_msg): its Content-Type, or for text/plain (and
    text/x-not-multipart, text/x-shellscript) the one its first line names (handlers.type_from_starts_with)."""
    if declared in _SNIFFED:
        head = payload.lower()
        for prefix in sorted(STARTS_WITH, key=lambda p: -len(p)):
            if head.startswith(prefix):
                return STARTS_WITH[prefix]
    return declared


@dataclass
class MimePart:
    index: int
    content_type: str  # as cloud-init takes it
    declared: str  # the part's Content-Type
    filename: str | None
    payload: str
    line: int  # line of the payload's first line in the message's text; 0 when it is encoded
    header_line: int  # line of the part's Content-Type header (1 when not found)


def is_mime(text: str) -> bool:
    """Text cloud-init reads as a MIME message: headers first, a multipart Content-Type among them."""
    head = text.lstrip("\ufeff").split("\n\n", 1)[0].lower()
    return head.startswith(("content-type:", "mime-version:", "from ")) and "multipart/" in head


def mime_parts(text: str) -> list[MimePart]:
    """The leaf parts of a MIME multipart message, each with where its text is in the message's lines."""
    import email

    try:
        message = email.message_from_string(text)
    except Exception:  # the email package's own failures: cloud-init's too
        return []
    if not message.is_multipart():
        return []
    lines = text.split("\n")
    out: list[MimePart] = []
    cursor = 0
    for part in message.walk():
        if part.is_multipart():
            continue
        declared = part.get_content_type()
        encoding = str(part.get("Content-Transfer-Encoding", "")).lower()
        raw = part.get_payload(decode=True)
        payload = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(part.get_payload())
        header = next((i for i in range(cursor, len(lines)) if lines[i].lower().startswith("content-type:")
                       and declared.split("/")[0] in lines[i].lower()), None)
        start = 0
        if header is not None:
            cursor = header + 1
            blank = next((i for i in range(cursor, len(lines)) if not lines[i].strip()), None)
            if blank is not None and encoding not in ("base64", "quoted-printable"):
                start = blank + 2
                cursor = blank + 1
        out.append(MimePart(len(out), cloud_init_type(declared, payload), declared, part.get_filename(), payload,
                            start, header + 1 if header is not None else 1))
    return out


def cloud_configs(doc: Document) -> Iterator[CloudConfig]:
    """Every cloud-config of a cloud-config file or a HOT template whose content is known offline."""
    if doc.kind == "cloud-config":
        aside = doc.derived.get("jinja")
        data = doc.data if doc.data is None else as_cloud_init_reads(aside.text if aside else doc.text, doc.data)
        yield CloudConfig(data, (), jinja=aside)
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
            elif isinstance(text, str) and is_mime(text):  # each part a document of its own, with its lines
                for part in mime_parts(text):
                    if part.content_type == "text/cloud-config" and part.line:
                        yield _from_text(doc, where, part.payload, f"{prop} MIME part {part.index + 1}: ",
                                         offset=part.line - 1)
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
