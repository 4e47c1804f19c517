"""The catalog tier: the whole catalog validates with no error and no warning, every entry has the
shape the conventions ask for, and each entry's `--format json` result matches its snapshot."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from nfvcat import catalog
from tests.conftest import ROOT, nfvcat

SNAPSHOTS = ROOT / "tests" / "catalog" / "snapshots"
ENTRIES = sorted(p.parent for d in catalog.CATALOG_DIRS for p in (ROOT / d).glob("**/entry.yaml"))


def test_catalog_has_entries_of_every_kind() -> None:
    kinds = {yaml.safe_load((e / "entry.yaml").read_text())["kind"] for e in ENTRIES}
    assert {"heat", "flavor", "hook"} <= kinds, kinds


def test_whole_catalog_is_clean() -> None:
    proc = nfvcat("validate", "--strict", "--format", "json")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert json.loads(proc.stdout)["findings"] == []


@pytest.mark.parametrize("entry", ENTRIES, ids=[str(e.relative_to(ROOT)) for e in ENTRIES])
def test_entry_shape(entry: Path) -> None:
    meta = yaml.safe_load((entry / "entry.yaml").read_text())
    assert (entry / "README.md").is_file() and (entry / "CHANGELOG.md").is_file()
    assert meta["version"] in (entry / "CHANGELOG.md").read_text(), "CHANGELOG has no line for this version"
    if meta["kind"] == "image":  # the recipe is the entry; the lock is what its build made
        assert (entry / "image.lock").is_file(), f"never built: nfvcat image build {meta['name']}"
    else:
        assert (entry / meta["template"]).is_file()
    if meta["kind"] == "heat":
        assert list((entry / "examples").glob("*.yaml")), "a HOT entry needs an example environment"


@pytest.mark.parametrize("entry", ENTRIES, ids=[str(e.relative_to(ROOT)) for e in ENTRIES])
def test_entry_matches_its_validation_snapshot(entry: Path) -> None:
    proc = nfvcat("validate", "--format", "json", str(entry.relative_to(ROOT)))
    assert "Traceback" not in proc.stderr
    result = {"exit": proc.returncode, "findings": json.loads(proc.stdout)["findings"]}
    snap = SNAPSHOTS / (str(entry.relative_to(ROOT)).replace(os.sep, "__") + ".json")
    if os.environ.get("NFVCAT_UPDATE_SNAPSHOTS"):
        snap.parent.mkdir(parents=True, exist_ok=True)
        snap.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    assert snap.is_file(), f"no snapshot {snap.name}: run with NFVCAT_UPDATE_SNAPSHOTS=1 and review it"
    assert result == json.loads(snap.read_text())


def test_entry_readmes_match_their_templates() -> None:
    proc = nfvcat("docs", "--check")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_entries_are_versioned_against_the_last_release() -> None:
    """Changed entries are bumped, broken interfaces are major bumps (vs the committed RELEASES.yaml)."""
    proc = nfvcat("versions", "--format", "json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
