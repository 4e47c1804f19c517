"""A VNFD's identity follows its package version: ``descriptor_version`` is the entry's version and
``descriptor_id`` a UUID derived from the entry's name and version (Tacker keys a VNF package by its VNFD id,
so a new version of a package must not reuse the old one's). Generated into the VNFD by ``nfvcat docs`` and
checked for drift with ``--check``; nobody types a UUID."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from pathlib import Path

from nfvcat.catalog import entries

NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://nfvcat.invalid/vnfd")


def descriptor_id(name: str, version: str) -> str:
    return str(uuid.uuid5(NAMESPACE, f"{name}:{version}"))


_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def sync_text(text: str, did: str, version: str) -> str:
    """The VNFD file's text with every descriptor_id and descriptor_version value set (node properties and the
    VNF node type's valid_values and default)."""
    text = re.sub(rf"(?m)^(\s*descriptor_id: ){_UUID}\s*$", rf"\g<1>{did}", text)
    text = re.sub(r"(?m)^(\s*descriptor_version: )'[^']*'\s*$", rf"\g<1>'{version}'", text)

    def block(m: re.Match[str]) -> str:
        body = m.group("body")
        if m.group("key") == "descriptor_id":
            return m.group("head") + re.sub(_UUID, did, body)
        return m.group("head") + re.sub(r"'[^']*'", f"'{version}'", body)

    return re.sub(r"(?m)^(?P<head>(?P<i>[ ]+)(?P<key>descriptor_id|descriptor_version):\n)"
                  r"(?P<body>(?:(?P=i)  .*\n)*)", block, text)


@dataclass
class Drift:
    path: Path
    status: str  # updated or drift
    message: str = ""


def sync(root: Path, write: bool) -> list[Drift]:
    out: list[Drift] = []
    for entry_dir in entries.entry_dirs(root, "vnfd"):
        meta = entries.read_meta(entry_dir)
        if meta is None or meta.get("kind") != "vnfd":
            continue
        name, version = str(meta.get("name")), str(meta.get("version"))
        did = descriptor_id(name, version)
        for f in sorted((entry_dir / "Definitions").glob("*.yaml")):
            old = f.read_text(encoding="utf-8")
            new = sync_text(old, did, version)
            if new != old:
                if write:
                    f.write_text(new, encoding="utf-8")
                out.append(Drift(f, "updated" if write else "drift"))
    return out
