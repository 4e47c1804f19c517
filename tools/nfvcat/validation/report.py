"""Rendering findings: text (after cfn-lint), JSON, SARIF 2.1.0."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nfvcat import __version__
from nfvcat.core.findings import Finding

if TYPE_CHECKING:
    from nfvcat.core.findings import Suppressed
    from nfvcat.validation.rules.base import Rule

SARIF_LEVEL = {"error": "error", "warning": "warning", "informational": "note"}


def text(findings: Sequence[Finding], files: int, skipped: int = 0, excluded: int = 0,
         suppressed: Sequence[Suppressed] = (), show_suppressed: bool = False) -> str:
    lines = []
    for f in findings:
        lines += [f"{f.rule_id} {f.message}", f"{f.file}:{f.line}:{f.column}", ""]
    if show_suppressed:
        for s in suppressed:
            f = s.finding
            lines += [f"{f.rule_id} {f.message} (suppressed by {s.by}{': ' + s.reason if s.reason else ''})",
                      f"{f.file}:{f.line}:{f.column}", ""]
    errors = sum(1 for f in findings if f.severity == "error")
    warnings = sum(1 for f in findings if f.severity == "warning")
    more = [f"{n} {what}" for n, what in ((len(suppressed), "suppressed"), (excluded, "excluded by .nfvcat.yaml"),
                                          (skipped, "skipped (none of nfvcat's kinds)")) if n]
    summary = f"{errors} error(s), {warnings} warning(s) in {files} file(s)"
    lines.append(summary + (f"; {', '.join(more)}" if more else ""))
    return "\n".join(lines)


def as_json(findings: Sequence[Finding], files: int = 0, skipped: Sequence[str] = (), excluded: Sequence[str] = (),
            suppressed: Sequence[Suppressed] = ()) -> str:
    """``findings`` reported, ``suppressed`` ones with where they were suppressed, and the counts."""
    return json.dumps({
        "findings": [f.to_json() for f in findings],
        "suppressed": [s.to_json() for s in suppressed],
        "summary": {"files": files, "errors": sum(1 for f in findings if f.severity == "error"),
                    "warnings": sum(1 for f in findings if f.severity == "warning"),
                    "suppressed": len(suppressed), "skipped": len(skipped), "excluded": len(excluded)},
        "skipped": list(skipped),
        "excluded": list(excluded),
    }, indent=2)


def sarif(findings: Sequence[Finding], rules: Sequence[Rule], suppressed: Sequence[Suppressed] = ()) -> str:
    index = {r.id: i for i, r in enumerate(rules)}
    results: list[dict[str, Any]] = []
    for f, why in [(f, None) for f in findings] + [(s.finding, s) for s in suppressed]:
        result: dict[str, Any] = {
            "ruleId": f.rule_id,
            "level": SARIF_LEVEL[f.severity],
            "message": {"text": f.message},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": f.file},
                "region": {"startLine": f.line, "startColumn": f.column}}}],
            "properties": {"engine": f.engine},
        }
        if f.rule_id in index:
            result["ruleIndex"] = index[f.rule_id]
        if why is not None:  # SARIF 2.1.0 §3.35: inSource (template, comment) or external (.nfvcat.yaml)
            result["suppressions"] = [{"kind": "external" if why.external else "inSource", "status": "accepted",
                                       "justification": why.reason or f"suppressed by {why.by}"}]
        results.append(result)
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "nfvcat", "version": __version__, "informationUri": "https://docs.openstack.org/heat/",
                "rules": [{"id": r.id, "name": type(r).__name__, "shortDescription": {"text": r.shortdesc},
                           "fullDescription": {"text": r.description}, "helpUri": r.source_url,
                           "defaultConfiguration": {"level": SARIF_LEVEL[r.severity]}} for r in rules],
            }},
            "results": results,
        }],
    }
    return json.dumps(doc, indent=2)
