"""The image tier: builds the catalog's VNF images for real (root, Debian's mirrors, minutes of CPU each),
rebuilds them to prove the build reproducible, and boots them (QEMU TCG, UEFI firmware)."""

from __future__ import annotations

import os
import shutil

import pytest

NEEDED = ("mmdebstrap", "mkfs.ext4", "debugfs", "e2fsck", "mkfs.fat", "mmd", "mcopy", "sfdisk", "qemu-img",
          "qemu-system-x86_64", "genisoimage")
OVMF = ("/usr/share/OVMF/OVMF_CODE_4M.fd", "/usr/share/OVMF/OVMF_VARS_4M.fd")


@pytest.fixture(scope="session", autouse=True)
def _image_prerequisites() -> None:
    if os.geteuid() != 0:
        pytest.fail("the image tier needs root (mmdebstrap --mode=root, chroot)")
    missing = [t for t in NEEDED if shutil.which(t) is None] + [f for f in OVMF if not os.path.exists(f)]
    if missing:
        pytest.fail(f"missing {', '.join(missing)}: run tools/setup.sh (tools/debs/day0.txt)")
