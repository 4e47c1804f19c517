"""Planted defects are found on their line, and each defective file's findings match its snapshot."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests import defective

FILES = defective.files()


@pytest.fixture(scope="module")
def found() -> list[dict[str, Any]]:
    return defective.validate(FILES)


def test_every_planted_defect_is_reported_on_its_line(found: list[dict[str, Any]]) -> None:
    expected = defective.expectations(FILES)
    assert len(expected) >= 25, "the harness lost its annotations"
    _, missed = defective.accuracy(found, expected)
    assert not missed, "\n".join(
        f"{file}:{line} expected {rule}; found there: "
        f"{[(f['line'], f['id'], f['message'][:90]) for f in found if f['file'] == file]}"
        for file, line, rule in missed)


def test_the_harness_counts_a_finding_on_another_line_as_a_miss() -> None:
    expected = {("t.yaml", 3, "E1001")}
    assert defective.accuracy([{"file": "t.yaml", "line": 1, "id": "E1001"}], expected) == (0, [("t.yaml", 3, "E1001")])
    assert defective.accuracy([{"file": "t.yaml", "line": 3, "id": "E1001"}], expected) == (1, [])


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(defective.DEFECTIVE)) for p in FILES])
def test_findings_match_the_snapshot(path: Path, found: list[dict[str, Any]]) -> None:
    got = defective.snapshot(found, path)
    assert got, f"{path.name} is in the defective set but nothing is found in it"
    snap = defective.snapshot_file(path)
    if os.environ.get("NFVCAT_UPDATE_SNAPSHOTS"):
        snap.parent.mkdir(parents=True, exist_ok=True)
        snap.write_text(json.dumps(got, indent=1) + "\n")
    assert snap.is_file(), f"no snapshot {snap.name}: run with NFVCAT_UPDATE_SNAPSHOTS=1 and review it"
    assert got == json.loads(snap.read_text())
