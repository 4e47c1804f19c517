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
from nfvcat.core import yamlpos
from nfvcat.core.errors import UserError

ENTRY_FILE = "entry.yaml"
KIND_DIRS = {"heat": ("templates", "heat"), "tosca": ("templates", "tosca"), "vnfd": ("vnfd",),
             "flavor": ("flavors",), "hook": ("hooks",), "image": ("images",)}


@cache
def entry_validator() -> Any:
    import jsonschema

    schema = json.loads(resources.files("nfvcat").joinpath("data/schemas/entry.schema.json").read_text())
    return jsonschema.Draft202012Validator(schema)


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


def template(spec: str, kind: str = "heat", root: Path | None = None) -> Template:
    """The one resolver of a command's TEMPLATE (plan, instantiate, day0, translate): a file as it is (in the
    entry that holds it, if any), an entry directory, or the name of an entry of ``kind`` in the catalog
    (``chain-vrouter``; a VNF also by its short name, ``ipsec-gw`` for ``vnf-ipsec-gw``)."""
    path = Path(spec)
    if path.is_file():
        return Template(path, catalog.entry_of(path))
    if (path / ENTRY_FILE).is_file():
        entry = find(root or catalog.require_root(), spec, kind)
        return Template(entry.template, entry.dir)
    known = entries(root or catalog.require_root(), kind)
    for name in (spec, f"vnf-{spec}"):
        for e in known:
            if name in (e.name, e.dir.name):
                return Template(e.template, e.dir)
    where = "/".join(KIND_DIRS[kind])
    raise UserError(f"{spec}: no such file, nor a {kind} entry in {where} (known: {', '.join(e.name for e in known)})")


def load(entry_dir: Path) -> Entry:
    """The entry in ``entry_dir``, its entry.yaml checked against the schema."""
    path = entry_dir / ENTRY_FILE
    if not path.is_file():
        raise UserError(f"{entry_dir}: no {ENTRY_FILE} (not a catalog entry)")
    data, positions = yamlpos.read_file(path)
    errors = sorted(entry_validator().iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
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
    """An entry of ``kind`` by its name or directory name, or by a path to its directory."""
    path = Path(name)
    if (path / ENTRY_FILE).is_file():
        entry = load(path)
        if entry.kind != kind:
            raise UserError(f"{path}: a {entry.kind} entry, not a {kind} entry")
        return entry
    known = entries(root, kind)
    for e in known:
        if name in (e.name, e.dir.name):
            return e
    where = "/".join(KIND_DIRS[kind])
    raise UserError(f"no {kind} entry '{name}' in {where} (known: {', '.join(e.name for e in known)})")
