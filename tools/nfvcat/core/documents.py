"""Reading a file into a Document: bytes, text, parsed data, key positions and the kind of document.

The kind is taken from the content (as Heat, tosca-parser and cloud-init would see it), not the name.
"""

from __future__ import annotations

import os
import zipfile
import zlib
from dataclasses import dataclass, field
from typing import Any

from nfvcat.core import confine, jinja, yamlpos
from nfvcat.core.findings import RawFinding
from nfvcat.core.problems import DUPLICATE_KEY, NOT_REGULAR, NOT_TEXT, OUTSIDE, TOO_LARGE, UNREADABLE

KINDS = ("hot", "cfn", "environment", "tosca", "vnfd", "csar", "cloud-config", "flavor", "entry",
         "site-profile", "inventory", "placement-request", "test-description", "unknown")
# The version keys by which Heat tells a CloudFormation-format template (heat.engine.template.get_version).
CFN_VERSION_KEYS = {"AWSTemplateFormatVersion", "HeatTemplateFormatVersion"}
HEAT_ENV_SECTIONS = {"parameters", "parameter_defaults", "resource_registry", "event_sinks",
                     "encrypted_param_names", "parameter_merge_strategies"}
# What Python's zipfile raises on a damaged or unsupported archive, besides BadZipFile: NotImplementedError (a
# newer format version, an unknown compression; a RuntimeError), RuntimeError (an encrypted member), EOFError and
# zlib.error (a truncated or corrupt member), ValueError, LargeZipFile, OSError. A CSAR that raises one of these is
# "not a readable zip archive" (E4004), never a crash.
ZIP_ERRORS = (OSError, EOFError, RuntimeError, ValueError, zlib.error, zipfile.BadZipFile, zipfile.LargeZipFile)
CLOUD_CONFIG_HINT_KEYS = {"runcmd", "write_files", "packages", "bootcmd", "users", "ssh_authorized_keys",
                          "package_update", "chpasswd", "ntp", "final_message", "power_state"}


@dataclass(eq=False)
class Document:
    path: str  # as shown to the user
    abspath: str
    kind: str = "unknown"
    raw: bytes = b""
    text: str = ""
    data: Any = None
    positions: yamlpos.Positions = field(default_factory=yamlpos.Positions)
    problems: list[RawFinding] = field(default_factory=list)  # found while reading
    # what is computed from the content alone, kept with it: the engine server keeps a document between
    # validations while its file is unchanged, so an unchanged nested template is not worked on again
    derived: dict[str, Any] = field(default_factory=dict, repr=False)

    def locate(self, path: tuple[Any, ...] | list[Any]) -> tuple[int, int]:
        return self.positions.locate(tuple(path))


def display_path(path: str) -> str:
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def detect_kind(data: Any, text: str, name: str) -> str:
    """What a tool of the field would take this document for."""
    if text.lstrip("\ufeff").startswith("#cloud-config"):
        return "cloud-config"
    if jinja.is_template(text) and jinja.rendered_head(text).startswith("#cloud-config"):
        return "cloud-config"
    if not isinstance(data, dict):
        return "unknown"
    if "heat_template_version" in data:
        return "hot"
    if CFN_VERSION_KEYS & set(data):
        return "cfn"  # a Heat template in the CloudFormation format (Heat's own engine takes both)
    if "tosca_definitions_version" in data:
        imports = str(data.get("imports", ""))
        nodes = (data.get("topology_template") or {}) if isinstance(data.get("topology_template"), dict) else {}
        sub = nodes.get("substitution_mappings") if isinstance(nodes, dict) else None
        if "etsi_nfv_sol001" in imports or (isinstance(sub, dict) and "VNF" in str(sub.get("node_type", ""))):
            return "vnfd"
        return "tosca"
    if data.get("kind") == "nfvcat/site-profile" or ("physnets" in data and "kind" not in data):
        return "site-profile"
    if data.get("kind") == "nfvcat/inventory":
        return "inventory"
    if data.get("kind") == "nfvcat/placement-request":
        return "placement-request"
    if data.get("kind") == "nfvcat/test-description":
        return "test-description"
    if os.path.basename(name) == "entry.yaml" or data.get("kind") == "nfvcat/entry":
        return "entry"
    if "extra_specs" in data and ("vcpus" in data or "ram" in data):
        return "flavor"
    if data and (set(data) <= HEAT_ENV_SECTIONS or set(data) & HEAT_ENV_SECTIONS - {"parameters"}):
        return "environment"  # with a section only Heat has, even beside a misspelt one (Heat's parser names it)
    if data and set(data) & CLOUD_CONFIG_HINT_KEYS:
        return "cloud-config"  # cloud-config body without its header: a rule says so
    return "unknown"


def _problem(doc: Document, rule_id: str, message: str, line: int = 1, column: int = 1) -> Document:
    doc.problems.append(RawFinding(rule_id, (), message, line=line, column=column))
    return doc


def read(path: str) -> Document:
    """The document at ``path``, read as ``confine`` allows (a regular file under the call's roots, at most its
    size cap); what it does not allow is a problem of the document, and nothing is read."""
    doc = Document(path=display_path(path), abspath=os.path.abspath(path))
    policy = confine.current()
    try:
        if os.path.isdir(path):
            return _problem(doc, UNREADABLE.id, "is a directory with no catalog files")
        policy.check(path, doc.path)
        confine.check_regular(path)
        if zipfile.is_zipfile(path):
            doc.kind = "csar"  # its members are bounded where the package is read (csar)
            return doc
        doc.raw = confine.read_bytes(path, policy=policy)
    except confine.Outside as exc:
        return _problem(doc, OUTSIDE.id, f"{exc.why}")
    except confine.NotRegular as exc:
        return _problem(doc, NOT_REGULAR.id, exc.why)
    except confine.TooLarge as exc:
        return _problem(doc, TOO_LARGE.id, exc.why)
    except FileNotFoundError:
        return _problem(doc, UNREADABLE.id, "no such file")
    except OSError as exc:
        return _problem(doc, UNREADABLE.id, f"cannot read: {exc.strerror or exc}")
    return _parse(doc, path)


def from_text(path: str, text: str) -> Document:
    """The document ``path`` would be with ``text`` as its content (an editor's unsaved buffer)."""
    raw = text.encode("utf-8", "surrogatepass")
    limit = confine.current().max_bytes
    doc = Document(path=display_path(path), abspath=os.path.abspath(path), raw=raw[:limit + 1])
    if len(raw) > limit:
        return _problem(doc, TOO_LARGE.id, f"file is {len(raw)} bytes, larger than the {limit} byte limit "
                                           f"(--max-file-size, {confine.MAX_BYTES_ENV})")
    return _parse(doc, path)


def _parse(doc: Document, path: str) -> Document:
    if doc.raw.startswith(b"PK\x03\x04") or path.endswith((".zip", ".csar")):
        return _problem(doc, NOT_TEXT.id, "not a readable ZIP archive (a CSAR must be one)")
    if not doc.raw.strip():
        return _problem(doc, NOT_TEXT.id, "empty file")
    if b"\x00" in doc.raw:
        return _problem(doc, NOT_TEXT.id, "binary file (NUL bytes), not a YAML or JSON document")
    try:
        doc.text = doc.raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _problem(doc, NOT_TEXT.id, f"not UTF-8 text (byte {exc.start})")
    text = doc.text
    if jinja.is_template(text):  # cloud-init renders it first: its data is what remains of the template's text
        aside = jinja.set_aside(text)
        text = aside.text
        doc.derived["jinja"] = aside
    try:
        doc.data, doc.positions = yamlpos.load(text)
    except yamlpos.DocumentError as exc:
        if doc.text.lstrip().startswith("#cloud-config"):
            doc.kind = "cloud-config"
        return _problem(doc, exc.rule_id, exc.message, exc.line, exc.column)
    statements = "jinja" in doc.derived and doc.derived["jinja"].statements
    for dup_path, line, col in doc.positions.duplicates if not statements else ():  # branches may both set one
        doc.problems.append(RawFinding(
            DUPLICATE_KEY.id, dup_path, f"duplicate key '{dup_path[-1]}': YAML keeps only the last one",
            line=line, column=col))
    doc.kind = detect_kind(doc.data, doc.text, path)
    return doc
