"""The defective-template harness: templates with planted defects, each annotated on the offending line.

An annotation is a trailing comment naming the rule(s) expected on that line: ``# expect: E1001`` or
``# expect: E1001, W1005``. Every file of ``tests/fixtures/defective/`` (any kind nfvcat reads) is
validated in one run; a file's ``--format json`` findings are also snapshotted under
``tests/snapshots/defective/`` (``NFVCAT_UPDATE_SNAPSHOTS=1`` rewrites them: review the diff).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.conftest import ROOT, nfvcat

DEFECTIVE = ROOT / "tests" / "fixtures" / "defective"
SNAPSHOTS = ROOT / "tests" / "snapshots" / "defective"
_EXPECT = re.compile(r"#\s*expect:\s*([EWI]\d{4}(?:\s*,\s*[EWI]\d{4})*)")

Expectation = tuple[str, int, str]  # file relative to ROOT, line, rule id


def files(directory: Path = DEFECTIVE) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.is_file())


def expectations(paths: list[Path]) -> set[Expectation]:
    out: set[Expectation] = set()
    for path in paths:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (UnicodeDecodeError, OSError):
            continue
        for number, line in enumerate(lines, 1):
            for group in _EXPECT.findall(line):
                for rule in re.split(r"\s*,\s*", group):
                    out.add((relative(path), number, rule))
    return out


def relative(path: Path | str) -> str:
    p = Path(path)
    p = p if p.is_absolute() else ROOT / p
    try:
        return str(p.resolve().relative_to(ROOT))
    except ValueError:
        return str(p)


def validate(paths: list[Path]) -> list[dict[str, Any]]:
    proc = nfvcat("validate", "--format", "json", "--no-cache", *[str(p) for p in paths])
    assert "Traceback" not in proc.stderr, proc.stderr
    found = json.loads(proc.stdout)["findings"]
    for f in found:
        f["file"] = relative(f["file"])
        f["message"] = str(f["message"]).replace(str(ROOT), "<root>")
    return found


def accuracy(found: list[dict[str, Any]], expected: set[Expectation]) -> tuple[int, list[Expectation]]:
    """How many expectations a finding meets (same file, line and rule), and the ones none meets."""
    got = {(f["file"], f["line"], f["id"]) for f in found}
    missed = sorted(expected - got)
    return len(expected) - len(missed), missed


def snapshot(found: list[dict[str, Any]], path: Path) -> list[dict[str, Any]]:
    rel = relative(path)
    return sorted(({"id": f["id"], "line": f["line"], "column": f["column"], "message": f["message"]}
                   for f in found if f["file"] == rel), key=lambda f: (f["line"], f["column"], f["id"],
                                                                       f["message"]))


def snapshot_file(path: Path) -> Path:
    return SNAPSHOTS / (str(path.relative_to(DEFECTIVE)).replace("/", "__") + ".json")
