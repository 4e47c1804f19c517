"""Output CI tools parse (issue #42, item 4): a text finding is one line, ``path:line:col: severity id:
message``, with any further lines of its message indented under it (what GCC writes and editors' and CI's problem
matchers read); ``validate --format junit`` is one test case per file checked, each finding a failure, valid
against the Jenkins xUnit plugin's JUnit schema."""

from __future__ import annotations

import re

from lxml import etree

from nfvcat.core.findings import Finding
from nfvcat.validation import report
from tests import junitxsd
from tests.conftest import ROOT, nfvcat

RULES = ROOT / "tests" / "fixtures" / "rules"
# The problem matcher a GitHub Actions workflow would register for it (the gcc one's shape).
MATCHER = re.compile(r"^(?P<file>[^:\s][^:]*):(?P<line>\d+):(?P<col>\d+): (?P<severity>error|warning|informational) "
                     r"(?P<id>[EWI]\d{4}): (?P<message>.+)$")


def test_every_text_finding_is_one_matchable_line() -> None:
    proc = nfvcat("validate", str(RULES / "E1001"), str(RULES / "W3004"), str(RULES / "E0010"))
    assert proc.returncode == 2
    lines = proc.stdout.splitlines()
    findings = [m.groupdict() for m in map(MATCHER.match, lines) if m]
    summary = lines[-1]
    errors, warnings = (int(n) for n in re.match(r"(\d+) error\(s\), (\d+) warning\(s\)", summary).groups())  # type: ignore[union-attr]
    assert len(findings) == errors + warnings and errors and warnings, proc.stdout
    assert {f["id"] for f in findings} >= {"E1001", "W3004", "E0010"}
    assert all(line == "" or MATCHER.match(line) or line.startswith("    ") for line in lines[:-1]), proc.stdout


def test_a_message_of_several_lines_is_indented_under_its_finding() -> None:
    f = Finding("a.yaml", 3, 5, "E1001", "first line\nthe detail\nmore", "heat")
    assert report.text([f], 1).splitlines() == [
        "a.yaml:3:5: error E1001: first line", "    the detail", "    more", "",
        "1 error(s), 0 warning(s) in 1 file(s)"]
    assert report.text([], 2) == "0 error(s), 0 warning(s) in 2 file(s)"


def test_junit_is_one_case_per_file_with_findings_as_failures() -> None:
    fail, ok = RULES / "E0010" / "fail" / "entry.yaml", RULES / "E1001" / "pass.yaml"
    proc = nfvcat("validate", "--format", "junit", str(fail), str(ok), str(RULES / "W3004" / "fail.yaml"))
    assert proc.returncode == 2
    assert junitxsd.problems(proc.stdout.encode()) == []
    doc = etree.fromstring(proc.stdout.encode())
    cases = {c.get("name"): c for c in doc.iter("testcase")}
    assert set(cases) == {str(p.relative_to(ROOT)) for p in (fail, ok, RULES / "W3004" / "fail.yaml")}
    assert cases[str(ok.relative_to(ROOT))].find("failure") is None
    failures = cases[str(fail.relative_to(ROOT))].findall("failure")
    assert failures and all(f.get("type") == "error" and f.get("message").startswith("E0010: ") for f in failures)
    assert all(MATCHER.match(f.text) for f in failures)
    warned = cases[str((RULES / "W3004" / "fail.yaml").relative_to(ROOT))].findall("failure")
    assert [f.get("type") for f in warned] == ["warning"]
    suite = doc.find("testsuite")
    assert suite.get("tests") == "3" and int(suite.get("failures")) == len(failures) + 1


def test_junit_of_a_clean_run_is_valid_too() -> None:
    proc = nfvcat("validate", "--format", "junit", str(RULES / "E1001" / "pass.yaml"))
    assert proc.returncode == 0 and junitxsd.problems(proc.stdout.encode()) == []
    assert etree.fromstring(proc.stdout.encode()).find("testsuite").get("failures") == "0"


def test_text_in_xml_is_kept_xml() -> None:
    f = Finding("a\x1b[31m.yaml", 1, 1, "E0005", "bad \x00 byte", "nfvcat")
    xml = report.junit([f], ["a\x1b[31m.yaml"])
    assert junitxsd.problems(xml.encode()) == []
