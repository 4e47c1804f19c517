"""Line accuracy: the share of planted defects reported on the offending line, by rule.

Reads the annotated defective templates (``# expect: E1001`` on the offending line) of
``tests/fixtures/defective/`` or of the directories given, runs ``nfvcat validate`` once over them and
prints the figure. Run: .venv/bin/python -m tests.bench.bench_lines [DIR...]
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from tests import defective


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dirs", nargs="*", type=Path, default=[defective.DEFECTIVE])
    args = parser.parse_args()
    paths = [p for d in args.dirs for p in defective.files(d)]
    expected = defective.expectations(paths)
    found = defective.validate(paths)
    hits, missed = defective.accuracy(found, expected)
    per_rule = Counter(rule for _, _, rule in expected)
    missed_rule = Counter(rule for _, _, rule in missed)
    print(f"{len(paths)} files, {len(expected)} planted defects")
    for rule in sorted(per_rule):
        ok = per_rule[rule] - missed_rule[rule]
        print(f"  {rule}: {ok}/{per_rule[rule]} on the offending line")
    share = 100.0 * hits / len(expected) if expected else 0.0
    print(f"line accuracy: {hits}/{len(expected)} = {share:.1f}%")
    for file, line, rule in missed:
        print(f"  missed {rule} at {file}:{line}")


if __name__ == "__main__":
    main()
