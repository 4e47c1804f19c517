"""A minimal valid, empty qcow2 (v3) image: Glance inspects uploads and refuses raw bytes labelled qcow2."""

from __future__ import annotations

import struct
from pathlib import Path

CLUSTER_BITS = 16
CLUSTER = 1 << CLUSTER_BITS


def write(path: Path, size: int = 1 << 30, tag: bytes = b"") -> Path:
    l2_entries = CLUSTER // 8
    l1_size = -(-size // (CLUSTER * l2_entries))
    header = struct.pack(
        ">4sIQIIQIIQQIIQQQQII", b"QFI\xfb", 3, 0, 0, CLUSTER_BITS, size, 0, l1_size, 3 * CLUSTER, CLUSTER, 1, 0, 0,
        0, 0, 0, 4, 104)
    clusters = [header.ljust(CLUSTER, b"\0"),
                struct.pack(">Q", 2 * CLUSTER).ljust(CLUSTER, b"\0"),  # refcount table -> block in cluster 2
                struct.pack(">4H", 1, 1, 1, 1).ljust(CLUSTER, b"\0"),  # clusters 0-3 used once
                (b"\0" * (8 * l1_size)).ljust(CLUSTER, b"\0")]  # L1 table: nothing allocated
    # the tag (after the image's clusters) makes distinct files for the same empty disk
    path.write_bytes(b"".join(clusters) + tag)
    return path
