"""Rendering findings: text (after cfn-lint), JSON, SARIF 2.1.0."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nfvcat import __version__
from nfvcat.core.findings import Finding

if TYPE_CHECKING:
    from nfvcat.core.findings import Suppressed
    from nfvcat.validation.rules.base import Rule

SARIF_LEVEL = {"error": "error", "warning": "warning", "informational": "note"}
SRCROOT = "%SRCROOT%"  # the base id GitHub code scanning resolves against the repository's checkout


def line(f: Finding, note: str = "") -> list[str]:
    """One finding as compilers write theirs, so editors' and CI's problem matchers read it:
    ``path:line:col: severity id: message``, any further lines of the message indented under it."""
    first, *rest = (f.message + note).splitlines() or [""]
    return [f"{f.file}:{f.line}:{f.column}: {f.severity} {f.rule_id}: {first}", *(f"    {r}" for r in rest)]


def text(findings: Sequence[Finding], files: int, skipped: int = 0, excluded: int = 0,
         suppressed: Sequence[Suppressed] = (), show_suppressed: bool = False) -> str:
    lines = []
    for f in findings:
        lines += line(f)
    if show_suppressed:
        for s in suppressed:
            lines += line(s.finding, f" (suppressed by {s.by}{': ' + s.reason if s.reason else ''})")
    if lines:
        lines.append("")
    errors = sum(1 for f in findings if f.severity == "error")
    warnings = sum(1 for f in findings if f.severity == "warning")
    more = [f"{n} {what}" for n, what in ((len(suppressed), "suppressed"), (excluded, "excluded by .nfvcat.yaml"),
                                          (skipped, "skipped (none of nfvcat's kinds)")) if n]
    summary = f"{errors} error(s), {warnings} warning(s) in {files} file(s)"
    lines.append(summary + (f"; {', '.join(more)}" if more else ""))
    return "\n".join(lines)


def junit(findings: Sequence[Finding], checked: Sequence[str], seconds: float = 0.0) -> str:
    """JUnit XML as the Jenkins xUnit plugin's schema (junit-10.xsd) takes it, written by junitparser as the
    campaign reports are: one test case per file checked, each finding of it a failure (an error finding) or
    a failure of type warning; a finding in a file that was not a target (a nested template's) gets its own."""
    import io

    from junitparser import Failure, xunit2
    from junitparser.junitparser import FinalResult

    from nfvcat.core.xmltext import xml_text

    by_file: dict[str, list[Finding]] = {f: [] for f in checked}
    for f in findings:
        by_file.setdefault(f.file, []).append(f)
    suite = xunit2.TestSuite("nfvcat validate")
    for path, found in by_file.items():
        case = xunit2.TestCase(xml_text(path), classname="nfvcat.validate", time=0)
        results: list[FinalResult] = []
        for f in found:
            result = Failure(xml_text(f"{f.rule_id}: {f.message.splitlines()[0] if f.message else ''}"[:500]),
                             f.severity)
            result.text = xml_text("\n".join(line(f)))
            results.append(result)
        case.result = results
        suite.add_testcase(case)
    top = xunit2.JUnitXml("nfvcat validate")
    top.add_testsuite(suite)
    top.update_statistics()
    suite.time = top.time = round(seconds, 3)
    out = io.BytesIO()
    top.write(out, pretty=True)
    return out.getvalue().decode("utf-8")


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


def source_root(start: str) -> str:
    """The repository ``%SRCROOT%`` stands for: the nearest directory at or above ``start`` holding ``.git``
    (a directory, or the file of a worktree or submodule); ``start`` itself outside any repository."""
    here = start = os.path.abspath(start)
    while not os.path.exists(os.path.join(here, ".git")):
        parent = os.path.dirname(here)
        if parent == here:
            return start
        here = parent
    return here


def artifact_location(path: str, cwd: str, root: str) -> dict[str, str]:
    """SARIF's artifactLocation of a finding's file (relative to ``cwd``, or absolute): a percent-encoded URI
    relative to ``root`` with ``%SRCROOT%`` as its base, so a file has one URI from any directory; a file
    outside ``root`` gets its absolute file URI."""
    from pathlib import PurePosixPath
    from urllib.parse import quote

    full = os.path.normpath(os.path.join(cwd, path))
    rel = os.path.relpath(full, root)
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return {"uri": PurePosixPath(full).as_uri()}
    return {"uri": quote(rel.replace(os.sep, "/")), "uriBaseId": SRCROOT}


def sarif(findings: Sequence[Finding], rules: Sequence[Rule], suppressed: Sequence[Suppressed] = (),
          cwd: str | None = None) -> str:
    """SARIF 2.1.0 as GitHub code scanning takes it: artifact URIs relative to the repository's root
    (``originalUriBaseIds``), for a call made in ``cwd`` (default: the current directory)."""
    from pathlib import PurePosixPath

    cwd = os.path.abspath(cwd or os.getcwd())
    root = source_root(cwd)
    index = {r.id: i for i, r in enumerate(rules)}
    results: list[dict[str, Any]] = []
    for f, why in [(f, None) for f in findings] + [(s.finding, s) for s in suppressed]:
        result: dict[str, Any] = {
            "ruleId": f.rule_id,
            "level": SARIF_LEVEL[f.severity],
            "message": {"text": f.message},
            "locations": [{"physicalLocation": {
                "artifactLocation": artifact_location(f.file, cwd, root),
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
            "originalUriBaseIds": {SRCROOT: {"uri": PurePosixPath(root).as_uri().rstrip("/") + "/"}},
            "results": results,
        }],
    }
    return json.dumps(doc, indent=2)
