"""What a release ships besides its record: every VNF image (built, or taken from the cache when its lock was
built before) with a CycloneDX SBOM made from its lock, every VNF package (signed when a key is given), and a
``SHA256SUMS`` over all of them (``sha256sum -c`` reads it). An image is checked against its lock as it is
written (nfvcat.packaging.images.build.export), and its line in SHA256SUMS is the lock's sha256; every other
line is the sha256 of the bytes written. SHA256SUMS lists what this release wrote, nothing else in DIR."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nfvcat.catalog import entries
from nfvcat.packaging.images import build, recipe
from nfvcat.packaging.images.sbom import sbom

Say = Callable[[str], None]


def sha256sums(out: Path, sums: dict[Path, str]) -> Path:
    """``out``/SHA256SUMS of ``sums`` (file -> sha256), in the format ``sha256sum -c`` reads."""
    names = sorted((path.relative_to(out).as_posix(), digest) for path, digest in sums.items())
    dest = out / "SHA256SUMS"
    dest.write_text("".join(f"{digest}  {name}\n" for name, digest in names))
    return dest


def build_all(root: Path, out: Path, say: Say, signer: tuple[Any, Any] | None = None,
              releasing: str | None = None, plan: Callable[..., dict[str, Any]] | None = None) -> list[Path]:
    """Images, SBOMs and packages of the catalog under ``out`` and their SHA256SUMS, and the catalog site
    (``site/``, as ``nfvcat site`` builds it); returns the files written.
    ``releasing``: the day of the release being made, the release date of a package whose version the record
    does not hold yet (the record then gets the same day). ``plan``: the site's placement drawings
    (nfvcat.plan.document.of_template, which the command hands down)."""
    from nfvcat.packaging.csar import build as package

    sums: dict[Path, str] = {}  # what is written -> its sha256 (an image's: its lock's, checked as it was written)
    (out / "images").mkdir(parents=True, exist_ok=True)
    for name in recipe.names(root):
        r = recipe.load(name, root)
        built = build.build(r, say, root=root)
        sums[build.export(built, out / "images")] = built.lock.sha256
        doc = out / "images" / f"{r.name}-{r.version}.cdx.json"
        data = sbom(r, built.lock).encode("utf-8")
        doc.write_bytes(data)
        sums[doc] = hashlib.sha256(data).hexdigest()
    pkgs = out / "packages"
    for entry_dir in entries.entry_dirs(root, "vnfd"):
        say(f"package {entry_dir.name}")
        path = package(entry_dir, pkgs, signer=signer, releasing=releasing)
        sums[path] = build.sha256_of(path)
    from nfvcat.packaging import site

    say("site")
    # the catalog site beside the packages: read, not downloaded and checked
    pages = site.build(root, out / "site", plan=plan)
    return [*sums, sha256sums(out, sums), *pages]
