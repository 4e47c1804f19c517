"""E0014: an image checksum that is not the sha256 of an image the catalog builds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

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
                   "real image.")
    source_url = ("https://docs.openstack.org/glance/latest/user/os_hash_algo.html")
    kinds = ("entry", "vnfd")

    def check(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        root = refs.catalog_root_of(Path(doc.abspath))
        if root is None or not isinstance(doc.data, dict):
            return  # only the catalog's own images can be checked: a document outside it is not this rule's
        if doc.kind == "entry":
            images = refs.image_entries(root)
            items = doc.data.get("images")
            for i, ref in enumerate(items if isinstance(items, list) else []):
                key, msg = refs.check_reference(ref, images)
                if key is not None and msg is not None:
                    yield self.finding(("images", i, key), f"image {ref.get('name')}: {msg}")
            return
        built = refs.built_checksums(root)
        topo = doc.data.get("topology_template")
        nodes = topo.get("node_templates") if isinstance(topo, dict) else None
        for name, node in (nodes.items() if isinstance(nodes, dict) else []):
            props = node.get("properties") if isinstance(node, dict) else None
            sw = props.get("sw_image_data") if isinstance(props, dict) else None
            checksum = sw.get("checksum") if isinstance(sw, dict) else None
            value = checksum.get("hash") if isinstance(checksum, dict) else None
            if value is None:
                continue
            if str(value) not in built:
                yield self.finding(
                    ("topology_template", "node_templates", name, "properties", "sw_image_data", "checksum", "hash"),
                    f"{name}: sw_image_data checksum {value} is not the sha256 of an image the catalog builds "
                    f"(built: {', '.join(f'{i.image} {i.locked_version}' for i in built.values()) or 'none'}); "
                    "reference an images/ entry in entry.yaml and run `nfvcat docs`")
