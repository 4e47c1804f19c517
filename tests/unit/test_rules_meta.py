"""The rule set itself: unique ids in the right ranges, documented, and docs/rules.md up to date."""

from __future__ import annotations

import ast
import re

from nfvcat.commands.rules import markdown
from nfvcat.validation.rules import DECLARING as DECLARING_MODULES
from nfvcat.validation.rules import all_rules
from tests.conftest import ROOT
from tests.unit.test_rule_fixtures import FIXTURES, TESTED_ELSEWHERE

RULE_ID = re.compile(r"[EWI]\d{4}")
DECLARING = {m.__name__ for m in DECLARING_MODULES}
RANGES = {"0": "parsing", "1": "hot", "2": "flavors", "3": "networks", "4": "tosca", "5": "chains", "6": "day0"}


def test_ids_are_unique_well_formed_and_in_their_domain() -> None:
    rules = all_rules()
    ids = [r.id for r in rules]
    assert len(ids) == len(set(ids))
    for r in rules:
        assert re.fullmatch(r"[EWI]\d{4}", r.id), r.id
        if type(r).__module__ in DECLARING:  # declared with the code that emits it: no file of its own
            continue
        domain = type(r).__module__.split(".")[3]
        assert domain == RANGES[r.id[1]], f"{r.id} lives in rules/{domain}, its range is {RANGES[r.id[1]]}"
        assert type(r).__module__.split(".")[-1].startswith(r.id.lower()), f"{r.id}: one file per rule, named after it"


def test_every_rule_is_documented() -> None:
    for r in all_rules():
        assert r.shortdesc and len(r.description) > 40, r.id
        assert r.source_url.startswith("https://"), r.id


def test_every_rule_has_fixtures_or_a_named_test() -> None:
    for r in all_rules():
        d = FIXTURES / r.id
        if r.id in TESTED_ELSEWHERE:
            continue
        assert list(d.glob("fail*")) or r.id == "E0002", f"{r.id}: no failing fixture"
        assert list(d.glob("pass*")), f"{r.id}: no passing fixture"


def test_docs_rules_md_is_generated_from_the_rules() -> None:
    current = (ROOT / "docs" / "rules.md").read_text()
    assert current == markdown(all_rules()), \
        "docs/rules.md drifted: run `nfvcat rules --format markdown > docs/rules.md`"


def _id_literals() -> list[tuple[str, int, str, bool]]:
    """(file, line, id, is a rule class's own ``id = ...``) for every string literal that is a rule id in
    tools/nfvcat."""
    found = []
    for py in sorted((ROOT / "tools" / "nfvcat").rglob("*.py")):
        tree = ast.parse(py.read_text(), str(py))
        declarations = {id(node.value) for cls in ast.walk(tree) if isinstance(cls, ast.ClassDef)
                        for node in cls.body if isinstance(node, ast.Assign)
                        and [getattr(t, "id", None) for t in node.targets] == ["id"]}
        declarations |= {id(call.args[0]) for call in ast.walk(tree) if isinstance(call, ast.Call)
                         and getattr(call.func, "id", None) == "Declared" and call.args}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and RULE_ID.fullmatch(node.value):
                found.append((str(py.relative_to(ROOT)), node.lineno, node.value, id(node) in declarations))
    return found


def test_every_rule_id_the_code_names_is_a_declared_rule() -> None:
    declared = {r.id for r in all_rules()}
    literals = _id_literals()
    assert {i for _, _, i, own in literals if own} == declared  # the scan sees every declaration
    undeclared = [(f, line, i) for f, line, i, _ in literals if i not in declared]
    assert not undeclared, f"rule ids emitted but not declared as rules: {undeclared}"


def test_engines_and_the_runner_emit_through_the_rule_classes() -> None:
    loose = [(f, line, i) for f, line, i, own in _id_literals() if not own]
    assert not loose, f"use the rule class's id (e.g. ENGINE_FAILURE.id), not a string literal: {loose}"
