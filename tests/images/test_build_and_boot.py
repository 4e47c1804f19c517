"""Every image entry: two builds from the same lock give the same sha256 (the second from scratch, the
first too unless the lock's build is cached), equal to the committed lock's when the mirror still serves
its versions; the image boots under UEFI (OVMF, as a cloud with hw_firmware_type=uefi boots it) and
cloud-init reports done without errors: no module error in its verdict, no WARNING or Traceback in its
logs, the locale set; sshd runs, no systemd unit failed, and each image's own software is there and runs
(FRR and keepalived on vrouter, charon-systemd answering swanctl on ipsec-gw).

The test works on a copy of the catalog, so a mirror that moved on never rewrites the repository's lock."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from nfvcat.packaging.images import build, recipe
from tests.conftest import ROOT
from tests.images.conftest import OVMF

NAMES = recipe.names(ROOT)


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("catalog")
    shutil.copytree(ROOT / "images", root / "images")
    return root


@pytest.mark.parametrize("name", NAMES)
def test_two_builds_give_the_same_image(name: str, catalog: Path) -> None:
    committed = recipe.read_lock(recipe.load(name, ROOT))
    r = recipe.load(name, catalog)
    t0 = time.monotonic()
    first = build.build(r, print, root=catalog, force=True)
    t1 = time.monotonic()
    second = build.build(r, print, root=catalog, force=True)  # compared with the lock the first one wrote
    t2 = time.monotonic()
    print(f"\n[images] {name}: builds {t1 - t0:.0f} s and {t2 - t1:.0f} s, sha256 {second.lock.sha256}, "
          f"{second.lock.size} bytes, {len(second.lock.packages)} packages")
    assert second.lock_status == "reproduced" and second.lock.sha256 == first.lock.sha256
    manifest = (second.disk.parent / "rootfs.sha256").read_text()  # the image ships byte code (checked-hash)
    for pyc in ("usr/lib/python3.11/__pycache__/os.cpython-311.pyc",
                "usr/lib/python3/dist-packages/cloudinit/__pycache__/__init__.cpython-311.pyc"):
        assert f" {pyc}\n" in manifest, pyc
    assert committed is not None, f"images/{name} has no committed lock: run nfvcat image build {name}"
    if committed.packages == first.lock.packages and committed.recipe == first.lock.recipe:
        assert first.lock.sha256 == committed.sha256, "same packages as the committed lock, other sha256"
    else:
        print(f"[images] {name}: the mirror serves other versions than the committed lock: "
              + "; ".join(build.package_changes(committed.packages, first.lock.packages)[:10]))


# What each image must run or hold once booted, beyond cloud-init's verdict: shell commands that must exit 0.
EXPECTED: dict[str, dict[str, str]] = {
    "vrouter": {"frr": "systemctl is-active frr.service && vtysh -c 'show version' | grep -q FRRouting",
                "keepalived": "keepalived --version 2>&1 | grep -q Keepalived && "
                              "systemctl cat keepalived.service >/dev/null",
                "qemu-guest-agent": "dpkg-query -W qemu-guest-agent"},
    "ipsec-gw": {"charon-systemd": "systemctl is-active strongswan.service && pgrep -x charon-systemd",
                 "swanctl": "swanctl --stats | grep -q 'uptime'"},
}
COMMON = {"sshd": "systemctl is-active ssh.service",
          "nftables": "nft list ruleset >/dev/null",
          "failed-units": "test -z \"$(systemctl list-units --failed --plain --no-legend)\"",
          # the image's byte code served cloud-init's first boot: no .pyc written after the build's epoch
          "no-byte-code-compiled-at-boot": "out=$(find /usr -name '*.pyc' -newermt @{epoch} | head -5); "
                                           "test -z \"$out\" || { echo $out; false; }"}

# Test instrumentation, delivered as day-0 data (NoCloud seed): once cloud-init is done, its verdict, every
# WARNING/Traceback line of its logs, the locale and each check's exit status go to the serial console.
SEED_USER_DATA = """#cloud-config
write_files:
  - path: /usr/local/sbin/nfvcat-verdict
    permissions: '0755'
    content: |
      #!/bin/sh
      cloud-init status --wait >/dev/null 2>&1
      cloud-init status --long > /dev/ttyS0 2>&1
      echo "NFVCAT-RESULT $(tr -d '\\n' < /run/cloud-init/result.json)" > /dev/ttyS0
      echo "NFVCAT-LOCALE $(grep ^LANG= /etc/default/locale) $(locale 2>&1 | grep -c 'Cannot set')" > /dev/ttyS0
      grep -h -E 'WARNING|Traceback' /var/log/cloud-init.log /var/log/cloud-init-output.log \\
        | sed 's/^/NFVCAT-LOG /' > /dev/ttyS0
      echo "NFVCAT-LOG-LINES $(cat /var/log/cloud-init.log /var/log/cloud-init-output.log \\
        | grep -c -E 'WARNING|Traceback')" > /dev/ttyS0
      while read -r name cmd; do
        out=$(sh -c "$cmd" 2>&1 </dev/null); rc=$?
        echo "NFVCAT-CHECK $name rc=$rc $(echo "$out" | tr '\\n' ' ' | cut -c1-300)" > /dev/ttyS0
      done < /usr/local/etc/nfvcat-checks
      echo NFVCAT-BOOT-DONE > /dev/ttyS0
  - path: /usr/local/etc/nfvcat-checks
    permissions: '0644'
    content: |
{checks}
runcmd:
  - [systemd-run, --no-block, /usr/local/sbin/nfvcat-verdict]
"""


def seed_user_data(name: str, epoch: int) -> str:
    checks = {k: v.replace("{epoch}", str(epoch)) for k, v in {**COMMON, **EXPECTED[name]}.items()}
    return SEED_USER_DATA.replace("{checks}", "".join(f"      {k} {v}\n" for k, v in checks.items()).rstrip("\n"))


@pytest.mark.parametrize("name", NAMES)
def test_image_boots_and_cloud_init_is_done_without_errors(name: str, catalog: Path, tmp_path: Path) -> None:
    r = recipe.load(name, catalog)
    built = build.build(r, print, root=catalog)  # the cached build of the test above
    seed = tmp_path / "seed"
    seed.mkdir()
    (seed / "user-data").write_text(seed_user_data(name, r.source_date_epoch))
    (seed / "meta-data").write_text(f"instance-id: nfvcat-test-{name}\nlocal-hostname: {name}\n")
    iso = tmp_path / "seed.iso"
    subprocess.run(["genisoimage", "-quiet", "-o", str(iso), "-V", "cidata", "-J", "-r", str(seed)], check=True)
    overlay = tmp_path / "disk.qcow2"
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", str(built.disk), str(overlay)],
                   check=True)
    varstore = tmp_path / "vars.fd"
    shutil.copy(OVMF[1], varstore)
    console = tmp_path / "console.log"
    argv = ["qemu-system-x86_64", "-machine", "q35,accel=tcg", "-cpu", "max", "-smp", "1", "-m", "1024",
            "-display", "none", "-vga", "none", "-monitor", "none", "-no-reboot", "-nic", "none",
            "-serial", f"file:{console}",
            "-drive", f"if=pflash,format=raw,readonly=on,file={OVMF[0]}",
            "-drive", f"if=pflash,format=raw,file={varstore}",
            "-drive", f"file={overlay},if=none,id=root,format=qcow2", "-device", "virtio-blk-pci,drive=root",
            "-drive", f"file={iso},if=none,id=cd0,media=cdrom,readonly=on,format=raw", "-device", "ide-cd,drive=cd0"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    t0 = time.monotonic()
    try:
        text = ""
        while "NFVCAT-BOOT-DONE" not in text:
            assert proc.poll() is None, f"QEMU exited ({proc.returncode}): {proc.stderr.read().decode()[-500:]}"  # type: ignore[union-attr]
            assert time.monotonic() - t0 < 1800, f"no verdict after 1800 s; console tail:\n{text[-3000:]}"
            time.sleep(5)
            text = console.read_text(errors="replace") if console.exists() else ""
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    print(f"\n[images] {name}: cloud-init done {time.monotonic() - t0:.0f} s after power-on (TCG, UEFI)")
    assert re.search(r"(?m)^status: done", text), text[-3000:]
    m = re.search(r"NFVCAT-RESULT (\{.*\})", text)
    assert m, text[-3000:]
    result = json.loads(m.group(1))["v1"]
    assert result["errors"] == [], result
    assert "invalid locale settings" not in text and "NFVCAT-LOCALE LANG=en_US.UTF-8 0" in text, text[-3000:]
    log_lines = re.findall(r"(?m)^NFVCAT-LOG (.*)$", text)
    assert re.search(r"(?m)^NFVCAT-LOG-LINES 0\s*$", text) and not log_lines, log_lines  # cloud-init's logs
    checks = dict(re.findall(r"(?m)^NFVCAT-CHECK (\S+) rc=(\d+)", text))
    expected = {**COMMON, **EXPECTED[name]}
    assert set(checks) == set(expected), (checks, text[-3000:])
    failed = {k: line for k, line in re.findall(r"(?m)^NFVCAT-CHECK (\S+) (rc=[1-9].*)$", text)}
    assert not failed, failed
