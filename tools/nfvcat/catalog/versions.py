"""Version discipline of catalog entries, checked against the release record (``RELEASES.yaml``).

Rules, per entry (a directory with an ``entry.yaml``):

- any change to the entry's files needs a higher ``version`` than at the tag;
- the version never goes down and is valid semver;
- removing, renaming or retyping a parameter or an output, or adding a parameter without a default (and
  the like for VNFD flavours, flavor extra specs and hook placeholders: see ``breaking_changes``) breaks
  existing users: it needs a major bump (for 0.x versions a minor bump, as semver allows anything before
  1.0.0);
- a major bump needs an "Upgrading to X.0.0" note in the entry's CHANGELOG.md.

The record holds the sha256 of every released file and the interface, so no old file and no git tag is
needed: the check runs the same in a fresh clone, in CI and before a commit (new files count as soon as
they exist, minus git-ignored ones).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nfvcat.catalog import releases

_SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z.-]+))?$")


class VersionsError(Exception):
    """git, the record or the repository cannot answer (one line for the user); ``missing`` when there is no
    record at all, which fails the check rather than passing it."""

    def __init__(self, message: str, missing: bool = False):
        super().__init__(message)
        self.missing = missing


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


def _params_breaking(old: Any, new: Any, what: str) -> list[str]:
    old = old if isinstance(old, dict) else {}
    new = new if isinstance(new, dict) else {}
    out: list[str] = []
    for name, spec in old.items():
        spec = spec if isinstance(spec, dict) else {}
        if name not in new:
            out.append(f"{what} '{name}' removed or renamed")
        elif str(spec.get("type")) != str((new[name] or {}).get("type")):
            out.append(f"{what} '{name}' retyped from {spec.get('type')} to {(new[name] or {}).get('type')}")
    for name, spec in new.items():
        if name not in old and "default" not in (spec if isinstance(spec, dict) else {}):
            out.append(f"new {what} '{name}' has no default")
    return out


def breaking_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What in an entry's interface (as ``releases.interface`` gives it) breaks its users: stacks and
    environment files (parameters, outputs), instantiation requests (VNFD flavours and their inputs), servers
    placed by a flavor (its extra specs), templates filling a hook (its placeholders)."""
    out = _params_breaking(old.get("parameters"), new.get("parameters"), "parameter")
    for name in sorted(set(old.get("outputs") or []) - set(new.get("outputs") or [])):
        out.append(f"output '{name}' removed or renamed")
    old_fl, new_fl = old.get("flavours") or {}, new.get("flavours") or {}
    for fl in sorted(old_fl):
        if fl not in new_fl:
            out.append(f"flavour '{fl}' removed or renamed")
        else:
            out += [f"flavour '{fl}': {b}" for b in _params_breaking(
                (old_fl[fl] or {}).get("parameters"), (new_fl[fl] or {}).get("parameters"), "input")]
    old_es, new_es = old.get("extra_specs") or {}, new.get("extra_specs") or {}
    for key in sorted(old_es):
        if key not in new_es:
            out.append(f"extra spec '{key}' removed")
        elif str(old_es[key]) != str(new_es[key]):
            out.append(f"extra spec '{key}' changed from {old_es[key]!r} to {new_es[key]!r}")
    for name in sorted(set(new.get("placeholders") or []) - set(old.get("placeholders") or [])):
        out.append(f"new placeholder '__{name}__' that existing templates do not fill")
    return out


def _changelog_has_upgrade_note(text: str, version: Version) -> bool:
    return f"upgrading to {version.major}.0.0" in text.lower()


def compare(root: str, against: str | None = None) -> tuple[str, list[EntryReport]]:
    """Compare every entry under ``root`` with the release record (``RELEASES.yaml`` in the working tree, or
    as committed at git ref ``against``). Returns where the record came from and one report per entry."""
    base = Path(root).resolve()
    try:
        record = releases.read_record(base, against)
    except (OSError, releases.RecordError) as exc:
        raise VersionsError(str(exc)) from None
    where = f"{against}:{releases.RECORD_NAME}" if against else releases.RECORD_NAME
    if record is None:
        raise VersionsError(f"no release record {base / releases.RECORD_NAME}: run `nfvcat release` to record "
                            "the first release", missing=True)
    then: dict[str, Any] = record["entries"]
    now = releases.snapshot(base)
    reports: list[EntryReport] = []
    for name in sorted(set(now) | set(then)):
        report = EntryReport(name)
        reports.append(report)
        cur = now.get(name)
        if name not in then and cur is not None:
            report.version_new = cur.version
            report.notes.append(f"new entry (not in {where})")
            if parse_version(cur.version) is None:
                report.errors.append(f"version {cur.version!r} is not semver (MAJOR.MINOR.PATCH)")
            continue
        if cur is None:
            report.notes.append(f"entry removed since {where}")
            continue
        old = then[name]
        old_files = {str(k): str(v) for k, v in old["files"].items()}
        report.changed_files = sorted(
            f"{name}/{p}" for p in set(old_files) | set(cur.files) if old_files.get(p) != cur.files.get(p))
        report.version_old = None if old.get("version") is None else str(old.get("version"))
        report.version_new = cur.version
        old_v, new_v = parse_version(report.version_old), parse_version(cur.version)
        if new_v is None:
            report.errors.append(f"version {cur.version!r} is not semver (MAJOR.MINOR.PATCH)")
            continue
        if old_v is not None and new_v < old_v:
            report.errors.append(f"version went down from {old_v} to {new_v}")
            continue
        bumped = old_v is None or new_v > old_v
        if report.changed_files and not bumped:
            shown = ", ".join(p[len(name) + 1:] for p in report.changed_files[:5])
            more = f" and {len(report.changed_files) - 5} more" if len(report.changed_files) > 5 else ""
            report.errors.append(f"files changed without a version bump (still {new_v}): {shown}{more}")
        old_if = old.get("interface") if isinstance(old.get("interface"), dict) else {}
        report.breaking = breaking_changes(old_if, cur.interface)
        if report.breaking and old_v is not None:
            major_bumped = new_v.major > old_v.major or (
                old_v.major == 0 and (new_v.major, new_v.minor) > (old_v.major, old_v.minor))
            if not major_bumped:
                report.errors.append(
                    f"incompatible interface change needs a major version bump (have {old_v} -> {new_v}): "
                    + "; ".join(report.breaking))
        if old_v is not None and new_v.major > old_v.major:
            changelog = (base / name / "CHANGELOG.md")
            text = changelog.read_text(encoding="utf-8", errors="replace") if changelog.is_file() else ""
            if not _changelog_has_upgrade_note(text, new_v):
                report.errors.append(f"major bump to {new_v} without an 'Upgrading to {new_v.major}.0.0' "
                                     "note in CHANGELOG.md")
    return where, reports
