"""check of a running guest (its libvirt domain and QEMU threads) against Nova's topology and the flavor."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from typing import Any

from nfvcat.cloud.guest_check import server_verdicts
from nfvcat.cloud.hostaccess import GuestFacts, guest_domain
from nfvcat_testbeds.devcloud import guests

DOMAIN = """<domain type='qemu'><name>instance-00000002</name><uuid>u</uuid>
  <memoryBacking><hugepages><page size='2048' unit='KiB' nodeset='0'/></hugepages></memoryBacking>
  <cputune><vcpupin vcpu='0' cpuset='1'/><emulatorpin cpuset='1'/></cputune>
  <numatune><memory mode='strict' nodeset='0'/><memnode cellid='0' mode='strict' nodeset='0'/></numatune>
</domain>"""
TOPOLOGY: dict[str, Any] = {"nodes": [{"vcpu_set": [0], "memory_mb": 1024, "host_node": 0, "cpu_pinning": {"0": 1}}],
            "pagesize_kb": 2048}
FLAVOR = {"ram": 1024, "extra_specs": {"hw:cpu_policy": "dedicated", "hw:mem_page_size": "2MB"}}


def facts(vcpu_cpus: set[int], huge: int = 1024) -> GuestFacts:
    domain, page, memnodes = guest_domain(ET.fromstring(DOMAIN))
    return GuestFacts(domain, page, memnodes, {0: vcpu_cpus}, {"qemu-system-x86/100": {1}, "call_rcu/101": {1}},
                      huge)


def verdicts(g: GuestFacts, topo: dict[str, Any] = TOPOLOGY) -> dict[str, str]:
    return {v.check: v.status for v in server_verdicts("vrouter", "s", g, topo, FLAVOR, "test")}


def test_a_guest_as_nova_recorded_it_passes() -> None:
    assert verdicts(facts({1})) == {"guest vCPU pins": "pass", "guest vCPU threads": "pass",
                                    "guest emulator threads": "pass", "guest huge pages": "pass",
                                    "guest NUMA memory": "pass"}


def test_a_vcpu_thread_repinned_by_taskset_fails_only_the_thread_check() -> None:
    got = verdicts(facts({0}))
    assert got["guest vCPU threads"] == "FAIL" and got["guest vCPU pins"] == "pass"
    detail = next(v.detail for v in server_verdicts("vrouter", "s", facts({0}), TOPOLOGY, FLAVOR, "t")
                  if v.check == "guest vCPU threads")
    assert "vCPU 0 thread on 0, pinned to 1" in detail


def test_memory_not_on_huge_pages_and_a_wrong_node_fail() -> None:
    assert verdicts(facts({1}, huge=0))["guest huge pages"] == "FAIL"
    moved = {**TOPOLOGY, "nodes": [{**TOPOLOGY["nodes"][0], "host_node": 1}]}
    assert verdicts(facts({1}), moved)["guest NUMA memory"] == "FAIL"
    no_admin = {**TOPOLOGY, "nodes": [{"vcpu_set": [0], "memory_mb": 1024}]}
    assert verdicts(facts({1}), no_admin)["guest vCPU pins"] == "needs admin"


def test_threads_and_huge_pages_of_a_real_process() -> None:
    mine = guests.threads(os.getpid())
    assert os.getpid() in mine and mine[os.getpid()][1] == os.sched_getaffinity(0)
    assert guests.huge_mb(os.getpid()) == 0
