"""Which ``virt_type`` the dev cloud's real host gets: ``kvm`` only where KVM can boot a guest, else ``qemu`` (TCG).

``/dev/kvm`` existing proves little, and neither does ``KVM_CREATE_VM`` succeeding: a paravirtualised KVM (PVM, as
on this kind of machine) answers both and still hangs a stock guest kernel. A machine whose CPU exposes hardware
virtualisation shows ``vmx`` (Intel) or ``svm`` (AMD) in ``/proc/cpuinfo``; where it does, a one-instruction guest
(HLT in real mode) must also run to its ``KVM_EXIT_HLT`` through the KVM API (in a child process, with a timeout,
so a KVM that hangs cannot hang ``devcloud up``).
"""

from __future__ import annotations

import ctypes
import fcntl
import mmap
import os
import subprocess
import sys
from pathlib import Path

KVMIO = 0xAE
SREGS_SIZE = 312  # struct kvm_sregs: 8 segments of 24 bytes, 2 dtables of 16, 7 registers, 4 bitmap words
REGS_SIZE = 144  # struct kvm_regs: 18 x u64, rip at 128, rflags at 136
REGION_SIZE = 32  # struct kvm_userspace_memory_region
KVM_EXIT_HLT = 5


def _io(nr: int) -> int:
    return (KVMIO << 8) | nr


def _iow(nr: int, size: int) -> int:
    return (1 << 30) | (size << 16) | (KVMIO << 8) | nr


def _ior(nr: int, size: int) -> int:
    return (2 << 30) | (size << 16) | (KVMIO << 8) | nr


def cpu_flags(cpuinfo: str | None = None) -> set[str]:
    text = Path("/proc/cpuinfo").read_text() if cpuinfo is None else cpuinfo
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def hlt_guest(device: str = "/dev/kvm") -> int:
    """Run a one-byte guest (HLT at 0x1000, real mode) on one vCPU; returns KVM's exit reason."""
    kvm = os.open(device, os.O_RDWR | os.O_CLOEXEC)
    try:
        vm = fcntl.ioctl(kvm, _io(0x01), 0)  # KVM_CREATE_VM
        mem = mmap.mmap(-1, 0x1000)
        mem.write(b"\xf4")  # hlt
        addr = ctypes.addressof(ctypes.c_char.from_buffer(mem))
        region = (0).to_bytes(4, "little") + (0).to_bytes(4, "little") + (0x1000).to_bytes(8, "little") + \
            (0x1000).to_bytes(8, "little") + addr.to_bytes(8, "little")
        fcntl.ioctl(vm, _iow(0x46, REGION_SIZE), region)  # KVM_SET_USER_MEMORY_REGION
        vcpu = fcntl.ioctl(vm, _io(0x41), 0)  # KVM_CREATE_VCPU
        size = fcntl.ioctl(kvm, _io(0x04), 0)  # KVM_GET_VCPU_MMAP_SIZE
        run = mmap.mmap(vcpu, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        sregs = bytearray(SREGS_SIZE)
        fcntl.ioctl(vcpu, _ior(0x83, SREGS_SIZE), sregs, True)  # KVM_GET_SREGS
        sregs[0:8] = (0).to_bytes(8, "little")  # cs.base
        sregs[12:14] = (0).to_bytes(2, "little")  # cs.selector
        fcntl.ioctl(vcpu, _iow(0x84, SREGS_SIZE), bytes(sregs))  # KVM_SET_SREGS
        regs = bytearray(REGS_SIZE)
        regs[128:136] = (0x1000).to_bytes(8, "little")  # rip
        regs[136:144] = (0x2).to_bytes(8, "little")  # rflags (bit 1 is always set)
        fcntl.ioctl(vcpu, _iow(0x82, REGS_SIZE), bytes(regs))  # KVM_SET_REGS
        fcntl.ioctl(vcpu, _io(0x80), 0)  # KVM_RUN
        return int.from_bytes(run[8:12], "little")  # kvm_run.exit_reason
    finally:
        os.close(kvm)


def virt_type(timeout: float = 10.0, cpuinfo: str | None = None, device: str = "/dev/kvm") -> tuple[str, str]:
    """(``kvm`` or ``qemu``, why)."""
    hw = cpu_flags(cpuinfo) & {"vmx", "svm"}
    if not hw:
        return "qemu", "no vmx/svm in /proc/cpuinfo: the CPU exposes no hardware virtualisation (QEMU TCG)"
    if not os.path.exists(device):
        return "qemu", f"{', '.join(sorted(hw))} but no {device} (QEMU TCG)"
    try:
        res = subprocess.run([sys.executable, "-m", "nfvcat_testbeds.devcloud.accel", device], capture_output=True,
                             text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return "qemu", f"a one-instruction guest did not finish under KVM within {timeout:.0f} s (QEMU TCG)"
    if res.returncode != 0 or res.stdout.strip() != str(KVM_EXIT_HLT):
        why = (res.stderr.strip().splitlines() or [f"exit reason {res.stdout.strip()}"])[-1]
        return "qemu", f"a one-instruction guest did not halt under KVM ({why}) (QEMU TCG)"
    return "kvm", f"{', '.join(sorted(hw))} and a one-instruction guest halted under KVM"


if __name__ == "__main__":
    print(hlt_guest(sys.argv[1] if len(sys.argv) > 1 else "/dev/kvm"))
