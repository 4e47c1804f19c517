"""The one rule by which the lab (the day-0 VM tier, its benchmark) and the cloud (``nfvcat onboard``,
``instantiate``, the dev cloud's tier) get a product image, and the one way they say what they got.

1. The cached build of the entry's committed lock (its sha256 the lock's): a *catalog* image.
2. Else a build, made in a copy of the entry so that neither a lab run nor an onboarding ever rewrites the
   repository's lock (``nfvcat image build`` and ``nfvcat image renew`` do that). When Debian's mirror still
   serves the lock's package versions the build is the lock's image (same packages, same sha256: else the
   build is not reproducible and is refused).
3. When the mirror no longer serves them (a security update or a point release replaced a locked version:
   drift, a normal state of any image pinned to a Debian suite), the image is built from what the mirror
   serves: a *local rebuild*. Its own record (every package, its sha256, and the packages that differ from
   the committed lock) is written beside it in the image cache, what differs is said plainly, and whoever
   uploads it verifies the file against that record. Builds are cached by their inputs (builder, recipe,
   package versions): a second run, or the other tier, finds the rebuild without building again.

A lock an older builder wrote (a release's, from git history) is rebuilt the same way, the builder named among the
differences. A build whose recipe differs from the lock's is not drift but an unreleased change to the entry:
refused, with what to run.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from nfvcat.core.errors import EXIT_FINDINGS
from nfvcat.packaging.images import build, mirror, recipe

CATALOG = "catalog"
REBUILD = "rebuild"
RECORD = "record.json"  # beside each build: its own lock and its difference from the committed locks it stood for


def read_record(disk: Path) -> dict[str, Any] | None:
    """The build record beside ``disk`` in the image cache (its packages, sha256, size, recipe, builder, and
    per committed lock sha256 the packages that differ), None when there is none or it is unreadable."""
    for name in (RECORD, "lock.json"):
        path = disk.parent / name
        if path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return None
            return data if isinstance(data, dict) else None
    return None


def write_record(built: build.Built, committed: recipe.Lock) -> None:
    """Record beside the build what it is (its lock) and how it differs from ``committed``."""
    path = built.disk.parent / RECORD
    old = read_record(built.disk) or {}
    compared = dict(old.get("compared") or {}) if old.get("sha256") == built.lock.sha256 else {}
    compared[committed.sha256] = built.changes
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({**built.lock.as_dict(), "compared": compared}, indent=1), encoding="utf-8")
    tmp.replace(path)


def cached_packages(r: recipe.Recipe, packages: dict[str, str]) -> build.Built | None:
    """The cached build of ``r`` that installed exactly ``packages`` (builds are cached by their inputs:
    the builder, the recipe and the package versions), whatever lock it was built for."""
    want = recipe.Lock(r.name, r.version, r.digest(), packages, "", 0, build.BUILDER_VERSION)
    d = build.cache_dir() / build.cache_key(r, want)
    meta = read_record(d / "disk.qcow2")
    if not (d / "disk.qcow2").is_file() or meta is None or meta.get("packages") != packages \
            or meta.get("recipe") != r.digest() or str(meta.get("builder")) != build.BUILDER_VERSION:
        return None
    lock = recipe.Lock(r.name, r.version, r.digest(), packages, str(meta.get("sha256")),
                       int(meta.get("size") or 0), build.BUILDER_VERSION)
    return build.Built(r, d / "disk.qcow2", d / "vmlinuz", d / "initrd.img", lock, None, "reproduced")


def drift_text(r: recipe.Recipe, lock: recipe.Lock, changes: list[str]) -> str:
    """What the lab and the cloud both say about a local rebuild."""
    shown = "; ".join(changes[:10]) + (f"; and {len(changes) - 10} more" if len(changes) > 10 else "")
    return (f"{r.name} {r.version}: Debian's mirror no longer serves the packages of images/{r.name}/"
            f"{recipe.LOCK_NAME} (sha256 {lock.sha256}): using a local rebuild from what it serves: {shown} "
            f"(`nfvcat image renew {r.name}` renews the lock; --image {r.name}=FILE or --image-dir give the "
            "released file)")


def image(name: str, say: build.Say, root: Path | None = None) -> build.Built:
    r = recipe.load(name, root)
    committed = recipe.read_lock(r)
    hit = build.cached(r)
    if hit is not None:
        say(f"{r.name} {r.version}: cached build of the lock ({hit.disk})")
        return hit
    drift_ok = committed is not None and committed.recipe == r.digest()  # the lock is this recipe's
    if drift_ok and committed is not None:
        try:
            status: mirror.Status | None = mirror.status(r, committed)
        except mirror.MirrorError as exc:
            say(f"{r.name} {r.version}: cannot tell whether the mirror still serves the lock ({exc}); building")
            status = None
        if status is not None and (not status.serves_lock or committed.builder != build.BUILDER_VERSION):
            predicted = {p: status.newest.get(p, v) for p, v in committed.packages.items()}
            again = cached_packages(r, predicted)
            if again is not None:
                return _rebuild(again, committed, say, "cached")
    with tempfile.TemporaryDirectory(prefix=f"nfvcat-lab-{name}-") as tmp:
        copy = Path(tmp)
        shutil.copytree(r.entry_dir, copy / "images" / r.entry_dir.name)
        built = build.build(recipe.load(name, copy), say, root=copy)
    built.recipe = r
    if committed is None:
        built.source = REBUILD  # never locked: nothing to compare with (onboarding refuses it)
        return built
    built.lock_sha256 = committed.sha256
    if built.lock.sha256 == committed.sha256:
        built.source = CATALOG
        return built
    if not drift_ok or built.lock.recipe != committed.recipe:
        raise build.BuildError(
            f"images/{r.name} {r.version}: its recipe changed since {recipe.LOCK_NAME} was written "
            f"(this build: sha256 {built.lock.sha256}): not a mirror update but a change to the entry: run "
            f"`nfvcat image build {r.name}` and bump its version", EXIT_FINDINGS)
    return _rebuild(built, committed, say, "built")


def _rebuild(built: build.Built, committed: recipe.Lock, say: build.Say, how: str) -> build.Built:
    built.source = REBUILD
    built.lock_sha256 = committed.sha256
    built.changes = build.package_changes(committed.packages, built.lock.packages)
    if committed.builder != built.lock.builder:  # a release's lock an older builder wrote: other bytes
        built.changes.insert(0, f"builder {committed.builder} -> {built.lock.builder}")
    write_record(built, committed)
    say(drift_text(built.recipe, committed, built.changes))
    say(f"{built.recipe.name} {built.recipe.version}: local rebuild ({how}) {built.disk}, sha256 "
        f"{built.lock.sha256}, record {built.disk.parent / RECORD}")
    return built


def verify(built: build.Built, path: Path, digest: str) -> str | None:
    """Why ``path`` (sha256 ``digest``) is not the image ``built`` stands for, or None when it is: the committed
    lock's sha256, or a local rebuild whose own record (beside it in the cache) holds that sha256, this
    recipe and builder, and was compared with this committed lock."""
    if built.lock_sha256 is not None and digest == built.lock_sha256:
        return None
    if built.source != REBUILD or built.lock_sha256 is None:
        return "not the lock's sha256"
    record = read_record(path)
    if record is None:
        return f"a local rebuild without its record ({path.parent / RECORD})"
    if record.get("sha256") != digest:
        return f"its build record says sha256 {record.get('sha256')}"
    if record.get("recipe") != built.recipe.digest() or str(record.get("builder")) != build.BUILDER_VERSION:
        return "its build record is of another recipe or builder"
    if built.lock_sha256 not in (record.get("compared") or {}):
        return "its build record was never compared with this lock"
    return None


def describe(r: recipe.Recipe) -> dict[str, Any]:
    """One image entry as ``nfvcat image list`` shows it: its lock, whether Debian's mirror still serves it
    (a build installs exactly the lock's versions) and which packages it serves newer, security updates named
    as such; and what the image cache holds: the lock's build (catalog) or a local rebuild from the mirror."""
    lock = recipe.read_lock(r)
    row: dict[str, Any] = {"image": r.name, "version": r.version, "sha256": lock.sha256 if lock else None,
                           "cached": None, "source": None, "mirror": None}
    hit = build.cached(r)
    if hit is not None:
        row.update(cached=str(hit.disk), source=CATALOG)
    if lock is None:
        return row
    try:
        st = mirror.status(r, lock)
    except mirror.MirrorError as exc:
        row["mirror"] = {"serves_lock": None, "error": str(exc)}
        return row
    row["mirror"] = st.as_dict()
    if hit is None and not st.serves_lock and lock.recipe == r.digest():
        again = cached_packages(r, {p: st.newest.get(p, v) for p, v in lock.packages.items()})
        if again is not None:
            row.update(cached=str(again.disk), source=REBUILD, rebuild_sha256=again.lock.sha256)
    return row
