"""Findings the user accepted (after cfn-lint's ``Metadata: cfn-lint: config: ignore_checks``):

- in a HOT resource: ``metadata: {nfvcat: {ignore: [E1003]}}`` covers the findings inside that resource;
- in any YAML file: a comment line ``# nfvcat: ignore-file E1003,W3004`` covers the whole file;
- in the project file ``.nfvcat.yaml``: ``ignore`` entries by rule and path glob.

A rule id may be a prefix (``W3`` covers every W3xxx). A suppressed finding is not printed and does not
fail the run, but it is counted and listed with ``--show-suppressed``. E0009 (an engine could not run)
is never suppressed: a check that did not run has no finding to accept.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

from nfvcat.core.documents import Document
from nfvcat.core.findings import Finding, Suppressed
from nfvcat.validation.emitted import ENGINE_FAILURE
from nfvcat.validation.project import Project

NEVER = frozenset({ENGINE_FAILURE.id})
FILE_COMMENT = re.compile(r"^[ \t]*#[ \t]*nfvcat:[ \t]*ignore-file\b[ \t]*([^\n#]*)", re.MULTILINE)
RULE_ID = re.compile(r"^[EWI][0-9]{0,4}$")


@dataclass(frozen=True)
class _Span:
    first: int
    last: int  # inclusive; 0: to the end of the file
    rules: tuple[str, ...]
    by: str


def _ids(text: str) -> tuple[str, ...]:
    return tuple(t for t in re.split(r"[\s,]+", text.strip()) if RULE_ID.match(t))


def _spans(doc: Document) -> list[_Span]:
    """The suppressions a document declares, as line spans."""
    out: list[_Span] = []
    for m in FILE_COMMENT.finditer(doc.text):
        ids = _ids(m.group(1))
        line = doc.text.count("\n", 0, m.start()) + 1
        if ids:
            out.append(_Span(1, 0, ids, f"{doc.path}:{line}"))
    data = doc.data
    resources = data.get("resources") if doc.kind == "hot" and isinstance(data, dict) else None
    if not isinstance(resources, dict):
        return out
    top = sorted(doc.locate((key,))[0] for key in data)
    starts = sorted((doc.locate(("resources", name))[0], name) for name in resources)
    for i, (first, name) in enumerate(starts):
        body = resources[name]
        meta = body.get("metadata") if isinstance(body, dict) else None
        own = meta.get("nfvcat") if isinstance(meta, dict) else None
        ignore = own.get("ignore") if isinstance(own, dict) else None
        if isinstance(ignore, str):
            ignore = [ignore]
        if not isinstance(ignore, list):
            continue
        ids = _ids(" ".join(str(x) for x in ignore))
        if not ids:
            continue
        following = [s for s, _ in starts[i + 1:]] + [t for t in top if t > first]
        last = min(following) - 1 if following else 0
        where = doc.locate(("resources", name, "metadata", "nfvcat", "ignore"))[0]
        out.append(_Span(first, last, ids, f"{doc.path}:{where}"))
    return out


def split(findings: Iterable[Finding], docs: dict[str, Document],
          project: Project | None) -> tuple[list[Finding], list[Suppressed]]:
    """(findings to report, findings suppressed); ``docs`` by absolute path."""
    kept: list[Finding] = []
    gone: list[Suppressed] = []
    spans: dict[str, list[_Span]] = {}
    for f in findings:
        if f.rule_id in NEVER:
            kept.append(f)
            continue
        key = os.path.abspath(f.file)
        if key not in spans:
            doc = docs.get(key)
            spans[key] = _spans(doc) if doc is not None and doc.text else []
        hit = next((s for s in spans[key] if any(f.rule_id.startswith(r) for r in s.rules)
                    and s.first <= f.line and (s.last == 0 or f.line <= s.last)), None)
        if hit is not None:
            gone.append(Suppressed(f, hit.by))
            continue
        entry = project.ignored(f.rule_id, f.file) if project is not None else None
        if entry is not None and project is not None:
            shown = str(project.path) if project.path else ".nfvcat.yaml"
            gone.append(Suppressed(f, os.path.relpath(shown) if not os.path.relpath(shown).startswith("..")
                                   else shown, entry.reason, external=True))
            continue
        kept.append(f)
    return kept, sorted(gone)
