"""E0014: an image checksum that is not the sha256 of an image the catalog builds (a catalog entry's), or
one that is malformed (anyone's VNFD)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from hashlib import new as new_hash
from pathlib import Path
from typing import Any

from nfvcat.catalog import entry_of
from nfvcat.core.documents import Document
from nfvcat.core.findings import RawFinding
from nfvcat.packaging.images import refs
from nfvcat.validation.rules.base import Context, Rule


class ImageChecksum(Rule):
    id = "E0014"
    shortdesc = "Image checksum is not the sha256 of an image the catalog builds"
    description = ("An entry's image reference names an image entry and version (images/NAME) and carries "
                   "no checksum of its own making: the checksum is generated from the image's lock "
                   "(images/NAME/image.lock, written by `nfvcat image build`) by `nfvcat docs`. A reference to "
                   "a missing image entry or another version than the entry's, a checksum while the image was "
                   "never built, a checksum other than the lock's, and in a VNFD a sw_image_data checksum that "
                   "is no built image's sha256 (an all-zero placeholder or a made-up value included) are "
                   "errors: onboarding verifies the file against it, and Tacker and Glance would refuse the "
                   "real image. A VNFD that belongs to no catalog entry (a user's own) is not held to the catalog's "
                   "images: there only a malformed checksum is an error (an algorithm tacker does not know, or a "
                   "hash that is not the lower-case hex digest of its algorithm, which tacker compares with "
                   "Glance's as text).")
    source_url = ("https://docs.openstack.org/glance/latest/user/os_hash_algo.html")
    kinds = ("entry", "vnfd")

    def check(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        if not isinstance(doc.data, dict):
            return
        path = Path(doc.abspath)
        root = refs.catalog_root_of(path)
        if root is None or entry_of(path) is None:  # not a catalog entry's: the user's own images
            if doc.kind == "vnfd":
                yield from self._malformed(doc.data)
            return
        if doc.kind == "entry":
            images = refs.image_entries(root)
            items = doc.data.get("images")
            for i, ref in enumerate(items if isinstance(items, list) else []):
                key, msg = refs.check_reference(ref, images)
                if key is not None and msg is not None:
                    yield self.finding(("images", i, key), f"image {ref.get('name')}: {msg}")
            return
        built = refs.built_checksums(root)
        for name, value, _ in _checksums(doc.data):
            if value is None:
                continue
            if str(value) not in built:
                yield self.finding(
                    (*_SW, name, "properties", "sw_image_data", "checksum", "hash"),
                    f"{name}: sw_image_data checksum {value} is not the sha256 of an image the catalog builds "
                    f"(built: {', '.join(f'{i.image} {i.locked_version}' for i in built.values()) or 'none'}); "
                    "reference an images/ entry in entry.yaml and run `nfvcat docs`")

    def _malformed(self, data: dict[str, Any]) -> Iterator[RawFinding]:
        for name, value, algorithm in _checksums(data):
            where = (*_SW, name, "properties", "sw_image_data", "checksum")
            if not isinstance(algorithm, str) or algorithm.lower() not in ALGORITHMS:
                yield self.finding((*where, "algorithm"), f"{name}: sw_image_data checksum algorithm {algorithm!r} "
                                   f"is not one tacker knows ({', '.join(ALGORITHMS)})")
                continue
            digits = new_hash(ALGORITHMS[algorithm.lower()]).digest_size * 2
            if value is not None and not re.fullmatch(f"[0-9a-f]{{{digits}}}", str(value)):
                yield self.finding((*where, "hash"), f"{name}: sw_image_data checksum {value} is no {algorithm} "
                                   f"digest ({digits} lower-case hex digits, as Glance writes it and tacker "
                                   "compares it)")


# tacker.common.csar_utils.HASH_DICT's names (tests/unit/test_rule_fixtures.py compares), hashlib's for them
ALGORITHMS = {"sha-224": "sha224", "sha-256": "sha256", "sha-384": "sha384", "sha-512": "sha512"}
_SW = ("topology_template", "node_templates")


def _checksums(data: dict[str, Any]) -> Iterator[tuple[str, Any, Any]]:
    """(node name, hash, algorithm) of every node's sw_image_data checksum."""
    topo = data.get("topology_template")
    nodes = topo.get("node_templates") if isinstance(topo, dict) else None
    for name, node in (nodes.items() if isinstance(nodes, dict) else []):
        props = node.get("properties") if isinstance(node, dict) else None
        sw = props.get("sw_image_data") if isinstance(props, dict) else None
        checksum = sw.get("checksum") if isinstance(sw, dict) else None
        if isinstance(checksum, dict):
            yield str(name), checksum.get("hash"), checksum.get("algorithm")
