"""VNF images inside a VNF package (``nfvcat package --with-image``): SOL004 ``Files/images/``, hashed in the
manifest like every file, and a SOL001 ``tosca.artifacts.nfv.SwImage`` artifact on the node whose
``sw_image_data`` names the image, so Tacker uploads the image itself when it onboards the package.

The image is the build of the entry's image reference (``nfvcat image build``), verified against its lock's
sha256 before it goes in; a package never holds an image the catalog cannot vouch for."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from nfvcat.core.errors import EXIT_FINDINGS, UserError
from nfvcat.packaging.images import build, recipe, refs

IMAGES_DIR = "Files/images"


def image_members(entry_dir: Path, entry: dict[str, Any], files: dict[str, bytes],
                  overrides: dict[str, Path] | None = None) -> dict[str, bytes]:
    """The image files and the rewritten VNFD files (artifacts added), by member name."""
    root = refs.catalog_root_of(entry_dir / "entry.yaml")
    if root is None:
        raise UserError(f"{entry_dir}: not inside a catalog, so no images/ entry to package")
    out: dict[str, bytes] = {}
    for ref in entry.get("images") or []:
        if not isinstance(ref, dict) or not ref.get("image"):
            raise UserError(f"{entry_dir / 'entry.yaml'}: image {ref!r} names no image entry")
        r = recipe.load(str(ref["image"]), root)
        lock = recipe.read_lock(r)
        if lock is None or lock.version != r.version or str(ref.get("version")) != r.version:
            raise UserError(f"images/{r.name} {ref.get('version')}: no lock of that version: run "
                            f"`nfvcat image build {r.name}`", EXIT_FINDINGS)
        path = (overrides or {}).get(r.name)
        if path is None:
            hit = build.cached(r)
            if hit is None:
                raise UserError(f"images/{r.name} {r.version} is not built here: run `nfvcat image build {r.name}`",
                                EXIT_FINDINGS)
            path = hit.disk
        digest = build.sha256_of(path)
        if digest != lock.sha256:
            raise UserError(f"{path}: sha256 {digest}, images/{r.name} {r.version} is {lock.sha256}: not packaged",
                            EXIT_FINDINGS)
        member = f"{IMAGES_DIR}/{r.name}-{r.version}.qcow2"
        out[member] = path.read_bytes()
        added = False
        for name, data in files.items():
            if name.startswith("Definitions/") and name.endswith((".yaml", ".yml")):
                text = data.decode("utf-8")
                new = add_artifact(text, str(ref["name"]), f"../{member}")
                if new != text:
                    out[name] = new.encode("utf-8")
                    added = True
        if not added:
            raise UserError(f"{entry_dir}: no sw_image_data named {ref['name']} in Definitions/ for images/{r.name}")
    return out


_NODE = re.compile(r"(?m)^(?P<i>[ ]+)(?P<name>[A-Za-z0-9_-]+):\n(?P=i)  type: (?P<type>\S+)\n"
                   r"(?P<body>(?:(?P=i)  .*\n|\n)*)")


def add_artifact(text: str, glance_name: str, file: str) -> str:
    """A VNFD file's text with an ``sw_image`` artifact on each node whose sw_image_data is ``glance_name``."""
    def fix(m: re.Match[str]) -> str:
        body = m.group("body")
        if "sw_image_data:" not in body or not re.search(rf"(?m)^\s*name: {re.escape(glance_name)}\s*$", body) \
                or "artifacts:" in body:
            return m.group(0)
        i = m.group("i")
        head = f"{i}{m.group('name')}:\n{i}  type: {m.group('type')}\n"
        art = (f"{i}  artifacts:\n{i}    sw_image:\n{i}      type: tosca.artifacts.nfv.SwImage\n"
               f"{i}      file: {file}\n")
        return head + art + body

    return _NODE.sub(fix, text)
