"""What the dev cloud changes on the host, and undoes on ``down``: 2 MiB huge pages and a hugetlbfs mount for
OVS-DPDK. Everything changed is recorded in run/host.json before it is changed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from nfvcat_testbeds.devcloud.state import State

NR_HUGEPAGES = Path("/proc/sys/vm/nr_hugepages")
DPDK_PAGES = 300  # 2 MiB pages: OVS-DPDK takes 256 MiB of socket memory (dpdk-socket-mem)


def _record(state: State) -> Path:
    return state.run / "host.json"


def _load(state: State) -> dict[str, Any]:
    try:
        return dict(json.loads(_record(state).read_text()))
    except (OSError, ValueError):
        return {}


def _save(state: State, data: dict[str, Any]) -> None:
    _record(state).write_text(json.dumps(data))


def hugepage_dir(state: State) -> Path:
    return state.run / "hugepages"


def _free_pages() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("HugePages_Free:"):
            return int(line.split()[1])
    return 0


def _mounted(path: Path) -> bool:
    target = str(path.resolve())
    return any(line.split()[1] == target for line in Path("/proc/mounts").read_text().splitlines())


def reserve_hugepages(state: State, guest_pages: int = 0) -> str | None:
    """Reserve huge pages (OVS-DPDK's and ``guest_pages`` for the real host's guests) and mount hugetlbfs (for
    OVS-DPDK and libvirt). None if done, else why not (no DPDK then)."""
    data = _load(state)
    mount = hugepage_dir(state)
    try:
        if "nr_hugepages_before" not in data:
            before = int(NR_HUGEPAGES.read_text().strip())
            data["nr_hugepages_before"] = before
            data["guest_pages"] = guest_pages
            _save(state, data)
            NR_HUGEPAGES.write_text(f"{before + DPDK_PAGES + guest_pages}\n")
        if _free_pages() < DPDK_PAGES // 2:
            return f"only {_free_pages()} free 2 MiB huge pages after asking for {DPDK_PAGES}"
        mount.mkdir(parents=True, exist_ok=True)
        if not _mounted(mount):
            data["mount"] = str(mount)
            _save(state, data)
            subprocess.run(["mount", "-t", "hugetlbfs", "-o", "pagesize=2M", "nodev", str(mount)], check=True,
                           capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", None) or str(exc)
        return f"cannot reserve huge pages: {detail.strip()}"
    return None


def restore(state: State) -> list[str]:
    """Undo what reserve_hugepages did; returns what was restored."""
    data = _load(state)
    done: list[str] = []
    mount = data.get("mount")
    if mount and _mounted(Path(mount)):
        subprocess.run(["umount", mount], check=False, capture_output=True)
        done.append(f"unmounted {mount}")
    if "nr_hugepages_before" in data:
        try:
            NR_HUGEPAGES.write_text(f"{data['nr_hugepages_before']}\n")
            done.append(f"vm.nr_hugepages back to {data['nr_hugepages_before']}")
        except OSError:
            pass
    _record(state).unlink(missing_ok=True)
    return done
