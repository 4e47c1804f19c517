"""Makes the dev cloud's compute drivers loadable by Nova, which imports drivers only as ``nova.virt.<name>``:
a one-line module ``nova/virt/nfvcat_devcloud.py`` in the venv re-exports :mod:`nfvcat_testbeds.devcloud.fakevirt`."""

from __future__ import annotations

from pathlib import Path

NAME = "nfvcat_devcloud"
TEXT = ('"""Written by `nfvcat devcloud up`: the dev cloud\'s compute drivers'
        ' (nfvcat_testbeds.devcloud.fakevirt, simulated; nfvcat_testbeds.devcloud.libvirtdriver, real)."""\n'
        "from nfvcat_testbeds.devcloud.fakevirt import InventoryDriver  # noqa: F401\n"
        "from nfvcat_testbeds.devcloud.libvirtdriver import LibvirtDriver  # noqa: F401\n")


def path() -> Path:
    import nova.virt

    return Path(nova.virt.__path__[0]) / f"{NAME}.py"


def install() -> Path:
    target = path()
    if not target.is_file() or target.read_text() != TEXT:
        target.write_text(TEXT)
    return target


def remove() -> None:
    path().unlink(missing_ok=True)
