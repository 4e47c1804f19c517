"""Every rule has a failing and a passing fixture: the failing one yields the rule, the passing one not.

All fixtures go through one `nfvcat validate` run (each engine starts once), each passed explicitly. A failing
fixture's line annotated ``# expect: ID`` (tests/defective.py's notation) must carry a finding of that rule.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from nfvcat.validation.engines.nova_neutron import RULE_CLASSES
from nfvcat.validation.rules import all_rules
from tests import defective
from tests.conftest import ROOT, findings_of

FIXTURES = ROOT / "tests" / "fixtures" / "rules"
# Rules whose failing case cannot be a file; the test named here provokes them for real.
TESTED_ELSEWHERE = {"E0009": "tests/unit/test_cli.py::test_engine_that_cannot_run_is_E0009_exit_3",
                    "E0016": "tests/unit/test_hostile_input.py::"
                             "test_inputs_that_are_no_regular_file_are_one_finding_each_and_the_server_goes_on"}


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
def found() -> list[dict[str, object]]:
    """The findings of one validation of every fixture."""
    for script in FIXTURES.glob("*/make.py"):
        import runpy

        runpy.run_path(str(script), run_name="__main__")
    cases = {k: _cases(k) for k in ("fail", "pass")}
    paths = [str(p) for kind in cases.values() for files in kind.values() for p in files]
    return findings_of(*paths)[1]


@pytest.fixture(scope="module")
def results(found: list[dict[str, object]]) -> dict[str, dict[str, dict[str, set[str]]]]:
    """kind -> rule -> fixture name -> the rule ids its validation yielded."""
    cases = {k: _cases(k) for k in ("fail", "pass")}
    findings = found
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


def test_annotated_lines_carry_their_finding(found: list[dict[str, object]]) -> None:
    files = [p for fixtures in _cases("fail").values() for f in fixtures
             for p in ([f] if f.is_file() else defective.files(f))]
    expected = defective.expectations(files)
    located = [{**f, "file": defective.relative(str(f["file"]))} for f in found]
    _, missed = defective.accuracy(located, expected)
    assert not missed, "\n".join(
        f"{file}:{line} expected {rule}; found there: {[(f['line'], f['id']) for f in located if f['file'] == file]}"
        for file, line, rule in missed)


def test_e0014_knows_the_algorithms_tacker_knows() -> None:
    from tacker.common.csar_utils import HASH_DICT

    from nfvcat.validation.rules.parsing.e0014_image_checksum import ALGORITHMS

    assert set(ALGORITHMS) == set(HASH_DICT)
    assert all(HASH_DICT[k]().name == v for k, v in ALGORITHMS.items())


def test_e3006_takes_heats_defaults_for_the_properties_left_out() -> None:
    """The rule Neutron is given is the one Heat sends: Heat's schema default for each property left out.

    Heat's registry is read in a process of its own, as the product's Heat worker does: Heat's plugins
    register oslo.config options that clash with those Nova's or Neutron's modules (imported by other
    tests in this worker) already registered."""
    script = """
import json
from heat.engine import resources
from nfvcat.validation.engines.nova_neutron import _FIELDS, HEAT_DEFAULTS
resources.initialise()
env = resources.global_env()
out = {}
for heat_type in HEAT_DEFAULTS:
    schema = env.get_class(heat_type).properties_schema
    out[heat_type] = {k: s.default for k, s in schema.items() if k in _FIELDS and s.default is not None}
print(json.dumps({"heat": out, "ours": HEAT_DEFAULTS}))
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.splitlines()[-1])
    assert set(out["heat"]) == set(RULE_CLASSES)
    for heat_type, defaults in out["ours"].items():
        assert out["heat"][heat_type] == defaults, heat_type
