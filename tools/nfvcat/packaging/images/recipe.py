"""An image entry (``images/NAME/entry.yaml``: the recipe) and its lock (``image.lock``: what a build made).

The recipe says what goes in: the Debian suite and mirrors, the packages asked for, files copied in, locales
and the timestamp every file is clamped to (``source_date_epoch``). The lock says what came out: every
installed package's exact version, the image's sha256 and size. A build from the same recipe whose mirror
serves the lock's versions gives the same sha256.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from nfvcat import catalog
from nfvcat.catalog import entries
from nfvcat.core.errors import UserError

LOCK_NAME = "image.lock"
LOCK_HEADER = ("# Written by `nfvcat image build`: the exact Debian packages of the image and its sha256.\n"
               "# A build whose mirror serves other versions writes a new lock and asks for a version bump.\n")


@dataclass(frozen=True)
class FileSpec:
    path: str  # absolute path in the image
    source: str  # relative to the entry
    mode: int


@dataclass
class Recipe:
    name: str
    version: str
    entry_dir: Path
    suite: str
    mirrors: tuple[str, ...]
    packages: tuple[str, ...]
    files: tuple[FileSpec, ...]
    locales: tuple[str, ...]
    source_date_epoch: int
    disk_mib: int
    esp_mib: int
    glance: dict[str, Any] = field(default_factory=dict)  # disk_format, min_disk, min_ram, properties

    @property
    def root_label(self) -> str:
        return "nfvcat-root"

    def digest(self) -> str:
        """sha256 of everything in the recipe, the copied files' bytes included."""
        h = hashlib.sha256()
        h.update(json.dumps({"suite": self.suite, "mirrors": self.mirrors, "packages": sorted(self.packages),
                             "files": [(f.path, f.source, f.mode) for f in self.files],
                             "locales": self.locales, "epoch": self.source_date_epoch, "disk": self.disk_mib,
                             "esp": self.esp_mib, "name": self.name, "version": self.version},
                            sort_keys=True).encode())
        for f in self.files:
            h.update((self.entry_dir / f.source).read_bytes())
        return h.hexdigest()

    @property
    def lock_path(self) -> Path:
        return self.entry_dir / LOCK_NAME


@dataclass
class Lock:
    image: str
    version: str
    recipe: str  # Recipe.digest() of the build
    packages: dict[str, str]  # package (with :arch when not amd64/all) -> version
    sha256: str
    size: int
    builder: str = "1"  # nfvcat.packaging.images.build.BUILDER_VERSION of the build

    def as_dict(self) -> dict[str, Any]:
        return {"image": self.image, "version": self.version, "recipe": self.recipe, "builder": self.builder,
                "sha256": self.sha256, "size": self.size, "packages": dict(sorted(self.packages.items()))}

    def text(self) -> str:
        return LOCK_HEADER + yaml.safe_dump(self.as_dict(), sort_keys=False, width=120)


def _fail(path: Path, msg: str) -> UserError:
    return UserError(f"{path}: {msg}")


def images_dir(root: Path | None = None) -> Path:
    root = root or catalog.find_root()
    if root is None:
        raise UserError("no catalog here (no templates/ and flavors/ above the current directory)")
    return root / "images"


def names(root: Path | None = None) -> list[str]:
    d = images_dir(root)
    return sorted(p.parent.name for p in d.glob("*/entry.yaml")) if d.is_dir() else []


def load(name: str, root: Path | None = None) -> Recipe:
    entry_dir = images_dir(root) / name
    path = entry_dir / "entry.yaml"
    if not path.is_file():
        raise UserError(f"no image entry '{name}' (known: {', '.join(names(root)) or 'none'})")
    data = entries.load(entry_dir).meta  # the one reader of entry.yaml, schema-checked
    if not isinstance(data, dict) or data.get("kind") != "image" or not isinstance(data.get("recipe"), dict):
        raise _fail(path, "not an image entry (kind: image with a recipe; run nfvcat validate)")
    r = data["recipe"]
    try:
        files = tuple(FileSpec(str(f["path"]), str(f["source"]), int(str(f.get("mode", "0644")), 8))
                      for f in r.get("files") or [])
        recipe = Recipe(
            name=str(data["name"]), version=str(data["version"]), entry_dir=entry_dir, suite=str(r["suite"]),
            mirrors=tuple(str(m) for m in r["mirrors"]), packages=tuple(str(p) for p in r["packages"]),
            files=files, locales=tuple(str(x) for x in r.get("locales") or ()),
            source_date_epoch=int(r["source_date_epoch"]), disk_mib=int(r.get("disk_mib", 4096)),
            esp_mib=int(r.get("esp_mib", 64)), glance=dict(data.get("glance") or {}))
    except (KeyError, TypeError, ValueError) as exc:
        raise _fail(path, f"recipe: {exc.__class__.__name__} {exc} (run nfvcat validate)") from None
    for f in files:
        if not (entry_dir / f.source).is_file():
            raise _fail(path, f"recipe file {f.source} does not exist")
    return recipe


_LOCKS: dict[str, tuple[tuple[int, int, int], Any]] = {}


def lock_data(path: Path) -> Any:
    """The parsed content of a lock file (shared: read it, do not change it). A lock lists every package of
    its image (hundreds of lines) and validation reads each one for every entry and VNFD: the content is kept
    while the file's size, mtime and inode stay. Raises OSError or yaml.YAMLError."""
    st = path.stat()
    signature = (st.st_size, st.st_mtime_ns, st.st_ino)
    kept = _LOCKS.get(str(path))
    if kept is not None and kept[0] == signature:
        return kept[1]
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    _LOCKS[str(path)] = (signature, data)
    return data


def read_lock(recipe: Recipe) -> Lock | None:
    path = recipe.lock_path
    if not path.is_file():
        return None
    try:
        d = lock_data(path)
        return Lock(str(d["image"]), str(d["version"]), str(d["recipe"]),
                    {str(k): str(v) for k, v in d["packages"].items()}, str(d["sha256"]), int(d["size"]),
                    str(d.get("builder", "1")))
    except (OSError, yaml.YAMLError, KeyError, TypeError, AttributeError, ValueError) as exc:
        raise _fail(path, f"not a valid image lock ({exc.__class__.__name__})") from None


def write_lock(recipe: Recipe, lock: Lock) -> None:
    tmp = recipe.lock_path.with_suffix(".tmp")
    tmp.write_text(lock.text(), encoding="utf-8")
    tmp.replace(recipe.lock_path)
