"""The images of the catalog as the site shows them: each image entry's lock (copied into the site), its sha256 and
size, its package list, its CycloneDX SBOM (made from the lock as a release makes it, written beside the pages)
and, only when asked (``nfvcat site --mirror``: it reads Debian's mirror), whether the mirror has moved past the
lock, as ``nfvcat image list`` computes it (nfvcat.packaging.images.mirror). Unasked, the page says it was not
checked: never "up to date" unchecked."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from nfvcat.packaging.images import mirror, recipe
from nfvcat.packaging.images.sbom import sbom

NOT_CHECKED = ("not checked at build time (`nfvcat site --mirror` checks it when the site is built; "
               "`nfvcat image list` checks it now)")


@dataclass
class Image:
    name: str
    version: str
    sha256: str | None  # None: no lock, never built
    size: int | None = None
    packages: list[tuple[str, str]] = field(default_factory=list)
    lock_href: str | None = None  # relative to the site's root
    sbom_href: str | None = None
    mirror: str = NOT_CHECKED
    mirror_moved: bool | None = None  # None: not checked or unknown
    newer: list[str] = field(default_factory=list)  # one line per package the mirror serves newer or no more


def _mirror(img: Image, r: recipe.Recipe, lock: recipe.Lock) -> None:
    try:
        st = mirror.status(r, lock)
    except mirror.MirrorError as exc:
        img.mirror = f"unknown: the mirror could not be read at build time ({exc})"
        return
    img.mirror_moved = not st.serves_lock
    if st.serves_lock:
        img.mirror = "checked at build time: the mirror serves every locked version (a build reproduces the sha256)"
        return
    kinds = [n.kind for n in st.newer]
    counts = ", ".join(f"{kinds.count(k)} {label}(s)" for k, label in mirror.KINDS.items() if k in kinds)
    img.mirror = (f"checked at build time: the mirror has moved past the lock: {len(st.newer)} package(s) newer"
                  + (f" ({counts})" if counts else "")
                  + (f", {len(st.missing)} locked version(s) gone" if st.missing else "")
                  + f" (`nfvcat image renew {r.name}`)")
    img.newer = [n.text() for n in st.newer] + [f"{p} {v}: no longer served" for p, v in st.missing
                                                if not any(n.package == p for n in st.newer)]


def collect(root: Path, output: Path, check_mirror: bool = False) -> dict[str, Image]:
    """Every image entry of the catalog, by name; its lock and SBOM written under ``output``/images."""
    out: dict[str, Image] = {}
    for name in recipe.names(root):
        r = recipe.load(name, root)
        lock = recipe.read_lock(r)
        img = out[name] = Image(name, lock.version if lock else r.version, lock.sha256 if lock else None)
        if lock is None:
            img.mirror = "no lock: the image was never built"
            continue
        img.size, img.packages = lock.size, sorted(lock.packages.items())
        (output / "images").mkdir(parents=True, exist_ok=True)
        stem = f"images/{r.name}-{lock.version}"
        (output / f"{stem}.image.lock").write_text(lock.text(), encoding="utf-8")
        (output / f"{stem}.cdx.json").write_text(sbom(r, lock), encoding="utf-8")
        img.lock_href, img.sbom_href = f"{stem}.image.lock", f"{stem}.cdx.json"
        if check_mirror:
            _mirror(img, r, lock)
    return out
