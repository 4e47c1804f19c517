"""Stage 6, locate: every raw finding (a key path in a document, or a line an engine gave) to file:line:col.
An engine's finding in another file (a nested template, a get_file) is located in that file."""

from __future__ import annotations

import os

from nfvcat.core.documents import Document
from nfvcat.core.findings import Finding, RawFinding
from nfvcat.validation.engines.jobs import EngineJob
from nfvcat.validation.stages.read import Library


def locate(found: list[tuple[Document, RawFinding]], jobs: list[EngineJob], library: Library) -> list[Finding]:
    out = [finding(doc, raw, library) for doc, raw in found]
    for job in jobs:
        for data in (job.result or {}).get("findings", []):
            raw = RawFinding.from_json(data)
            if raw.file is None:
                raw = RawFinding(raw.rule_id, job.prefix + raw.path, raw.message, raw.engine, None,
                                 raw.line, raw.column)
            out.append(finding(job.doc, raw, library))
    return out


def finding(doc: Document, raw: RawFinding, library: Library) -> Finding:
    target = doc
    if raw.file and os.path.abspath(raw.file) != doc.abspath and os.path.isfile(raw.file):
        target = library.doc(raw.file)
    if raw.line is not None:
        line, col = raw.line, raw.column or 1
    else:
        line, col = target.locate(raw.path)
    shown = target.path if (target is not doc or not raw.file) else doc.path
    if raw.file and not os.path.isfile(raw.file):
        shown = raw.file  # a member of an archive, say
    return Finding(shown, line, col, raw.rule_id, raw.message, raw.engine)
