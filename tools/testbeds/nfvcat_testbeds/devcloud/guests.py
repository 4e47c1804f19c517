"""The running guests of the dev cloud's real host as ``check``'s host access reads them
(:class:`nfvcat.cloud.hostaccess.GuestAccess`): the libvirt domain (``virsh dumpxml`` on the host's libvirtd) and
the QEMU process (``/proc``: each thread's ``Cpus_allowed_list``, the memory it maps on huge pages)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from nfvcat.catalog.inventory import parse_cpu_spec
from nfvcat.cloud.hostaccess import GuestFacts, guest_domain
from nfvcat_testbeds.devcloud import realhost
from nfvcat_testbeds.devcloud.state import State

VCPU_THREAD = re.compile(r"CPU (\d+)/(KVM|TCG)")  # QEMU names each vCPU thread so


def qemu_pid(lv: realhost.Libvirt, domain: str) -> int | None:
    try:
        return int((lv.dirs["run"] / "qemu" / f"{domain}.pid").read_text().strip())
    except (OSError, ValueError):
        return None


def threads(pid: int) -> dict[int, tuple[str, set[int]]]:
    """tid -> (thread name, Cpus_allowed_list) of a process."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            status = (task / "status").read_text()
        except OSError:
            continue  # the thread ended meanwhile
        allowed = next(line.split(":", 1)[1].strip() for line in status.splitlines()
                       if line.startswith("Cpus_allowed_list:"))
        out[int(task.name)] = (name, parse_cpu_spec(allowed))
    return out


def huge_mb(pid: int) -> int:
    """MiB the process maps on pages larger than 4 KiB (``/proc/PID/smaps``: Size of the mappings whose
    KernelPageSize is larger)."""
    total_kb = size_kb = 0
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        if line.startswith("Size:"):
            size_kb = int(line.split()[1])
        elif line.startswith("KernelPageSize:") and int(line.split()[1]) > 4:
            total_kb += size_kb
    return total_kb // 1024


def guest_facts(state: State, host: str, server_id: str) -> GuestFacts | None:
    """The guest of Nova server ``server_id`` on real host ``host``; None when libvirtd has no running domain of it."""
    lv = realhost.Libvirt(state, host)
    if not lv.socket.exists():
        return None
    res = lv.virsh("dumpxml", server_id)
    if res.returncode != 0:
        return None
    root = ET.fromstring(res.stdout)
    pid = qemu_pid(lv, root.findtext("name") or "")
    if pid is None or not Path(f"/proc/{pid}").is_dir():
        return None
    domain, page_kb, memnodes = guest_domain(root)
    vcpus: dict[int, set[int]] = {}
    others: dict[str, set[int]] = {}
    for tid, (name, allowed) in threads(pid).items():
        if name.startswith("TC "):  # a QEMU thread-context object (memory preallocation): node-wide by design,
            continue  # it only spawns the preallocation threads and sleeps after boot
        m = VCPU_THREAD.fullmatch(name)
        if m:
            vcpus[int(m.group(1))] = allowed
        else:
            others[f"{name}/{tid}"] = allowed
    return GuestFacts(domain, page_kb, memnodes, vcpus, others, huge_mb(pid))
