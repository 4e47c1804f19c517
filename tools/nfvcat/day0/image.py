"""The VNF guest image of the day-0 VM tier: Debian bookworm by mmdebstrap, an ext4 root made with
``mkfs.ext4 -d`` (no loop mount), converted to qcow2, plus the kernel and initrd for direct kernel boot.

Cached outside the repository (``$NFVCAT_IMAGE_CACHE`` or ``~/.cache/nfvcat/images``) under a key made of
the package list and everything else that goes into the image; a second run only checks the key.

Besides Debian packages the image holds one piece of test instrumentation, ``nfvcat-probe.service``, which
prints the IPsec SA state and ESP counters as ``NFVCAT-PROBE`` lines on the serial console. It configures
nothing: every bit of VNF configuration comes from the day-0 data.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from nfvcat.images.build import umount_below

PACKAGES = ("linux-image-amd64", "systemd-sysv", "udev", "cloud-init", "strongswan-swanctl", "charon-systemd",
            "libstrongswan-standard-plugins",
            "nftables", "ifupdown", "iproute2", "kmod", "ethtool", "procps", "iputils-ping")
SUITE = "bookworm"
MIRRORS = ("deb http://deb.debian.org/debian bookworm main",
           "deb http://deb.debian.org/debian bookworm-updates main",
           "deb http://deb.debian.org/debian-security bookworm-security main")
ROOT_LABEL = "nfvcat-root"
BUILDER_VERSION = "1"

PROBE = r"""#!/bin/sh
# nfvcat test instrumentation, not VNF configuration: reports the IPsec SAs on the console.
t0=""
while :; do
  up=$(cut -d' ' -f1 /proc/uptime)
  raw=$(swanctl --list-sas --raw 2>/dev/null)
  if echo "$raw" | grep -q 'state=INSTALLED'; then
    if [ -z "$t0" ]; then
      t0=$up
      echo "NFVCAT-PROBE tunnel-up uptime=$up" > /dev/console
      echo "NFVCAT-PROBE datasource $(cloud-init query v1.platform 2>/dev/null) $(cloud-init query v1.subplatform 2>/dev/null)" \
        > /dev/console
    fi
    f=$(echo "$raw" | grep -o '\(state\|protocol\|encap\|bytes-in\|packets-in\|bytes-out\|packets-out\)=[A-Za-z0-9]*' \
        | tr '\n' ' ')
    x=$(ip -s xfrm state 2>/dev/null | grep -c 'proto esp')
    echo "NFVCAT-PROBE counters uptime=$up xfrm_esp_states=$x $f" > /dev/console
  else
    n=$((${n:-0} + 1))
    if [ $((n % 10)) = 0 ]; then  # every 30 s without a tunnel: what strongSwan says
      echo "NFVCAT-PROBE waiting uptime=$up conns=$(swanctl --list-conns 2>&1 | grep -c IKEv2)" > /dev/console
      journalctl -u strongswan.service -o cat -n 12 --no-pager 2>&1 | sed 's/^/NFVCAT-PROBE log: /' > /dev/console
    fi
  fi
  sleep 3
done
"""  # noqa: E501 (a shell line)

PROBE_UNIT = """[Unit]
Description=nfvcat test probe: IPsec SA state and ESP counters on the console
After=network-online.target

[Service]
ExecStart=/usr/local/sbin/nfvcat-probe

[Install]
WantedBy=multi-user.target
"""

CLOUD_CFG = """# nfvcat test image: config drive first, then NoCloud; no network look-ups for other clouds
datasource_list: [ConfigDrive, NoCloud, None]
"""


@dataclass
class GuestImage:
    disk: Path
    kernel: Path
    initrd: Path
    key: str
    built_seconds: float | None  # None when it came from the cache


def cache_dir() -> Path:
    env = os.environ.get("NFVCAT_IMAGE_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "nfvcat" / "images"


def image_key(packages: tuple[str, ...] = PACKAGES) -> str:
    h = hashlib.sha256()
    for part in (BUILDER_VERSION, SUITE, *MIRRORS, *sorted(packages), PROBE, PROBE_UNIT, CLOUD_CFG, ROOT_LABEL):
        h.update(part.encode() + b"\0")
    return h.hexdigest()[:16]


def _run(cmd: list[str], log: Path) -> None:
    with log.open("a") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, check=False)
    if proc.returncode != 0:
        tail = log.read_text(errors="replace").splitlines()[-15:]
        raise RuntimeError(f"{cmd[0]} failed ({proc.returncode}); log {log}:\n" + "\n".join(tail))


def ensure_image(packages: tuple[str, ...] = PACKAGES) -> GuestImage:
    """The cached image for ``packages``, built first if missing (~2-3 minutes)."""
    key = image_key(packages)
    base = cache_dir()
    base.mkdir(parents=True, exist_ok=True)
    final = base / key
    with (base / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (final / "disk.qcow2").is_file():
            return GuestImage(final / "disk.qcow2", final / "vmlinuz", final / "initrd.img", key, None)
        started = time.monotonic()
        work = Path(tempfile.mkdtemp(prefix=f"build-{key}-", dir=base))
        try:
            _build(work, packages)
            os.replace(work / "out", final)
        finally:
            umount_below(work)
            shutil.rmtree(work, ignore_errors=True)
        return GuestImage(final / "disk.qcow2", final / "vmlinuz", final / "initrd.img", key,
                          time.monotonic() - started)


def _build(work: Path, packages: tuple[str, ...]) -> None:
    root, out, log = work / "rootfs", work / "out", work / "build.log"
    out.mkdir()
    _run(["mmdebstrap", "--variant=apt", "--mode=root", f"--include={','.join(packages)}",
          "--aptopt=Acquire::Languages \"none\"",
          "--dpkgopt=path-exclude=/usr/share/doc/*", "--dpkgopt=path-exclude=/usr/share/man/*",
          "--dpkgopt=path-exclude=/usr/share/locale/*", "--dpkgopt=path-include=/usr/share/locale/locale.alias",
          SUITE, str(root), *MIRRORS], log)
    (root / "etc" / "fstab").write_text(f"LABEL={ROOT_LABEL} / ext4 defaults 0 1\n")
    (root / "etc" / "hostname").write_text("nfvcat-vnf\n")
    (root / "etc" / "cloud" / "cloud.cfg.d" / "90-nfvcat.cfg").write_text(CLOUD_CFG)
    probe = root / "usr" / "local" / "sbin" / "nfvcat-probe"
    probe.write_text(PROBE)
    probe.chmod(0o755)
    (root / "etc" / "systemd" / "system" / "nfvcat-probe.service").write_text(PROBE_UNIT)
    wants = root / "etc" / "systemd" / "system" / "multi-user.target.wants"
    wants.mkdir(parents=True, exist_ok=True)
    (wants / "nfvcat-probe.service").symlink_to("/etc/systemd/system/nfvcat-probe.service")
    # root without a password on the serial console, for post-mortems by hand only
    subprocess.run(["chroot", str(root), "passwd", "-d", "root"], check=False, capture_output=True)
    kernels = sorted((root / "boot").glob("vmlinuz-*"))
    initrds = sorted((root / "boot").glob("initrd.img-*"))
    if not kernels or not initrds:
        raise RuntimeError(f"no kernel or initrd in the image's /boot; log {log}")
    shutil.copy(kernels[-1], out / "vmlinuz")
    shutil.copy(initrds[-1], out / "initrd.img")
    used = int(subprocess.run(["du", "-sxm", str(root)], capture_output=True, text=True, check=True).stdout.split()[0])
    raw = work / "disk.raw"
    _run(["mkfs.ext4", "-q", "-F", "-L", ROOT_LABEL, "-d", str(root), str(raw), f"{used + 768}M"], log)
    _run(["qemu-img", "convert", "-O", "qcow2", str(raw), str(out / "disk.qcow2")], log)
    (out / "packages.txt").write_text("\n".join(packages) + "\n")
    shutil.copy(log, out / "build.log")
