"""Every released version of a catalog entry, and its files, from the release record's git history.

``nfvcat release`` rewrites ``RELEASES.yaml`` and the record is committed with the catalog, so the commits that
changed the record are the releases: ``git log -- RELEASES.yaml`` lists them in any clone, tags or not (tags do
not travel with a clone unless asked for). The files of ``NAME@VERSION`` are the repository's tree at a commit
whose record holds that version, exported once into the cache and accepted only when every file of every entry
of that record has the recorded sha256 (a release's chain nests other entries of the same release).
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import tarfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from nfvcat import catalog
from nfvcat.catalog import entries, releases
from nfvcat.catalog.versions import parse_version
from nfvcat.core.errors import UserError

SPEC = re.compile(r"^(?P<name>[^@\s]+)@(?P<version>[^@\s]+)$")


@dataclass(frozen=True)
class Release:
    entry: str  # the entry directory relative to the catalog root, e.g. templates/heat/chain-vrouter
    version: str
    commits: tuple[str, ...]  # commits whose record holds this version, oldest first
    record: dict[str, Any]  # the entry's item in the record (files, digest, interface)


def split(spec: str) -> tuple[str, str | None]:
    """``NAME@VERSION`` -> (NAME, VERSION); a plain name -> (name, None)."""
    m = SPEC.match(spec)
    return (m.group("name"), m.group("version")) if m else (spec, None)


def _repo(root: Path) -> Path | None:
    top = releases.run_git(root, "rev-parse", "--show-toplevel")
    return Path(top.stdout.decode().strip()) if top is not None and top.returncode == 0 else None


def released(root: Path) -> dict[str, dict[str, Release]]:
    """entry directory -> version -> Release, from every commit that changed the record (and the record in the
    working tree, for a release not committed yet: no commit holds its files, only the working tree can)."""
    head = releases.run_git(root, "rev-parse", "HEAD")
    path = releases.record_path(root)
    return _released(root.resolve(), head.stdout.strip().decode() if head and head.returncode == 0 else "",
                     path.stat().st_mtime_ns if path.is_file() else 0)


@cache
def _released(root: Path, head: str, record_mtime: int) -> dict[str, dict[str, Release]]:
    found: dict[str, dict[str, tuple[list[str], dict[str, Any]]]] = {}

    def add(record: dict[str, Any], commit: str | None) -> None:
        for path, item in record["entries"].items():
            version = item.get("version")
            if version is None:
                continue
            commits, _ = found.setdefault(str(path), {}).setdefault(str(version), ([], item))
            if commit:
                commits.append(commit)

    for commit, _, record in releases.record_history(root):
        add(record, commit)
    try:
        now = releases.read_record(root)
    except releases.RecordError:
        now = None
    if now is not None:
        add(now, None)
    return {path: {v: Release(path, v, tuple(c), item) for v, (c, item) in by.items()} for path, by in found.items()}


def entry_path(root: Path, name: str, kind: str) -> str:
    """The directory (relative to the catalog root) of the entry of ``kind`` called ``name`` (a VNF also by its
    short name, ``ipsec-gw`` for ``vnf-ipsec-gw``): the working tree's, else the record's (an entry removed since
    its release)."""
    prefix = "/".join(entries.KIND_DIRS[kind]) + "/"
    known = entries.entries(root, kind)
    for cand in (name, f"vnf-{name}"):
        for e in known:
            if cand in (e.name, e.dir.name):
                return os.path.relpath(e.dir, root.resolve()).replace(os.sep, "/")
        for path in released(root):
            if path.startswith(prefix) and path.rsplit("/", 1)[-1] == cand:
                return path
    raise UserError(f"no {kind} entry '{name}' in {prefix.rstrip('/')} nor in the release record")


def versions(root: Path, name: str, kind: str) -> list[str]:
    """The released versions of an entry, oldest first (semver order)."""
    by = released(root).get(entry_path(root, name, kind), {})
    return sorted(by, key=lambda v: (parse_version(v) is not None, parse_version(v) or v))


def newest(root: Path, name: str, kind: str) -> str | None:
    """The newest version the catalog offers: the newest release, or the working tree's when higher."""
    offered = versions(root, name, kind)
    try:
        offered.append(entries.find(root, name, kind).version)
    except UserError:
        pass
    parsed = [(parse_version(v), v) for v in offered if parse_version(v) is not None]
    return max(parsed)[1] if parsed else None


def _digests(base: Path) -> dict[str, str]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d != "__pycache__"]
        for n in filenames:
            if not n.startswith("."):
                p = Path(dirpath) / n
                out[os.path.relpath(p, base).replace(os.sep, "/")] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _matches(tree: Path, record: dict[str, Any], only: str | None = None) -> list[str]:
    """Entries of ``record`` whose files under ``tree`` are not exactly the recorded ones (all, or ``only``)."""
    bad = []
    for path, item in record["entries"].items():
        if only is not None and path != only:
            continue
        want = {str(k): str(v) for k, v in item["files"].items()}
        if _digests(tree / path) != want:
            bad.append(str(path))
    return bad


def _export(repo: Path, commit: str) -> Path:
    """The repository's tree at ``commit``, extracted once into the cache (git archive)."""
    dest = entries.releases_cache() / commit
    if (dest / ".complete").is_file():
        return dest
    proc = releases.run_git(repo, "archive", "--format=tar", commit)
    if proc is None or proc.returncode != 0:
        raise UserError(f"git archive {commit[:12]}: {proc.stderr.decode().strip() if proc else 'git failed'}")
    tmp = dest.with_name(f".{commit}.{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
        tar.extractall(tmp, filter="data")
    (tmp / ".complete").write_text(commit + "\n")
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(tmp, dest)
    return dest


def checkout(root: Path, name: str, kind: str, version: str) -> Path:
    """A catalog root holding ``name`` at ``version``: the working tree when it is that version (released with
    the recorded files, or not released yet), else the release's tree from git, checked file by file against the
    record's sha256. A version never released is an error that lists the released ones."""
    path = entry_path(root, name, kind)
    release = released(root).get(path, {}).get(version)
    try:
        current = entries.find(root, name, kind)
    except UserError:
        current = None
    if current is not None and current.version == version and (
            release is None or not _matches(root, {"entries": {path: release.record}})):
        return root
    if release is None:
        known = ", ".join(versions(root, name, kind)) or "none"
        shallow = releases.run_git(root, "rev-parse", "--is-shallow-repository")
        hint = ("; this clone is shallow, `git fetch --unshallow` brings the history"
                if shallow is not None and shallow.stdout.strip() == b"true" else "")
        raise UserError(f"{name}@{version}: never released (released: {known}){hint}")
    repo = _repo(root)
    if repo is None or not release.commits:
        raise UserError(f"{name}@{version}: recorded, but not in git history here (commit {releases.RECORD_NAME})")
    sub = os.path.relpath(root.resolve(), repo)
    records = {commit: record for commit, _, record in releases.record_history(root)}
    tried = []
    for commit in release.commits:
        tree = _export(repo, commit) / sub
        bad = _matches(tree, records.get(commit) or {"entries": {path: release.record}})
        if not bad:
            return tree.resolve()
        tried.append(f"{commit[:12]} ({', '.join(bad[:3])})")
    raise UserError(f"{name}@{version}: no commit holds the recorded files (sha256 differ at {'; '.join(tried)})")


def resolve(root: Path, spec: str, kind: str) -> entries.Entry:
    """The entry ``NAME`` (the working tree's; a VNF also by its short name), an entry directory, or
    ``NAME@VERSION`` (that release's files, its entry.yaml read as it was released: the schema of its day is
    ``schema_of``'s, later schemas may ask for more)."""
    name, version = split(spec)
    if version is None:
        return entries.find(root, name, kind)
    rel = entry_path(root, Path(name).name, kind)  # vnfd/vnf-vrouter@2.0.0: the entry's name is its directory's
    name = rel.rsplit("/", 1)[-1]
    tree = checkout(root, name, kind, version)
    if tree == root.resolve():
        return entries.find(root, name, kind)
    entry_dir = tree / rel
    meta = entries.read_meta(entry_dir)
    if meta is None:
        raise UserError(f"{entry_dir / entries.ENTRY_FILE}: does not read")
    return entries.Entry(entry_dir.resolve(), meta)


def template(spec: str, kind: str = "heat", root: Path | None = None) -> entries.Template:
    """The one resolver of a command's catalog argument (plan, instantiate, day0, translate, package, upgrade):
    a file as it is (in the entry that holds it, if any), an entry directory, the name of an entry of ``kind``
    (``chain-vrouter``; a VNF also by its short name, ``ipsec-gw``), or ``NAME@VERSION``, that release's files."""
    path = Path(spec)
    if path.is_file():
        return entries.Template(path, catalog.entry_of(path))
    entry = resolve(root or catalog.require_root(), spec, kind)
    return entries.Template(entry.template, entry.dir)


def locate(root: Path, spec: str) -> list[Path]:
    """The directories of the entries ``NAME`` or ``NAME@VERSION`` names, whatever their kind (for the commands
    that take paths: validate); vnf-vrouter is a heat entry and a vnfd entry, each at its own versions."""
    name = split(spec)[0]
    parent = Path(name).parent.as_posix()  # templates/heat/vnf-vrouter@1.1.2: the heat entry only
    found: list[Path] = []
    errors = []
    for kind in entries.KIND_DIRS:
        if parent != "." and not ("/".join(entries.KIND_DIRS[kind])).endswith(parent):
            continue
        try:
            entry_path(root, Path(name).name, kind)
        except UserError:
            continue
        try:
            found.append(resolve(root, spec, kind).dir)
        except UserError as exc:
            errors.append(f"{kind}: {exc}")
    if found:
        return found
    raise UserError("; ".join(errors) if errors else f"{spec}: no such file, nor a catalog entry called {name}")


def target_version(root: Path, name: str, kind: str, to: str | None) -> str | None:
    """``upgrade --to``'s version of the deployed entry ``name``: a VERSION, or the entry as every command names
    one (``NAME@VERSION``, ``NAME`` for the working tree's, or its directory), which must be that entry; None
    gives the newest the catalog offers (None when it offers none)."""
    if to is None:
        return newest(root, name, kind)
    if parse_version(to) is not None:
        return to
    spec, version = split(to)
    want = entry_path(root, name, kind)
    if Path(spec).is_dir():
        entry = entries.find(root, spec, kind)
        got, version = os.path.relpath(entry.dir, root.resolve()).replace(os.sep, "/"), version or entry.version
    else:
        got = entry_path(root, Path(spec).name, kind)
        version = version or entries.find(root, spec, kind).version
    if got != want:
        raise UserError(f"--to {to}: names {got}, but the deployed stack is {want}")
    return version


def release_day(root: Path, spec: str, kind: str) -> str | None:
    """The day ``NAME@VERSION`` was released: the record's date, else the day of the first commit whose record
    holds that version (records before release dates); None for a plain name or a version never released."""
    name, version = split(spec)
    if version is None:
        return None
    path = entry_path(root, Path(name).name, kind)
    return releases.release_date(root, path, version) or releases.recorded_dates(root).get((path, version))


def interface(root: Path, name: str, kind: str, version: str) -> dict[str, Any]:
    """The entry's interface at ``version``: the record's, or the working tree's for an unreleased version."""
    release = released(root).get(entry_path(root, name, kind), {}).get(version)
    if release is not None:
        return dict(release.record.get("interface") or {})
    snap = releases.snapshot(root).get(entry_path(root, name, kind))
    if snap is None or snap.version != version:
        raise UserError(f"{name}@{version}: never released (released: {', '.join(versions(root, name, kind))})")
    return snap.interface


def changelog(entry_dir: Path, after: str, upto: str) -> list[tuple[str, str]]:
    """The sections of the entry's CHANGELOG.md for the versions after ``after`` up to ``upto``, newest first:
    (version, text)."""
    path = entry_dir / "CHANGELOG.md"
    text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
    lo, hi = parse_version(after), parse_version(upto)
    out = []
    for m in re.finditer(r"^## \[?v?([0-9][^\]\s]*)\]?[^\n]*\n(.*?)(?=^## |\Z)", text, re.M | re.S):
        v = parse_version(m.group(1))
        if v is not None and lo is not None and hi is not None and lo < v <= hi:
            out.append((str(v), m.group(2).strip()))
    return out
