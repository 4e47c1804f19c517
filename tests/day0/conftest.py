"""Fixtures of the day-0 tier. Everything a test starts (namespaces, daemons, VMs) is removed on success,
failure and interrupt: fixture finalizers, an atexit hook, and SIGTERM/SIGHUP turned into KeyboardInterrupt
so pytest unwinds its fixtures."""

from __future__ import annotations

import atexit
import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from nfvcat_testbeds.lab import chain as chain_mod
from nfvcat_testbeds.lab.netns import Lab, run, stale_namespaces

NEEDED = ("ip", "nft", "swanctl", "tcpdump", "genisoimage", "isoinfo", "ping", "unshare", "trafgen", "chromium",
          "timeout", "qemu-system-x86_64",
          # the product image the VM tier boots (images/ipsec-gw), built by nfvcat.packaging.images when not cached
          "mmdebstrap", "mkfs.ext4", "debugfs", "e2fsck", "mkfs.fat", "mmd", "mcopy", "sfdisk", "qemu-img")


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.fixture(scope="session", autouse=True)
def _day0_prerequisites() -> None:
    if os.geteuid() != 0:
        pytest.fail("the day-0 tier needs root (network namespaces, nftables, charon, QEMU taps)")
    missing = [t for t in NEEDED if shutil.which(t) is None]
    if not os.path.exists("/usr/lib/ipsec/charon"):
        missing.append("/usr/lib/ipsec/charon")
    if missing:
        pytest.fail(f"missing {', '.join(missing)}: run tools/setup.sh (tools/debs/day0.txt)")
    for name in stale_namespaces():  # left by a run that was killed with SIGKILL
        run(["ip", "netns", "del", name], check=False)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupt)


@pytest.fixture(scope="session")
def lab() -> Iterator[Lab]:
    lab = Lab()
    atexit.register(lab.close)
    try:
        yield lab
    finally:
        lab.close()


@pytest.fixture(scope="session")
def chain(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> chain_mod.Chain:
    return chain_mod.build(lab, Path(tmp_path_factory.mktemp("chain")))
