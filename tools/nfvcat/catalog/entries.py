"""Catalog entries: one directory each, described by its ``entry.yaml``. The one loader of entry.yaml.

An entry is read and checked against ``nfvcat/data/schemas/entry.schema.json`` (the schema rule E0010 uses in
``nfvcat validate``); a broken one is a one-line error naming the file, line and column.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from nfvcat import catalog
from nfvcat.core import dirs, yamlpos
from nfvcat.core.errors import UserError

ENTRY_FILE = "entry.yaml"
KIND_DIRS = {"heat": ("templates", "heat"), "tosca": ("templates", "tosca"), "vnfd": ("vnfd",),
             "flavor": ("flavors",), "hook": ("hooks",), "image": ("images",)}


def releases_cache() -> Path:
    """Where the trees of released commits are exported (``history.checkout``), one directory per commit."""
    return Path(dirs.cache_base()) / "releases"


def schema_of(path: Path) -> Path | None:
    """The entry schema a released entry was released with, when ``path`` is in a release's tree (the cache's
    export of its commit): that tree's schema file, wherever the nfvcat of that day kept it; None for anything
    else (today's schema)."""
    base = releases_cache().resolve()
    try:
        commit = path.resolve().relative_to(base).parts[0]
    except (ValueError, IndexError):
        return None
    found = sorted((base / commit / "tools").glob("**/schemas/entry.schema.json"))
    return found[0] if found else None


def release_rules(path: str | Path) -> frozenset[str] | None:
    """The rules that applied when the release whose tree holds ``path`` was made (the ids of the rule modules
    in that tree, ``e0014_image_checksum.py`` -> E0014): a rule added since does not judge it. None for a file of
    no release tree (every rule)."""
    base = releases_cache().resolve()
    try:
        commit = Path(path).resolve().relative_to(base).parts[0]
    except (ValueError, IndexError):
        return None
    return _rule_ids(base / commit)


@cache
def _rule_ids(tree: Path) -> frozenset[str]:
    return frozenset(p.name[:5].upper() for p in (tree / "tools").glob("**/rules/**/[ew][0-9][0-9][0-9][0-9]_*.py"))


@cache
def entry_validator(schema_file: Path | None = None) -> Any:
    """The validator of entry.yaml: today's schema (shipped in the package), or ``schema_file``, the schema a
    released entry was released with (``history.schema_of``)."""
    import jsonschema

    text = (schema_file.read_text(encoding="utf-8") if schema_file is not None
            else resources.files("nfvcat").joinpath("data/schemas/entry.schema.json").read_text())
    return jsonschema.Draft202012Validator(json.loads(text))


@dataclass(frozen=True)
class Entry:
    dir: Path
    meta: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.meta["name"])

    @property
    def version(self) -> str:
        return str(self.meta["version"])

    @property
    def kind(self) -> str:
        return str(self.meta["kind"])

    @property
    def template(self) -> Path:
        """The entry's main file (``template:``); an entry without one cannot be deployed or packaged."""
        name = self.meta.get("template")
        if not isinstance(name, str):
            raise UserError(f"{self.dir / ENTRY_FILE}: no 'template' (the entry's main file)")
        return (self.dir / name).resolve()

    @property
    def images(self) -> list[dict[str, Any]]:
        return [i for i in self.meta.get("images") or [] if isinstance(i, dict)]

    def state(self, resource: str, parent: str = "") -> list[dict[str, str]]:
        """What the server ``resource`` holds that a replacement does not inherit, and how to carry it over
        (entry.yaml ``state``): this entry's own, or, with ``parent``, the entry whose template the resource
        ``parent`` of this entry's template nests (a chain's VNF)."""
        meta = self.meta
        if parent:
            try:
                data = yamlpos.load(self.template.read_text(encoding="utf-8"))[0]
            except (OSError, UnicodeDecodeError, yamlpos.DocumentError):
                return []
            res = ((data.get("resources") or {}) if isinstance(data, dict) else {}).get(parent)
            rtype = res.get("type") if isinstance(res, dict) else None
            if not isinstance(rtype, str) or not rtype.endswith((".yaml", ".yml")):
                return []
            nested = catalog.entry_of(self.template.parent / rtype)
            found = read_meta(nested) if nested else None
            if nested is None or found is None:
                return []
            meta = found
        return [dict(s) for s in meta.get("state") or [] if isinstance(s, dict) and s.get("resource") == resource]

    def examples(self) -> list[Path]:
        return catalog.examples_of(self.dir)

    def example(self, name: str) -> Path | None:
        """An example environment by file name or short name (``sriov`` for examples/sriov.env.yaml)."""
        return example(self.dir, name)

    def environments(self, names: list[str]) -> list[Path]:
        """Environment files as given (``-e``): a path, or the name of one of the entry's examples."""
        return environments(self.dir, names)


def example(entry_dir: Path, name: str) -> Path | None:
    """An example environment of the entry in ``entry_dir`` by file name or short name (``sriov``)."""
    for cand in (entry_dir / "examples" / name, entry_dir / "examples" / f"{name}.env.yaml",
                 entry_dir / "examples" / f"{name}.yaml"):
        if cand.is_file():
            return cand
    return None


def environments(entry_dir: Path | None, names: list[str]) -> list[Path]:
    """Environment files as given (``-e``): a path, or the name of one of the examples of the entry in
    ``entry_dir`` (None: a template of no entry, so paths only)."""
    out = []
    for name in names:
        path = Path(name) if Path(name).is_file() else example(entry_dir, name) if entry_dir else None
        if path is None:
            raise UserError(f"-e {name}: no such file" + (f", nor an example of {entry_dir.name}" if entry_dir else ""))
        out.append(path)
    return out


@dataclass
class Template:
    """What a command's TEMPLATE argument names: the template file and the entry directory it belongs to."""

    path: Path
    entry_dir: Path | None  # None: a file of no catalog entry

    def environments(self, names: list[str]) -> list[Path]:
        """``-e`` values: files, or the entry's examples by short name (``-e sriov``)."""
        return environments(self.entry_dir, names)


def load(entry_dir: Path) -> Entry:
    """The entry in ``entry_dir``, its entry.yaml checked against the schema (a released entry's: the schema
    of its day, ``schema_of``)."""
    path = entry_dir / ENTRY_FILE
    if not path.is_file():
        raise UserError(f"{entry_dir}: no {ENTRY_FILE} (not a catalog entry)")
    data, positions = yamlpos.read_file(path)
    errors = sorted(entry_validator(schema_of(entry_dir)).iter_errors(data),
                    key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        line, col = positions.locate(tuple(errors[0].absolute_path))
        raise UserError(f"{path}:{line}:{col}: {errors[0].message} (E0010; run nfvcat validate)")
    return Entry(entry_dir.resolve(), data)


def read_meta(entry_dir: Path) -> dict[str, Any] | None:
    """An entry.yaml's data without the schema check, None when it does not read or is no mapping: for the
    tools that sweep the catalog (nfvcat docs, onboarding's image references) and leave a broken entry to
    ``nfvcat validate`` (E0010) instead of stopping."""
    try:
        data = yamlpos.load((entry_dir / ENTRY_FILE).read_text(encoding="utf-8"))[0]
    except (OSError, UnicodeDecodeError, yamlpos.DocumentError):
        return None
    return data if isinstance(data, dict) else None


def entry_dirs(root: Path, top: str) -> list[Path]:
    """The entry directories below ``root/top`` (at any depth), in a stable order."""
    base = root / top
    return sorted(p.parent for p in base.rglob(ENTRY_FILE)) if base.is_dir() else []


def entries(root: Path, kind: str | None = None) -> list[Entry]:
    """Every entry of the catalog at ``root`` (of one kind), in a stable order."""
    kinds = [kind] if kind else list(KIND_DIRS)
    out: list[Entry] = []
    for k in kinds:
        base = root.joinpath(*KIND_DIRS[k])
        for path in sorted(base.glob(f"*/{ENTRY_FILE}")) if base.is_dir() else []:
            entry = load(path.parent)
            if entry.kind == k:
                out.append(entry)
    return out


def find(root: Path, name: str, kind: str) -> Entry:
    """An entry of ``kind`` by its name or directory name (a VNF also by its short name), or by a path to its
    directory."""
    path = Path(name)
    if (path / ENTRY_FILE).is_file():
        entry = load(path)
        if entry.kind != kind:
            raise UserError(f"{path}: a {entry.kind} entry, not a {kind} entry")
        return entry
    known = entries(root, kind)
    for cand in (name, f"vnf-{name}"):  # a VNF also by its short name: ipsec-gw for vnf-ipsec-gw
        for e in known:
            if cand in (e.name, e.dir.name):
                return e
    where = "/".join(KIND_DIRS[kind])
    raise UserError(f"{name}: no such file, nor a {kind} entry in {where} (known: {', '.join(e.name for e in known)})")
