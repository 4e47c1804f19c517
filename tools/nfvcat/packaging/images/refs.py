"""Image references: an entry's ``images:`` item names an image entry and version (``image: vrouter``,
``version: 1.0.0``) and the Glance name it is onboarded as; its checksum is never written by hand but
generated from the image's lock into entry.yaml and into the VNFD's ``sw_image_data`` (``nfvcat docs``),
and checked for drift (``nfvcat docs --check``, rule E0014)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from nfvcat.catalog import CATALOG_DIRS, entries
from nfvcat.core import yamlpos
from nfvcat.packaging.images.recipe import LOCK_NAME, lock_data


@dataclass(frozen=True)
class ImageLockInfo:
    image: str
    version: str  # the entry's version now
    locked_version: str | None  # the version the lock was built for
    sha256: str | None
    size: int | None


def catalog_root_of(path: Path) -> Path | None:
    """The catalog a file belongs to: the directory holding the catalog kind directory above it."""
    for parent in path.resolve().parents:
        if parent.name in CATALOG_DIRS:
            return parent.parent
    return None


def image_entries(root: Path) -> dict[str, ImageLockInfo]:
    """Every image entry under ``root``/images with its lock (if it was ever built)."""
    out: dict[str, ImageLockInfo] = {}
    for entry_dir in entries.entry_dirs(root, "images"):
        meta = entries.read_meta(entry_dir)
        if meta is None:
            continue
        lock: Any = None
        lock_path = entry_dir / LOCK_NAME
        if lock_path.is_file():
            try:
                lock = lock_data(lock_path)
            except (OSError, yaml.YAMLError):
                lock = None
        lock = lock if isinstance(lock, dict) else {}
        name = str(meta.get("name") or entry_dir.name)
        out[name] = ImageLockInfo(
            name, str(meta.get("version")), None if lock.get("version") is None else str(lock.get("version")),
            str(lock["sha256"]) if lock.get("sha256") else None,
            int(lock["size"]) if isinstance(lock.get("size"), int) else None)
    return out


def built_checksums(root: Path) -> dict[str, ImageLockInfo]:
    """sha256 -> the image whose lock holds it."""
    return {i.sha256: i for i in image_entries(root).values() if i.sha256}


def check_reference(ref: Any, images: dict[str, ImageLockInfo]) -> tuple[str | None, str | None]:
    """What is wrong with one ``images:`` item (path key, message), or (None, None)."""
    if not isinstance(ref, dict):
        return None, None
    name, version = ref.get("image"), ref.get("version")
    if name is None:
        return "name", "names no image entry ('image:' and 'version:' of an images/ entry)"
    info = images.get(str(name))
    if info is None:
        return "image", f"no image entry images/{name} (known: {', '.join(sorted(images)) or 'none'})"
    if str(version) != info.version:
        return "version", f"images/{name} is at version {info.version}, not {version}"
    value = (ref.get("checksum") or {}).get("value") if isinstance(ref.get("checksum"), dict) else None
    if value is not None and info.sha256 is None:
        return "checksum", (f"images/{name} {version} was never built (no {LOCK_NAME}): its checksum cannot be "
                            "known; remove it or run `nfvcat image build` and `nfvcat docs`")
    if value is not None and str(value) != info.sha256:
        what = "the all-zero placeholder" if set(str(value)) == {"0"} else str(value)
        return "checksum", (f"checksum {what} is not the sha256 of images/{name} {version} ({info.sha256}); "
                            "run nfvcat docs")
    return None, None


# ---- generation -----------------------------------------------------------------------------------------------

_REF_ITEM = re.compile(r"(?m)^(?P<indent>[ ]*)- name: (?P<name>\S+)(?P<note>[^\n]*)\n(?P<body>(?:(?P=indent)  .*\n)*)")


def sync_entry_text(text: str, images: dict[str, ImageLockInfo]) -> str:
    """entry.yaml text with each reference's checksum set from its image's lock (removed when unbuilt)."""
    def fix(m: re.Match[str]) -> str:
        indent, body = m.group("indent"), m.group("body")
        image = re.search(r"(?m)^[ ]*image: (\S+)$", body)
        info = images.get(image.group(1).strip("'\"")) if image else None
        if info is None:
            return m.group(0)
        body = re.sub(r"(?m)^[ ]*checksum:.*\n(?:[ ]*(?:algorithm|value): .*\n)*", "", body)
        if info.sha256 and info.locked_version == info.version:
            body += (f"{indent}  checksum:  # generated from images/{info.image}/{LOCK_NAME} by `nfvcat docs`\n"
                     f"{indent}    algorithm: sha256\n{indent}    value: {info.sha256}\n")
        return f"{indent}- name: {m.group('name')}{m.group('note')}\n{body}"

    head, sep, rest = text.partition("\nimages:\n")
    if not sep:
        return text
    end = re.search(r"(?m)^\S", rest)
    block, tail = (rest[:end.start()], rest[end.start():]) if end else (rest, "")
    return head + sep + _REF_ITEM.sub(fix, block) + tail


def sync_vnfd_text(text: str, refs: dict[str, ImageLockInfo]) -> str:
    """A VNFD file's text with each ``sw_image_data`` (matched by ``name``, the Glance name of a reference)
    given its image's version, sha256 and size."""
    def fix(m: re.Match[str]) -> str:
        block = m.group(0)
        name = re.search(r"(?m)^\s*name: (\S+)$", block)
        info = refs.get(name.group(1).strip("'\"")) if name else None
        if info is None or not info.sha256 or info.locked_version != info.version:
            return block
        block = re.sub(r"(?m)^(\s*version: ).*$", rf"\g<1>'{info.version}'", block, count=1)
        block = re.sub(r"(?m)^(\s*algorithm: ).*$", r"\g<1>sha-256", block, count=1)
        block = re.sub(r"(?m)^(\s*hash: ).*$", rf"\g<1>{info.sha256}", block, count=1)
        return re.sub(r"(?m)^(\s*size: ).*$", rf"\g<1>{info.size} B", block, count=1)

    return re.sub(r"(?m)^(?P<i>\s*)sw_image_data:\n(?:(?P=i)  .*\n)*", fix, text)


def unreferenced_vnfd_images(text: str, refs: dict[str, ImageLockInfo]) -> list[str]:
    """The Glance names of a VNFD file's ``sw_image_data`` blocks that none of the entry's image references
    names: nothing generates their checksum, so they would go stale silently (an image bumped in entry.yaml
    but not in the VNFD)."""
    out = []
    for m in re.finditer(r"(?m)^(?P<i>\s*)sw_image_data:\n(?:(?P=i)  .*\n)*", text):
        name = re.search(r"(?m)^\s*name: (\S+)$", m.group(0))
        glance = name.group(1).strip("'\"") if name else "(no name)"
        if glance not in refs:
            out.append(glance)
    return out


@dataclass
class Sync:
    path: Path
    status: str  # updated, drift, error
    message: str = ""


README_BEGIN = "<!-- BEGIN nfvcat image lock (generated by `nfvcat docs` from image.lock) -->"
README_END = "<!-- END nfvcat image lock -->"
README_PACKAGES = ("linux-image-amd64", "cloud-init", "openssh-server", "nftables", "frr", "keepalived",
                   "strongswan-swanctl", "charon-systemd", "qemu-guest-agent", "grub-efi-amd64-bin")


def readme_block(info: ImageLockInfo, lock: dict[str, Any]) -> str:
    if not info.sha256 or info.locked_version != info.version:
        body = f"Version {info.version} has not been built yet: no sha256 (run `nfvcat image build {info.image}`)."
    else:
        pkgs = lock.get("packages") or {}
        rows = "".join(f"| `{p}` | `{pkgs[p]}` |\n" for p in README_PACKAGES if p in pkgs)
        body = (f"| Version | sha256 | Size |\n|---|---|---|\n| {info.version} | `{info.sha256}` | "
                f"{info.size} bytes |\n\n{len(pkgs)} Debian packages (all in `image.lock`), among them:\n\n"
                f"| Package | Version |\n|---|---|\n{rows}")
    return f"{README_BEGIN}\n{body.rstrip()}\n{README_END}"


def sync_readme_text(text: str, block: str) -> str:
    start, end = text.find(README_BEGIN), text.find(README_END)
    if start < 0 or end < start:
        return text.rstrip("\n") + "\n\n" + block + "\n"
    return text[:start] + block + text[end + len(README_END):]


def sync(root: Path, write: bool) -> list[Sync]:
    """Generate the checksums of every entry's image references (and its VNFD's sw_image_data) and the lock
    summary of every image entry's README."""
    images = image_entries(root)
    out: list[Sync] = []
    for info in images.values():
        readme = root / "images" / info.image / "README.md"
        lock_path = root / "images" / info.image / LOCK_NAME
        lock = lock_data(lock_path) if lock_path.is_file() else {}
        old = readme.read_text(encoding="utf-8") if readme.is_file() else f"# Image: {info.image}\n"
        new = sync_readme_text(old, readme_block(info, lock if isinstance(lock, dict) else {}))
        if new != old:
            if write:
                readme.write_text(new, encoding="utf-8")
            out.append(Sync(readme, "updated" if write else "drift"))
    for d in CATALOG_DIRS:
        for entry in sorted((root / d).rglob("entry.yaml")) if (root / d).is_dir() else []:
            text = entry.read_text(encoding="utf-8")
            try:
                meta = yamlpos.load(text)[0]
            except yamlpos.DocumentError:
                continue
            refs = meta.get("images") if isinstance(meta, dict) else None
            if not isinstance(refs, list):
                continue
            by_glance = {str(r["name"]): images[str(r["image"])] for r in refs
                         if isinstance(r, dict) and "name" in r and str(r.get("image")) in images}
            files = [(entry, sync_entry_text(text, images), text)]
            if meta.get("kind") == "vnfd":
                for f in sorted((entry.parent / "Definitions").glob("*.yaml")):
                    old = f.read_text(encoding="utf-8")
                    files.append((f, sync_vnfd_text(old, by_glance), old))
                    for glance in unreferenced_vnfd_images(old, by_glance):
                        out.append(Sync(f, "error", f"sw_image_data names image '{glance}', which no image "
                                                    f"reference of {entry.relative_to(root)} names"))
            for path, new, old in files:
                if new == old:
                    continue
                if write:
                    path.write_text(new, encoding="utf-8")
                out.append(Sync(path, "updated" if write else "drift"))
    return out


def glance_image(root: Path, ref: dict[str, Any], info: ImageLockInfo | None = None) -> dict[str, Any]:
    """One image reference as onboarding uploads it: the Glance settings of its image entry under ``root``, its
    version and the sha256 and size from its lock (None when that version was never built)."""
    from nfvcat.packaging.images import recipe

    info = info or image_entries(root)[str(ref["image"])]
    glance = recipe.load(info.image, root).glance
    locked = info.sha256 if info.locked_version == info.version == str(ref.get("version")) else None
    return {
        "name": str(ref["name"]), "image": info.image, "version": info.version,
        "file": f"{info.image}-{info.version}.qcow2",
        "checksum": {"algorithm": "sha256", "value": locked}, "size": info.size if locked else None,
        "disk_format": glance.get("disk_format", "qcow2"),
        "container_format": glance.get("container_format", "bare"),
        "min_disk": glance.get("min_disk", 0), "min_ram": glance.get("min_ram", 0),
        "properties": dict(glance.get("properties") or {})}


def glance_images(root: Path) -> list[dict[str, Any]]:
    """Every image the catalog's entries reference, once per Glance name, as onboarding uploads it
    (``glance_image``)."""
    images = image_entries(root)
    seen: dict[str, dict[str, Any]] = {}
    for d in CATALOG_DIRS:
        for entry_dir in entries.entry_dirs(root, d):
            meta = entries.read_meta(entry_dir)
            for ref in (meta.get("images") if meta else None) or []:
                if not isinstance(ref, dict) or str(ref.get("image")) not in images or str(ref.get("name")) in seen:
                    continue
                info = images[str(ref["image"])]
                seen[str(ref["name"])] = glance_image(root, {**ref, "version": info.version}, info)
    return list(seen.values())
