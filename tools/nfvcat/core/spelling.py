"""'Did you mean ...?': the closest known word by edit distance, for keys a tool ignores silently."""

from __future__ import annotations

from collections.abc import Iterable


def distance(a: str, b: str) -> int:
    """Edit distance counting a swap of two adjacent characters as one edit (optimal string alignment)."""
    rows = [list(range(len(b) + 1))]
    for i, ca in enumerate(a, 1):
        row = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            row[j] = min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                row[j] = min(row[j], rows[-2][j - 2] + 1)
        rows.append(row)
    return rows[-1][-1]


def closest(word: str, known: Iterable[str]) -> str | None:
    """The known word ``word`` most likely misspells: at most one edit away for words of up to five
    characters, two for longer ones, ignoring case and '-' versus '_'; None when nothing is that close."""
    def norm(s: str) -> str:
        return s.lower().replace("-", "_")

    limit = 1 if len(word) <= 5 else 2
    best: tuple[int, str] | None = None
    for candidate in sorted(set(known)):
        d = distance(norm(word), norm(candidate))
        if d <= limit and (best is None or d < best[0]):
            best = (d, candidate)
    return best[1] if best else None
