"""The project file ``.nfvcat.yaml`` (after cfn-lint's ``.cfnlintrc``): found at or above the working
directory, checked against ``nfvcat/data/schemas/project.schema.json``.

    exclude: [".github/**", "charts/**"]          # never read these files
    ignore:
      - rules: [W3004]                              # suppressed: counted, listed with --show-suppressed
        paths: ["templates/legacy/**"]
        reason: migrated next release
    site: sites/edge.yaml                           # as --site
    strict: true                                    # as --strict
    allow_roots: [../shared-hooks]                  # as --allow-root: more than the project may be referenced
    max_file_size: 8M                               # as --max-file-size: the largest file read

Globs are relative to the file's directory; a glob without ``/`` matches a name at any depth, ``**``
spans directories, and a glob that matches a directory matches everything below it.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from nfvcat.core import confine
from nfvcat.core.errors import UserError

FILE_NAME = ".nfvcat.yaml"


@dataclass(frozen=True)
class Ignore:
    rules: tuple[str, ...]
    paths: tuple[str, ...] = ()  # empty: everywhere
    reason: str = ""


@dataclass
class Project:
    base: Path  # globs are relative to it
    path: Path | None = None  # the .nfvcat.yaml read, if any
    exclude: list[str] = field(default_factory=list)
    ignore: list[Ignore] = field(default_factory=list)
    site: str | None = None  # resolved against base
    strict: bool = False
    allow_roots: list[str] = field(default_factory=list)  # resolved against base
    max_bytes: int | None = None

    def relative(self, path: str) -> str | None:
        """``path`` relative to the project, with '/'; None when it is outside."""
        rel = os.path.relpath(os.path.abspath(path), self.base)
        return None if rel == ".." or rel.startswith("../") else rel.replace(os.sep, "/")

    def excluded(self, path: str) -> bool:
        rel = self.relative(path)
        return rel is not None and any(matches(g, rel) for g in self.exclude)

    def ignored(self, rule_id: str, path: str) -> Ignore | None:
        """The ``ignore`` entry that suppresses ``rule_id`` in ``path``, if one does."""
        rel = self.relative(path)
        for entry in self.ignore:
            if not any(rule_id.startswith(r) for r in entry.rules):
                continue
            if not entry.paths or (rel is not None and any(matches(g, rel) for g in entry.paths)):
                return entry
        return None


def find(start: str | None = None) -> Path | None:
    """The nearest ``.nfvcat.yaml`` at or above ``start`` (default: the working directory)."""
    here = Path(start or os.getcwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / FILE_NAME).is_file():
            return candidate / FILE_NAME
    return None


def load(path: Path | None = None) -> Project:
    """The project file at ``path`` (default: the one ``find`` finds); an empty project without one.

    A bad file is a UserError naming file:line:col (exit 1)."""
    path = path or find()
    if path is None:
        return Project(base=Path(os.getcwd()).resolve())
    shown = os.path.relpath(path) if not os.path.relpath(path).startswith("..") else str(path)
    from nfvcat.core import yamlpos  # not on the client's fast path when there is no project file

    data, positions = yamlpos.read_file(path, shown)
    if data is None:
        data = {}
    import jsonschema

    errors = sorted(jsonschema.Draft202012Validator(_schema()).iter_errors(data),
                    key=lambda e: positions.locate(tuple(e.absolute_path)))
    if errors:
        err = errors[0]
        at = tuple(err.absolute_path)
        if err.validator == "additionalProperties" and isinstance(err.instance, dict):
            known = err.schema.get("properties", {}) if isinstance(err.schema, dict) else {}
            at += tuple(k for k in err.instance if k not in known)[:1]  # point at the unknown key
        line, col = positions.locate(at)
        where = "/" + "/".join(str(p) for p in at)
        raise UserError(f"{shown}:{line}:{col}: {FILE_NAME} does not match its schema at {where}: {err.message}")
    base = path.parent.resolve()
    site = data.get("site")
    return Project(
        base=base, path=path, exclude=list(data.get("exclude", [])),
        ignore=[Ignore(tuple(e["rules"]), tuple(e.get("paths", ())), e.get("reason", ""))
                for e in data.get("ignore", [])],
        site=str(base / site) if isinstance(site, str) else None, strict=bool(data.get("strict", False)),
        allow_roots=[str(base / r) for r in data.get("allow_roots", [])],
        max_bytes=confine.parse_size(data["max_file_size"]) if "max_file_size" in data else None)


@cache
def _schema() -> dict[str, Any]:
    from importlib import resources

    return dict(json.loads(resources.files("nfvcat").joinpath("data/schemas/project.schema.json").read_text()))


@cache
def _regex(glob: str) -> re.Pattern[str]:
    """A glob as a regex over a '/'-separated relative path (gitignore's reading of '/' and '**')."""
    anchored = "/" in glob.rstrip("/")
    glob = glob.strip("/")
    out = []
    i = 0
    while i < len(glob):
        c = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if glob.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = glob.find("]", i + 1)
            if end < 0:
                out.append(re.escape(c))
            else:
                body = glob[i + 1:end]
                out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    body = "".join(out)
    # unanchored: a name at any depth; either way, a match on a directory covers what is below it
    return re.compile(("(?:.*/)?" if not anchored else "") + body + "(?:/.*)?")


def matches(glob: str, rel: str) -> bool:
    """True when the relative path ``rel`` (or a directory above it) matches ``glob``."""
    return _regex(glob).fullmatch(rel) is not None
