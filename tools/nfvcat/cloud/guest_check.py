"""``nfvcat check`` of the running guests (whitebox-tempest-plugin's way): what the compute host runs, read over
host access (:class:`nfvcat.cloud.hostaccess.GuestAccess`), against what Nova recorded (the server's topology,
microversion 2.78) and the flavor.

Per server on a host the access reaches:
- ``guest vCPU pins``: the domain's ``<vcpupin>`` = Nova's CPU pinning;
- ``guest vCPU threads``: each vCPU's QEMU thread may run only on its pinned pCPU (``Cpus_allowed_list``);
- ``guest emulator threads``: every other QEMU thread only on the domain's ``<emulatorpin>`` pCPUs;
- ``guest huge pages``: the domain's page size = Nova's and the flavor's, and the QEMU process maps the flavor's
  memory on pages of that size;
- ``guest NUMA memory``: the domain's ``<numatune><memnode>`` = Nova's host node per guest cell.
A server the access cannot see gets no verdict from here (the placement check says what Nova recorded).
"""

from __future__ import annotations

from typing import Any

from nfvcat.catalog.units import SizeError, page_size_kib
from nfvcat.cloud.connect import call
from nfvcat.cloud.hostaccess import GuestAccess, GuestFacts, HostAccess
from nfvcat.cloud.stacks import servers_of
from nfvcat.cloud.verdicts import ADMIN, FAIL, PASS, Verdict

TOPOLOGY_MICROVERSION = "2.78"


def _set(cpus: set[int]) -> str:
    return ",".join(map(str, sorted(cpus))) or "-"


def check(conn: Any, stack_name: str, access: HostAccess | None) -> list[Verdict]:
    if not isinstance(access, GuestAccess):
        return []
    out: list[Verdict] = []
    for vnf, sid in servers_of(conn, stack_name):
        server = conn.compute.get_server(sid)
        facts = access.guest(sid, server.compute_host)
        if facts is None:
            continue
        topo = call(conn.compute, "GET", f"/servers/{sid}/topology", f"server {vnf} topology",
                    microversion=TOPOLOGY_MICROVERSION, ok=(200, 403, 404)) or {}
        out += server_verdicts(vnf, sid, facts, topo, dict(server.flavor or {}), access.name)
    return out


def server_verdicts(vnf: str, name: str, g: GuestFacts, topo: dict[str, Any], flavor: dict[str, Any],
                    source: str) -> list[Verdict]:
    """The verdicts of one running guest ``g`` against Nova's topology ``topo`` and the server's ``flavor``
    (as the server shows it, microversion 2.47+: extra_specs, ram)."""
    out = []

    def add(check: str, ok: bool | None, detail: str) -> None:
        out.append(Verdict(vnf, name, check, ADMIN if ok is None else PASS if ok else FAIL, f"{detail} ({source})"))

    nodes = topo.get("nodes") or []
    nova_pins = {int(k): int(v) for n in nodes for k, v in (n.get("cpu_pinning") or {}).items()}
    pins = g.domain.pinning
    if pins or nova_pins:
        if not nova_pins and nodes:
            add("guest vCPU pins", None, f"domain vcpupin {pins}; Nova's pinning needs admin")
        else:
            add("guest vCPU pins", pins == nova_pins, f"domain vcpupin {pins}, Nova {nova_pins}")
    if pins:
        wrong = {v: cpus for v, cpus in g.vcpu_threads.items() if cpus != {pins.get(v, -1)}}
        missing = sorted(set(pins) - set(g.vcpu_threads))
        detail = "; ".join([*(f"vCPU {v} thread on {_set(c)}, pinned to {pins.get(v)}" for v, c in wrong.items()),
                            *(f"no QEMU thread of vCPU {v}" for v in missing)])
        add("guest vCPU threads", not wrong and not missing,
            detail or f"{len(g.vcpu_threads)} vCPU thread(s) each on its pinned pCPU")
    if g.domain.emulator_pcpus is not None:
        emu = g.domain.emulator_pcpus
        wrong_emu = {t: cpus for t, cpus in g.other_threads.items() if cpus != emu}
        add("guest emulator threads", not wrong_emu,
            "; ".join(f"{t} on {_set(c)}" for t, c in wrong_emu.items()) +
            (f", emulatorpin {_set(emu)}" if wrong_emu else
             f"{len(g.other_threads)} thread(s) on emulatorpin {_set(emu)}"))
    specs = flavor.get("extra_specs") or {}
    want = specs.get("hw:mem_page_size")
    try:
        parsed = page_size_kib(want) if want else None
    except SizeError:
        parsed = None
    want_kb = parsed if isinstance(parsed, int) else None
    nova_kb = topo.get("pagesize_kb")
    if want_kb or g.page_size_kb or nova_kb:
        ram = int(flavor.get("ram") or 0)
        ok = (g.page_size_kb == nova_kb and (want_kb is None or g.page_size_kb == want_kb)
              and g.huge_mb >= ram)
        add("guest huge pages", ok, f"domain pages {g.page_size_kb} KiB, Nova {nova_kb} KiB, flavor {want}; "
            f"QEMU maps {g.huge_mb} MiB on huge pages of the flavor's {ram} MiB")
    if nodes and all("host_node" in n for n in nodes):
        nova_nodes = {i: {int(n["host_node"])} for i, n in enumerate(nodes)}
        add("guest NUMA memory", g.memnodes == nova_nodes,
            f"domain memnode {({k: _set(v) for k, v in g.memnodes.items()})}, "
            f"Nova {({k: _set(v) for k, v in nova_nodes.items()})}")
    return out
