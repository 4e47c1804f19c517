"""Every rule has a failing and a passing fixture: the failing one yields the rule, the passing one not.

All fixtures go through one `nfvcat validate` run (each engine starts once), each passed explicitly.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from nfvcat.validation.rules import all_rules
from tests.conftest import ROOT, findings_of

FIXTURES = ROOT / "tests" / "fixtures" / "rules"
# Rules whose failing case cannot be a file; the test named here provokes them for real.
TESTED_ELSEWHERE = {"E0009": "tests/unit/test_cli.py::test_engine_that_cannot_run_is_E0009_exit_3"}


def _cases(kind: str) -> dict[str, list[Path]]:
    """Every fail* (or pass*) fixture of every rule: a rule may have one per case it knows."""
    out = {}
    for d in sorted(p for p in FIXTURES.iterdir() if p.is_dir()):
        found = sorted(p for p in d.glob(f"{kind}*") if p.name != "make.py")
        if found:
            out[d.name] = found
        elif kind == "fail" and d.name == "E0002":
            out[d.name] = [d / "fail.yaml"]  # missing on purpose
    return out


@pytest.fixture(scope="module")
def results() -> dict[str, dict[str, dict[str, set[str]]]]:
    """kind -> rule -> fixture name -> the rule ids its validation yielded."""
    for script in FIXTURES.glob("*/make.py"):
        import runpy

        runpy.run_path(str(script), run_name="__main__")
    cases = {k: _cases(k) for k in ("fail", "pass")}
    paths = [str(p) for kind in cases.values() for files in kind.values() for p in files]
    _, findings = findings_of(*paths)
    ids: dict[str, set[str]] = defaultdict(set)
    for f in findings:
        ids[str(Path(str(f["file"])).resolve()).split("!")[0]].add(str(f["id"]))
    out: dict[str, dict[str, dict[str, set[str]]]] = {"fail": {}, "pass": {}}
    for kind, per_rule in cases.items():
        for rule_id, files in per_rule.items():
            out[kind][rule_id] = {}
            for path in files:
                resolved = str(path.resolve())
                out[kind][rule_id][path.name] = set().union(*(v for k, v in ids.items() if k == resolved
                                                              or k.startswith(resolved + "/")))
    return out


@pytest.mark.parametrize("rule", [r.id for r in all_rules()])
def test_failing_fixture_yields_the_rule(rule: str, results: dict[str, dict[str, dict[str, set[str]]]]) -> None:
    if rule in TESTED_ELSEWHERE:
        pytest.skip(f"provoked by {TESTED_ELSEWHERE[rule]}")
    assert rule in results["fail"], f"no tests/fixtures/rules/{rule}/fail*"
    for name, found in results["fail"][rule].items():
        assert rule in found, f"{rule} {name} yielded {sorted(found)}"


@pytest.mark.parametrize("rule", [r.id for r in all_rules()])
def test_passing_fixture_does_not(rule: str, results: dict[str, dict[str, dict[str, set[str]]]]) -> None:
    if rule in TESTED_ELSEWHERE:
        pytest.skip(f"provoked by {TESTED_ELSEWHERE[rule]}")
    assert rule in results["pass"], f"no tests/fixtures/rules/{rule}/pass*"
    for name, found in results["pass"][rule].items():
        assert not found, f"{rule} {name} yielded {sorted(found)}"
