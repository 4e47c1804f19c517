"""Stage 1, read: which paths a call checks (the catalog, or the paths given, expanded by discovery) and every
document as this run reads it: the same Document for the same file however many stages ask, an editor's
unsaved buffer in place of its file."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nfvcat import catalog
from nfvcat.core import documents, hot
from nfvcat.core.documents import Document
from nfvcat.core.errors import UserError
from nfvcat.validation import discovery
from nfvcat.validation.model import Options
from nfvcat.validation.project import Project


class Library:
    """Every document this run has read, by absolute path; an overlay (unsaved content) is read as its file."""

    def __init__(self, reader: Callable[[str], Document], overlays: dict[str, str]):
        self.reader = reader
        self.overlays = overlays
        self.docs: dict[str, Document] = {}

    def doc(self, path: str) -> Document:
        key = os.path.abspath(path)
        if key not in self.docs:
            text = self.overlays.get(key)
            self.docs[key] = self.reader(path) if text is None else documents.from_text(path, text)
        return self.docs[key]

    def data(self, path: Path) -> Any:
        """A catalog file's data as this run reads it; None when it does not read (reported elsewhere)."""
        doc = self.doc(str(path))
        return doc.data if not doc.problems else None


@dataclass
class Targets:
    paths: list[str]  # in order, each once
    explicit: set[str] = field(default_factory=set)  # named on the command line: never silently skipped
    excluded: list[str] = field(default_factory=list)  # .nfvcat.yaml exclude
    skipped: list[str] = field(default_factory=list)  # none of nfvcat's kinds, found by a walk (filled by walk)


def targets(paths: list[str], options: Options, root: Path | None) -> Targets:
    """The paths a call checks: the catalog's files when none are given."""
    catalog_mode = not paths
    if catalog_mode:
        if root is None:
            raise UserError("no catalog here (no templates/ and flavors/ above the current directory); "
                            "give the files to validate")
        paths = [str(p) for p in catalog.catalog_files(root)]
    found = discovery.expand(paths, options.project or Project(Path.cwd()), options.skip_unknown or catalog_mode)
    return Targets(list(dict.fromkeys(found.paths)), found.explicit, found.excluded)


def walk(t: Targets, library: Library, checked: list[Document], reached: set[str]) -> Iterator[Document]:
    """The targets' documents, each read when it is its turn; ``checked`` gets those not skipped (counted as
    the call's files), ``t.skipped`` the others. Then the templates they nest (a template resource, a group's
    member) that are no target: ``reached`` gets their paths (they are checked as a target would be, without
    the call's -P and -e, which are their parent's)."""
    for path in t.paths:
        doc = library.doc(path)
        if discovery.skipped(doc, t.explicit):
            t.skipped.append(doc.path)
            continue
        checked.append(doc)
        yield doc
    seen = {os.path.abspath(p) for p in t.paths}
    queue = [p for doc in list(checked) for p in _nests(doc)]
    while queue:
        path = os.path.abspath(queue.pop(0))
        if path in seen:
            continue
        seen.add(path)
        doc = library.doc(path)
        if doc.kind == "hot" and not doc.problems:  # one that does not read is E1002's (Heat's bundling)
            reached.add(doc.abspath)
            checked.append(doc)
            yield doc
            queue.extend(_nests(doc))


def _nests(doc: Document) -> list[str]:
    if doc.kind != "hot" or doc.problems:
        return []
    return [path for _, path, _ in hot.reached_templates(doc.data, os.path.dirname(doc.abspath))
            if os.path.isfile(path)]
