"""Rendering findings: text (after cfn-lint), JSON, SARIF 2.1.0."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nfvcat import __version__
from nfvcat.findings import Finding

if TYPE_CHECKING:
    from nfvcat.rules.base import Rule

SARIF_LEVEL = {"error": "error", "warning": "warning", "informational": "note"}


def text(findings: Sequence[Finding], files: int) -> str:
    lines = []
    for f in findings:
        lines += [f"{f.rule_id} {f.message}", f"{f.file}:{f.line}:{f.column}", ""]
    errors = sum(1 for f in findings if f.severity == "error")
    warnings = sum(1 for f in findings if f.severity == "warning")
    lines.append(f"{errors} error(s), {warnings} warning(s) in {files} file(s)")
    return "\n".join(lines)


def as_json(findings: Sequence[Finding]) -> str:
    return json.dumps([f.to_json() for f in findings], indent=2)


def sarif(findings: Sequence[Finding], rules: Sequence[Rule]) -> str:
    index = {r.id: i for i, r in enumerate(rules)}
    results: list[dict[str, Any]] = []
    for f in findings:
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
