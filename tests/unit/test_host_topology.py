"""A compute host's own topology (issue #43, item 2): libvirt's capabilities (``virsh capabilities``) and nova.conf's
CPU sets, as a host-access directory holds them, become the host's cells (thread siblings, huge pages per size and
cell); ``inventory collect`` writes them in place of its estimate and says which hosts it estimated."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from nfvcat.catalog import inventory
from nfvcat.cloud.hostaccess import HostCell, HostPages, LibvirtXml, capabilities_cells, inventory_cells, reader
from nfvcat.core.errors import UserError
from nfvcat.plan import collect


def cpu(i: int, socket: int, core: int, siblings: str) -> str:
    return f"<cpu id='{i}' socket_id='{socket}' die_id='0' core_id='{core}' siblings='{siblings}'/>"


# two sockets, 4 cores each with 2 threads (CPU n and n+8 are siblings): as `virsh capabilities` prints them
CAPS = f"""<capabilities><host><uuid>0</uuid><topology><cells num='2'>
  <cell id='0'><memory unit='KiB'>16777216</memory>
    <pages unit='KiB' size='4'>3670016</pages><pages unit='KiB' size='2048'>512</pages>
    <pages unit='KiB' size='1048576'>2</pages>
    <cpus num='8'>{''.join(cpu(c, 0, c, f'{c},{c + 8}') + cpu(c + 8, 0, c, f'{c},{c + 8}') for c in range(4))}</cpus>
  </cell>
  <cell id='1'><memory unit='KiB'>16777216</memory>
    <pages unit='KiB' size='4'>4194304</pages><pages unit='KiB' size='2048'>0</pages>
    <cpus num='8'>{''.join(cpu(c, 1, c, f'{c},{c + 8}') + cpu(c + 8, 1, c, f'{c},{c + 8}') for c in range(4, 8))}</cpus>
  </cell>
</cells></topology></host></capabilities>"""
NOVA_CONF = "[DEFAULT]\ndebug = true\n[compute]\ncpu_shared_set = 0,8\ncpu_dedicated_set = 1-7,9-15\n"


def test_capabilities_give_cells_siblings_and_huge_pages() -> None:
    cells = capabilities_cells(ET.fromstring(CAPS), set(range(1, 8)) | set(range(9, 16)), {0, 8}, "caps")
    assert [c.id for c in cells] == [0, 1] and [c.socket for c in cells] == [0, 1]
    assert cells[0].shared == {0, 8} and cells[0].dedicated == {1, 2, 3, 9, 10, 11}
    assert cells[1].shared == set() and cells[1].dedicated == {4, 5, 6, 7, 12, 13, 14, 15}
    assert cells[0].siblings == [{0, 8}, {1, 9}, {2, 10}, {3, 11}]
    assert cells[0].memory_mb == 16384
    assert cells[0].pages == [HostPages(2048, 512), HostPages(1048576, 2)]  # 4 KiB pages are not huge
    assert cells[1].pages == [HostPages(2048, 0)]


def test_host_access_directory_reads_capabilities_and_nova_conf(tmp_path: Path) -> None:
    access = LibvirtXml(tmp_path)
    assert access.cells("c1") is None  # nothing of c1: never a guess
    (tmp_path / "c1.capabilities.xml").write_text(CAPS)
    assert access.cells("c1") is None  # libvirt does not know the CPU sets: nova.conf does
    (tmp_path / "c1.nova.conf").write_text(NOVA_CONF)
    cells = access.cells("c1")
    assert cells is not None and cells[1].dedicated == {4, 5, 6, 7, 12, 13, 14, 15}
    (tmp_path / "c2.capabilities.xml").write_text(CAPS)  # legacy vcpu_pin_set: cpuset = pcpuset
    (tmp_path / "c2.nova.conf").write_text("[DEFAULT]\nvcpu_pin_set = 2-7\n")
    legacy = access.cells("c2")
    assert legacy is not None and legacy[0].dedicated == legacy[0].shared == {2, 3}
    (tmp_path / "c3.capabilities.xml").write_text("<capabilities><host/></capabilities>")
    (tmp_path / "c3.nova.conf").write_text(NOVA_CONF)
    with pytest.raises(UserError, match=r"c3\.capabilities\.xml: no <host><topology>"):
        access.cells("c3")
    (tmp_path / "c4.capabilities.xml").write_text("<capabilities")
    (tmp_path / "c4.nova.conf").write_text(NOVA_CONF)
    with pytest.raises(UserError, match=r"c4\.capabilities\.xml: not libvirt capabilities XML"):
        access.cells("c4")


HVS = [{"name": n, "host": n, "vcpus": 16, "memory_mb": 32768,
        "cpu_info": '{"topology": {"sockets": 2, "cores": 4, "threads": 2}}'} for n in ("c1", "c2")]
PLACEMENT = {n: {"traits": ["HW_CPU_HYPERTHREADING"], "inventories": {
    "VCPU": {"total": 2, "allocation_ratio": 4.0}, "PCPU": {"total": 14},
    "MEMORY_MB": {"total": 32768, "reserved": 0, "allocation_ratio": 1.0}}} for n in ("c1", "c2")}


def test_collect_writes_the_hosts_own_cells_and_names_the_estimated(tmp_path: Path) -> None:
    (tmp_path / "c1.capabilities.xml").write_text(CAPS)
    (tmp_path / "c1.nova.conf").write_text(NOVA_CONF)
    read = reader(LibvirtXml(tmp_path))
    assert read is not None and read("c2") is None
    measured = {"c1": got} if (got := read("c1")) else {}
    data = collect.build(HVS, PLACEMENT, [], measured)
    text = collect.header(data, measured) + yaml.safe_dump(data, sort_keys=False)
    inv = inventory.from_data(yaml.safe_load(text), "collected")
    c1, c2 = inv.hosts
    assert c1.cells[0].siblings == [{0, 8}, {1, 9}, {2, 10}, {3, 11}] and c1.cells[0].shared == {0, 8}
    assert [(p.size_kb, p.total) for p in c1.cells[0].hugepages] == [(2048, 512), (1048576, 2)]
    assert c2.cells[0].hugepages == []  # estimated: the APIs show no huge pages
    assert "# - host c1: NUMA cells, thread siblings, huge pages and pinned pCPUs read from the host's libvirt " \
        "capabilities and nova.conf" in text
    assert "# ESTIMATED, edit before use: host(s) c2\n" in text
    assert "1 of 2 hosts" in data["description"]


def test_inventory_cells_carry_novas_usage() -> None:
    cell = HostCell(0, {2, 3, 4, 5}, {0, 1}, [{0}, {1}, {2}, {3}, {4}, {5}], 4096, [HostPages(2048, 640, 512, 0)],
                    pinned={2}, socket=0)
    (raw,) = inventory_cells([cell])
    host = inventory.from_data({"kind": "nfvcat/inventory", "hosts": [{"name": "r", "numa_cells": [raw]}]}).hosts[0]
    assert host.cells[0].pinned == {2} and host.cells[0].hugepages[0].used == 512
