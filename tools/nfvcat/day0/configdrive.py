"""A config drive like Nova's: an ISO 9660 + Joliet + Rock Ridge image labelled ``config-2`` holding
``openstack/latest/{meta_data.json,user_data,network_data.json}``, made with the genisoimage flags Nova uses."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from nfvcat import __version__
from nfvcat.core.errors import EXIT_ENGINE, UserError
from nfvcat.day0.render import Day0, write_json

PUBLISHER = f"nfvcat {__version__}"


def populate(day0: Day0, root: Path) -> Path:
    """Write the config drive's tree under ``root``; returns ``root/openstack/latest``."""
    latest = root / "openstack" / "latest"
    latest.mkdir(parents=True, exist_ok=True)
    write_json(latest / "meta_data.json", day0.meta_data())
    write_json(latest / "network_data.json", day0.network_data())
    (latest / "user_data").write_text(day0.delivered_user_data())
    return latest


def genisoimage_command(output: Path, tree: Path, publisher: str = PUBLISHER) -> list[str]:
    return ["genisoimage", "-o", str(output), "-ldots", "-allow-lowercase", "-allow-multidot", "-l",
            "-publisher", publisher, "-quiet", "-J", "-r", "-V", "config-2", str(tree)]


def build_iso(day0: Day0, output: Path) -> Path:
    tool = shutil.which("genisoimage")
    if tool is None:
        raise UserError("genisoimage is not installed (Debian package genisoimage, tools/debs/day0.txt)",
                        EXIT_ENGINE)
    with tempfile.TemporaryDirectory(prefix="nfvcat-configdrive-") as tmp:
        populate(day0, Path(tmp))
        proc = subprocess.run(genisoimage_command(output, Path(tmp)), capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise UserError(f"genisoimage failed: {proc.stderr.strip().splitlines()[-1:]}", EXIT_ENGINE)
    return output
