"""QEMU guests of the day-0 VM tier: direct kernel boot of a catalog VNF image (``nfvcat.packaging.images.obtain``: the
kernel and initrd beside the cached qcow2, ``root=LABEL=``), a qcow2 overlay per VM, the config drive as a
CD-ROM, virtio NICs on taps inside a namespace of the lab, the serial console in a file. TCG (``/dev/kvm`` on
this kind of host cannot boot a stock kernel) unless ``NFVCAT_QEMU_ACCEL`` says otherwise."""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from nfvcat.packaging.images.build import Built
from nfvcat_testbeds.lab.netns import Lab, run


@dataclass
class Nic:
    tap: str
    mac: str
    bridge: str


@dataclass
class Vm:
    name: str
    ns: str
    workdir: Path
    nics: list[Nic]
    iso: Path
    memory_mib: int = 1024
    proc: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    extra_args: list[str] = field(default_factory=list)

    @property
    def console(self) -> Path:
        return self.workdir / f"{self.name}.console.log"

    def console_text(self) -> str:
        return self.console.read_text(errors="replace") if self.console.exists() else ""

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.console_text().splitlines()[-lines:])

    def wait_for(self, pattern: str, timeout: float, after: int = 0) -> re.Match[str]:
        """The first console line matching ``pattern`` (searching from character ``after``)."""
        deadline = time.monotonic() + timeout
        rx = re.compile(pattern)
        while True:
            m = rx.search(self.console_text(), after)
            if m:
                return m
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"{self.name}: QEMU exited ({self.proc.returncode}) before {pattern!r}; "
                                   f"console tail:\n{self.tail()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.name}: no {pattern!r} on the console after {timeout:.0f} s "
                                   f"(TCG is slow); console tail:\n{self.tail()}")
            time.sleep(1)


def boot(lab: Lab, image: Built, vm: Vm) -> Vm:
    vm.workdir.mkdir(parents=True, exist_ok=True)
    overlay = vm.workdir / f"{vm.name}.qcow2"
    run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", str(image.disk), str(overlay)])
    for nic in vm.nics:
        lab.sh(vm.ns, f"ip tuntap add dev {nic.tap} mode tap && ip link set {nic.tap} master {nic.bridge} up")
    accel = os.environ.get("NFVCAT_QEMU_ACCEL", "tcg")
    argv = ["qemu-system-x86_64", "-name", vm.name, "-machine", f"q35,accel={accel}", "-cpu", "max", "-smp", "1",
            "-m", str(vm.memory_mib), "-display", "none", "-vga", "none", "-monitor", "none", "-no-reboot",
            "-serial", f"file:{vm.console}",
            "-kernel", str(image.kernel), "-initrd", str(image.initrd),
            "-append", f"root=LABEL={image.recipe.root_label} ro console=ttyS0,115200 panic=-1",
            "-drive", f"file={overlay},if=none,id=root,format=qcow2,discard=unmap",
            "-device", "virtio-blk-pci,drive=root,serial=root",
            "-drive", f"file={vm.iso},if=none,id=cd0,media=cdrom,readonly=on,format=raw",
            "-device", "ide-cd,drive=cd0",
            "-object", "rng-random,id=rng0,filename=/dev/urandom", "-device", "virtio-rng-pci,rng=rng0"]
    for i, nic in enumerate(vm.nics):
        argv += ["-netdev", f"tap,id=n{i},ifname={nic.tap},script=no,downscript=no",
                 "-device", f"virtio-net-pci,netdev=n{i},mac={nic.mac}"]
    argv += vm.extra_args
    vm.proc = lab.spawn(["ip", "netns", "exec", vm.ns, *argv], vm.workdir / f"{vm.name}.qemu.log")
    vm.started = time.monotonic()
    return vm
