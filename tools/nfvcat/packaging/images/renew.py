"""``nfvcat image renew``: an image whose lock Debian's mirror no longer serves gets a new lock, the way a dependency
bot would renew it: a patch bump of the image entry, a build from what the mirror serves (the lock it writes is
the new version's), and every catalog entry that references the image follows (its image reference's version,
the Glance name ``nfvcat-NAME-VERSION`` in its templates, examples, VNFD and README, a patch bump unless it
already has an unreleased version, a CHANGELOG line naming the updated packages); checksums, ``sw_image_data``
and VNFD identities are generated as ``nfvcat docs`` does. So ``nfvcat versions`` passes on the result, which a
maintainer reviews and commits.

The build is made in a copy of the entry with the new version: the tree changes only once the build succeeded.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import textwrap
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nfvcat.catalog import CATALOG_DIRS, entries, releases, vnfd_ids
from nfvcat.catalog.versions import parse_version
from nfvcat.core.errors import EXIT_FINDINGS, UserError
from nfvcat.packaging.images import build, mirror, recipe, refs

TEXT_SUFFIXES = (".yaml", ".yml", ".md", ".json")


@dataclass
class Renewed:
    image: str
    old: str
    new: str
    sha256: str
    size: int
    seconds: float | None
    updates: list[str]  # the packages the mirror serves newer, with their kind
    entries: list[str] = field(default_factory=list)  # referencing entries, "DIR OLD -> NEW" or "DIR NEW"

    def as_dict(self) -> dict[str, Any]:
        return {"image": self.image, "from": self.old, "to": self.new, "sha256": self.sha256, "size": self.size,
                "seconds": self.seconds, "updates": self.updates, "entries": self.entries}


def patch_bump(version: str) -> str:
    v = parse_version(version)
    if v is None or not v.release:
        raise UserError(f"version {version!r} is not a release version MAJOR.MINOR.PATCH: renew it by hand")
    return f"{v.major}.{v.minor}.{v.patch + 1}"


def _released_version(root: Path, entry: str) -> str | None:
    try:
        record = releases.read_record(root)
    except releases.RecordError:
        return None
    item = (record or {}).get("entries", {}).get(entry)
    return str(item.get("version")) if isinstance(item, dict) else None


def set_version(text: str, version: str) -> str:
    new, n = re.subn(r"(?m)^version: .*$", f"version: {version}", text, count=1)
    if not n:
        raise UserError("entry.yaml has no top-level version")
    return new


def add_changelog(path: Path, version: str, line: str, day: str | None = None) -> None:
    """``line`` as the first bullet under ``## version`` (dated or not); when missing, the heading is added above
    the newest, dated ``day`` when given (a VNF package's release date until ``nfvcat release`` records it)."""
    text = path.read_text(encoding="utf-8") if path.is_file() else f"# Changelog: {path.parent.name}\n"
    bullet = textwrap.fill(line, 115, initial_indent="- ", subsequent_indent="  ", break_on_hyphens=False,
                           break_long_words=False) + "\n"
    m = re.search(rf"(?m)^## {re.escape(version)}(?:[ \t].*)?\n\n?", text)
    if m is not None:
        text = text[:m.end()] + bullet + ("" if text[m.end():].startswith("-") else "\n") + text[m.end():]
    else:
        first = re.search(r"(?m)^## ", text)
        at = first.start() if first else len(text.rstrip("\n")) + 1
        heading = f"{version} - {day}" if day else version
        text = text[:at].rstrip("\n") + f"\n\n## {heading}\n\n{bullet}\n" + text[at:]
    path.write_text(text, encoding="utf-8")


def set_reference_version(text: str, image: str, old: str, new: str) -> str:
    """entry.yaml text with each ``images:`` item naming ``image`` at version ``new``."""
    def fix(m: re.Match[str]) -> str:
        body = m.group(0)
        if not re.search(rf"(?m)^\s*-?\s*image: ['\"]?{re.escape(image)}['\"]?\s*(#.*)?$", body):
            return body
        return re.sub(rf"(?m)^(\s*-?\s*version: )['\"]?{re.escape(old)}['\"]?", rf"\g<1>{new}", body)

    return re.sub(r"(?m)^(?P<i>[ ]*)- .*\n(?:(?P=i)  .*\n)*", fix, text)


def _referencing(root: Path, image: str) -> list[tuple[Path, str, dict[str, Any]]]:
    """(entry dir, record key, meta) of every catalog entry whose ``images:`` names ``image``."""
    out = []
    for d in CATALOG_DIRS:
        for entry_dir in entries.entry_dirs(root, d):
            meta = entries.read_meta(entry_dir)
            items = (meta.get("images") if isinstance(meta, dict) else None) or []
            if isinstance(meta, dict) and any(isinstance(i, dict) and str(i.get("image")) == image for i in items):
                out.append((entry_dir, entry_dir.relative_to(root).as_posix(), meta))
    return out


def _follow(root: Path, image: str, old: str, new: str, updates: list[str]) -> list[str]:
    """Every entry referencing images/``image`` moves from ``old`` to ``new`` (see the module doc)."""
    done = []
    for entry_dir, key, meta in _referencing(root, image):
        renames = {}
        for item in meta.get("images") or []:
            glance = str(item.get("name", "")) if isinstance(item, dict) else ""
            if isinstance(item, dict) and str(item.get("image")) == image and glance.endswith(f"-{old}"):
                renames[glance] = glance[:-len(old)] + new
        for path in sorted(p for p in entry_dir.rglob("*") if p.is_file() and p.suffix in TEXT_SUFFIXES
                           and p.name != "CHANGELOG.md"):
            text = path.read_text(encoding="utf-8")
            changed = text
            for a, b in renames.items():
                changed = re.sub(rf"(?<![\w.-]){re.escape(a)}(?![\w.-])", b, changed)
            if path.name == "entry.yaml" and path.parent == entry_dir:
                changed = set_reference_version(changed, image, old, new)
            if changed != text:
                path.write_text(changed, encoding="utf-8")
        version = str(meta.get("version"))
        bumped = version
        if _released_version(root, key) == version:
            bumped = patch_bump(version)
            (entry_dir / "entry.yaml").write_text(set_version((entry_dir / "entry.yaml").read_text(
                encoding="utf-8"), bumped), encoding="utf-8")
        names = ", ".join(f"`{b}`" for b in renames.values()) or f"images/{image} {new}"
        day = datetime.now(UTC).date().isoformat() if key.startswith("vnfd/") else None
        add_changelog(entry_dir / "CHANGELOG.md", bumped, f"The image is {names} (images/{image} {new}, renewed: "
                      f"Debian's mirror serves {_short(updates)}); entry.yaml's image reference and checksum "
                      "follow.", day)
        done.append(f"{key} {version} -> {bumped}" if bumped != version else f"{key} {version}")
    return done


def _short(updates: list[str]) -> str:
    return "; ".join(updates[:12]) + (f"; and {len(updates) - 12} more" if len(updates) > 12 else "")


def drifted(root: Path) -> tuple[list[str], list[str]]:
    """What ``nfvcat release`` says of images whose lock Debian's mirror no longer serves: errors for an image
    version this release would record for the first time (a new lock no fresh machine can build: renew it
    first), notes for a version already released and unchanged (drift is a normal state: deploying it takes a
    local rebuild; ``nfvcat image renew`` and a bump ship new bits). Raises MirrorError (exit 3) when the mirror
    cannot be read: a release never ships what it could not verify."""
    errors: list[str] = []
    notes: list[str] = []
    for name in recipe.names(root):
        r = recipe.load(name, root)
        lock = recipe.read_lock(r)
        if lock is None:
            continue
        status = mirror.status(r, lock)
        if status.serves_lock:
            continue
        what = [n.text() for n in status.newer] + [f"{p} {v} no longer served" for p, v in status.missing
                                                   if p not in status.newest]
        line = (f"images/{name} {r.version}: Debian's mirror no longer serves its lock ({_short(what)}): run "
                f"`nfvcat image renew {name}` and commit the renewed lock and bumps")
        (notes if _released_version(root, f"images/{name}") == r.version else errors).append(line)
    return errors, notes


def renew(root: Path, names: list[str], say: build.Say, force: bool = False) -> list[Renewed]:
    """Renew each named image (default: all) whose lock the mirror no longer serves (``force``: even so)."""
    out = []
    for name in names or recipe.names(root):
        r = recipe.load(name, root)
        lock = recipe.read_lock(r)
        if lock is None:
            raise UserError(f"images/{name} has no {recipe.LOCK_NAME}: build it first (nfvcat image build {name})",
                            EXIT_FINDINGS)
        status = mirror.status(r, lock)
        if status.serves_lock and not force:
            say(f"{name} {r.version}: the mirror serves the lock: nothing to renew")
            continue
        updates = [n.text() for n in status.newer] + [f"{p} {v} (no longer served)" for p, v in status.missing
                                                      if p not in status.newest]
        key = f"images/{name}"
        released = _released_version(root, key)
        new = patch_bump(r.version) if released in (None, r.version) else r.version
        say(f"{name} {r.version}: renewing as {new} ({len(status.newer)} packages newer on the mirror)")
        with tempfile.TemporaryDirectory(prefix=f"nfvcat-renew-{name}-") as tmp:
            copy = Path(tmp) / "images" / r.entry_dir.name
            shutil.copytree(r.entry_dir, copy)
            (copy / "entry.yaml").write_text(set_version((copy / "entry.yaml").read_text(encoding="utf-8"), new),
                                             encoding="utf-8")
            built = build.build(recipe.load(name, Path(tmp)), say, root=Path(tmp), force=force)
            entry_text = (copy / "entry.yaml").read_text(encoding="utf-8")
            lock_text = (copy / recipe.LOCK_NAME).read_text(encoding="utf-8")
        (r.entry_dir / "entry.yaml").write_text(entry_text, encoding="utf-8")
        (r.entry_dir / recipe.LOCK_NAME).write_text(lock_text, encoding="utf-8")
        changes = build.package_changes(lock.packages, built.lock.packages)
        add_changelog(r.entry_dir / "CHANGELOG.md", new,
                      f"Renewed (`nfvcat image renew {name}`): Debian's mirror no longer serves the packages of "
                      f"{r.version}'s lock; rebuilt from what it serves: {_short(changes)}; sha256 "
                      f"{built.lock.sha256}, {built.lock.size} bytes.")
        done = Renewed(name, r.version, new, built.lock.sha256, built.lock.size, built.seconds, updates)
        done.entries = _follow(root, name, r.version, new, updates)
        out.append(done)
    if out:
        paths = [s.path for s in refs.sync(root, write=True)] + [d.path for d in vnfd_ids.sync(root, write=True)]
        for path in paths:  # generated as nfvcat docs does
            say(f"updated {path.relative_to(root)}")
    return out
