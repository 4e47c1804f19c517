"""Version discipline of catalog entries, checked against the previous release (a git tag).

Rules, per entry (a directory with an ``entry.yaml``):

- any change to the entry's files needs a higher ``version`` than at the tag;
- the version never goes down and is valid semver;
- for HOT entries, removing, renaming or retyping a parameter or an output, or adding a parameter without
  a default, breaks existing stacks and environment files: it needs a major bump (for 0.x versions a
  minor bump, as semver allows anything before 1.0.0);
- a major bump needs an "Upgrading to X.0.0" note in the entry's CHANGELOG.md.

Old files are read with ``git show TAG:path``; new files are the working tree (tracked and untracked,
minus ignored files), so the check runs before a commit as well as in CI.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from typing import Any

from nfvcat import yamlpos
from nfvcat.catalog import CATALOG_DIRS

_SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z.-]+))?$")


class VersionsError(Exception):
    """git or the repository cannot answer (one line for the user)."""


@dataclass(frozen=True, order=True)
class Version:
    major: int
    minor: int
    patch: int
    release: int  # 1 for a release, 0 for a pre-release (which sorts before its release)
    pre: tuple[Any, ...] = ()

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        return text if self.release else text + "-" + ".".join(str(p) for p in self.pre)


def parse_version(text: Any) -> Version | None:
    m = _SEMVER.match(str(text)) if isinstance(text, str) else None
    if m is None:
        return None
    pre: tuple[Any, ...] = ()
    if m.group(4):
        # numeric identifiers sort before alphanumeric ones, numerically among themselves
        pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in m.group(4).split("."))
    return Version(int(m.group(1)), int(m.group(2)), int(m.group(3)), 0 if m.group(4) else 1, pre)


@dataclass
class EntryReport:
    entry: str  # directory relative to the repository
    version_old: str | None = None
    version_new: str | None = None
    changed_files: list[str] = field(default_factory=list)
    breaking: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "entry": self.entry, "version_old": self.version_old, "version_new": self.version_new,
            "changed_files": self.changed_files, "breaking": self.breaking, "errors": self.errors,
            "notes": self.notes,
        }


class Repo:
    """The few git questions this check asks, for the repository holding ``path``."""

    def __init__(self, path: str):
        self.top = self._run(os.path.abspath(path), "rev-parse", "--show-toplevel").strip()

    @staticmethod
    def _run(cwd: str, *args: str, binary: bool = False) -> Any:
        try:
            proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False, timeout=60)
        except FileNotFoundError:
            raise VersionsError("git is not installed") from None
        except subprocess.TimeoutExpired:
            raise VersionsError(f"git {args[0]} timed out") from None
        if proc.returncode != 0:
            msg = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            raise VersionsError(f"git {' '.join(args[:2])}: {msg[-1] if msg else 'failed'}")
        return proc.stdout if binary else proc.stdout.decode("utf-8", "replace")

    def git(self, *args: str, binary: bool = False) -> Any:
        return self._run(self.top, *args, binary=binary)

    def last_tag(self) -> str | None:
        try:
            return str(self.git("describe", "--tags", "--abbrev=0")).strip() or None
        except VersionsError:
            return None

    def check_ref(self, ref: str) -> None:
        self.git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")

    def files_at(self, ref: str, dirs: list[str]) -> list[str]:
        out = self.git("ls-tree", "-r", "--name-only", "-z", ref, "--", *dirs)
        return [p for p in str(out).split("\0") if p]

    def show(self, ref: str, path: str) -> bytes:
        return bytes(self.git("show", f"{ref}:{path}", binary=True))

    def files_now(self, dirs: list[str]) -> list[str]:
        out = self.git("ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", *dirs)
        return sorted({p for p in str(out).split("\0") if p and os.path.isfile(os.path.join(self.top, p))})

    def read_now(self, path: str) -> bytes:
        with open(os.path.join(self.top, path), "rb") as f:
            return f.read()


def _load(raw: bytes) -> Any:
    try:
        return yamlpos.load(raw.decode("utf-8"))[0]
    except (UnicodeDecodeError, yamlpos.DocumentError):
        return None


def _group(paths: list[str]) -> dict[str, list[str]]:
    """Files grouped by the entry directory (deepest directory with an entry.yaml) they belong to."""
    entries = sorted({os.path.dirname(p) for p in paths if os.path.basename(p) == "entry.yaml"},
                     key=len, reverse=True)
    grouped: dict[str, list[str]] = {e: [] for e in entries}
    for p in paths:
        for e in entries:
            if p.startswith(e + "/"):
                grouped[e].append(p)
                break
    return grouped


def interface(template: Any) -> tuple[dict[str, dict[str, Any]], set[str]]:
    """Parameters (name -> spec) and output names of a parsed HOT template."""
    if not isinstance(template, dict):
        return {}, set()
    params = template.get("parameters")
    outputs = template.get("outputs")
    p = {str(k): (v if isinstance(v, dict) else {}) for k, v in params.items()} if isinstance(params, dict) else {}
    o = {str(k) for k in outputs} if isinstance(outputs, dict) else set()
    return p, o


def breaking_changes(old: Any, new: Any) -> list[str]:
    """What in a HOT template's parameters and outputs breaks existing stacks and environment files."""
    old_p, old_o = interface(old)
    new_p, new_o = interface(new)
    out: list[str] = []
    for name, spec in old_p.items():
        if name not in new_p:
            out.append(f"parameter '{name}' removed or renamed")
        elif str(spec.get("type")) != str(new_p[name].get("type")):
            out.append(f"parameter '{name}' retyped from {spec.get('type')} to {new_p[name].get('type')}")
    for name, spec in new_p.items():
        if name not in old_p and "default" not in spec:
            out.append(f"new parameter '{name}' has no default")
    for name in sorted(old_o - new_o):
        out.append(f"output '{name}' removed or renamed")
    return out


def _changelog_has_upgrade_note(text: str, version: Version) -> bool:
    return f"upgrading to {version.major}.0.0" in text.lower()


def compare(root: str, against: str | None = None) -> tuple[str | None, list[EntryReport]]:
    """Compare every entry under ``root`` with the tag ``against`` (default: the last tag).

    Returns the tag used (None when the repository has no tag) and one report per entry.
    """
    repo = Repo(root)
    tag = against or repo.last_tag()
    prefix = os.path.relpath(os.path.abspath(root), repo.top)
    prefix = "" if prefix == "." else prefix.replace(os.sep, "/") + "/"
    dirs = [prefix + d for d in CATALOG_DIRS]
    now = _group(repo.files_now(dirs))
    if tag is None:
        return None, [EntryReport(e, notes=["no previous release"]) for e in sorted(now)]
    repo.check_ref(tag)
    then = _group(repo.files_at(tag, dirs))
    reports: list[EntryReport] = []
    for entry in sorted(set(now) | set(then)):
        report = EntryReport(entry)
        reports.append(report)
        if entry not in then:
            meta = _load(repo.read_now(f"{entry}/entry.yaml"))
            report.version_new = str(meta.get("version")) if isinstance(meta, dict) else None
            report.notes.append(f"new entry (not in {tag})")
            if parse_version(report.version_new) is None:
                report.errors.append(f"version {report.version_new!r} is not semver (MAJOR.MINOR.PATCH)")
            continue
        if entry not in now:
            report.notes.append(f"entry removed since {tag}")
            continue
        old_files = {p: repo.show(tag, p) for p in then[entry]}
        new_files = {p: repo.read_now(p) for p in now[entry]}
        report.changed_files = sorted(
            p for p in set(old_files) | set(new_files) if old_files.get(p) != new_files.get(p))
        old_meta = _load(old_files.get(f"{entry}/entry.yaml", b""))
        new_meta = _load(new_files.get(f"{entry}/entry.yaml", b""))
        old_meta = old_meta if isinstance(old_meta, dict) else {}
        new_meta = new_meta if isinstance(new_meta, dict) else {}
        report.version_old = str(old_meta.get("version")) if "version" in old_meta else None
        report.version_new = str(new_meta.get("version")) if "version" in new_meta else None
        old_v, new_v = parse_version(old_meta.get("version")), parse_version(new_meta.get("version"))
        if new_v is None:
            report.errors.append(f"version {report.version_new!r} is not semver (MAJOR.MINOR.PATCH)")
            continue
        if old_v is not None and new_v < old_v:
            report.errors.append(f"version went down from {old_v} to {new_v}")
            continue
        bumped = old_v is None or new_v > old_v
        if report.changed_files and not bumped:
            shown = ", ".join(p[len(entry) + 1:] for p in report.changed_files[:5])
            more = f" and {len(report.changed_files) - 5} more" if len(report.changed_files) > 5 else ""
            report.errors.append(f"files changed without a version bump (still {new_v}): {shown}{more}")
        if new_meta.get("kind") == "heat" and isinstance(new_meta.get("template"), str):
            old_tpl_name = old_meta.get("template") if isinstance(old_meta.get("template"), str) else None
            old_raw = old_files.get(f"{entry}/{old_tpl_name}") if old_tpl_name else None
            new_raw = new_files.get(f"{entry}/{new_meta['template']}")
            if old_raw is not None and new_raw is not None:
                report.breaking = breaking_changes(_load(old_raw), _load(new_raw))
        if report.breaking and old_v is not None:
            major_bumped = new_v.major > old_v.major or (
                old_v.major == 0 and (new_v.major, new_v.minor) > (old_v.major, old_v.minor))
            if not major_bumped:
                report.errors.append(
                    f"incompatible interface change needs a major version bump (have {old_v} -> {new_v}): "
                    + "; ".join(report.breaking))
        if old_v is not None and new_v.major > old_v.major:
            changelog = new_files.get(f"{entry}/CHANGELOG.md", b"").decode("utf-8", "replace")
            if not _changelog_has_upgrade_note(changelog, new_v):
                report.errors.append(f"major bump to {new_v} without an 'Upgrading to {new_v.major}.0.0' "
                                     "note in CHANGELOG.md")
    return tag, reports
