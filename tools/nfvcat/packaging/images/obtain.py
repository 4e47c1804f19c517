"""The product images for the lab (the day-0 VM tier, its benchmark) and for ``nfvcat onboard`` (the dev cloud's
tier): the cached build of an image entry's committed lock, or a build of it when the cache has none, made in a
copy of the entry so that a lab run or an onboarding never rewrites the repository's lock (``nfvcat image
build`` is what updates a lock). Onboarding then verifies the file against the lock's sha256.

When Debian's mirror no longer serves the lock's package versions, the build differs from the lock: the lab
gets that image (its ``changes`` say what differs, and the caller is told) and the committed lock stays as it
is. The next lab run finds no cached build of the committed lock and builds again, until the lock is renewed
with ``nfvcat image build NAME`` and a version bump.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from nfvcat.packaging.images import build, recipe


def image(name: str, say: build.Say, root: Path | None = None) -> build.Built:
    r = recipe.load(name, root)
    hit = build.cached(r)
    if hit is not None:
        say(f"{r.name} {r.version}: cached build of the lock ({hit.disk})")
        return hit
    with tempfile.TemporaryDirectory(prefix=f"nfvcat-lab-{name}-") as tmp:
        copy = Path(tmp)
        shutil.copytree(r.entry_dir, copy / "images" / r.entry_dir.name)
        built = build.build(recipe.load(name, copy), say, root=copy)
    built.recipe = r
    if built.changes:
        say(f"{r.name} {r.version}: the mirror serves other packages than images/{name}/{recipe.LOCK_NAME} "
            f"(sha256 {built.lock.sha256}, not the lock's): " + "; ".join(built.changes[:10])
            + "; renew the lock with `nfvcat image build` and a version bump")
    return built
