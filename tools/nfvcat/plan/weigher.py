"""Host order, after Nova's RAMWeigher, CPUWeigher and PCIWeigher.

weight = m * free RAM share + m * free CPU share (VCPU + PCPU) + PCI term, with m = 1.0 for ``spread``
and -1.0 for ``pack``; the PCI term is PCIWeigher's ``(100 - min(free devices, 99)) / 100`` (keeps hosts
with free PCI devices for instances that need them). Nova normalises each weigher over the candidate hosts
of one request; here each host's share of its own capacity is used instead, so the order of hosts does not
depend on the request and can be kept sorted as hosts fill up. Ties go to the host listed first.
"""

from __future__ import annotations

from nfvcat.plan.hoststate import HostState

STRATEGIES = ("spread", "pack")
MAX_DEVS = 100
DESCRIPTION = {
    "spread": "spread: most free RAM and CPU first (RAMWeigher, CPUWeigher multiplier 1.0; PCIWeigher 1.0)",
    "pack": "pack: least free RAM and CPU first (RAMWeigher, CPUWeigher multiplier -1.0; PCIWeigher 1.0)",
}


def weight(hs: HostState, strategy: str) -> float:
    m = 1.0 if strategy == "spread" else -1.0
    mem = (hs.mem_total - hs.mem_used) / hs.mem_total if hs.mem_total > 0 else 0.0
    cpu_total = hs.vcpu_total + hs.pcpu_total
    cpu = ((hs.vcpu_total - hs.vcpu_used) + (hs.pcpu_total - hs.pcpu_used)) / cpu_total if cpu_total else 0.0
    pci = (MAX_DEVS - min(hs.pci_free(), MAX_DEVS - 1)) / MAX_DEVS
    return round(m * mem + m * cpu + pci, 9)


def sort_key(hs: HostState, strategy: str) -> tuple[float, int]:
    return (-weight(hs, strategy), hs.index)
