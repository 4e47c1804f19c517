"""The plan drawing of a chain: where ``nfvcat plan`` puts each VNF on the reference inventory, drawn from the plan
document (nfvcat.plan.document: ``plan --format json``'s, with each VNF's flavor figures and the NUMA cells of the
hosts used). One frame per host that takes a VNF, one column per NUMA cell in it; in a cell, each VNF placed there
(its pinned CPUs, memory and page size) and each VF or PCI device it got, on the cell the device sits on; a VNF
that fits no host is drawn below the hosts, with plan's reason. An inline SVG (no script, nothing loaded)."""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from typing import Any

from nfvcat.catalog.inventory import cpu_spec

WIDTH, PAD, LINE, HOST_HEAD, CELL_HEAD = 1000, 14, 17, 30, 40
FONT = 'font-family="system-ui,sans-serif"'


def cpus(ids: list[int]) -> str:
    """CPU ids as ranges (2-5,60-61), in Nova's syntax."""
    return cpu_spec(ids)


def device_label(dev: dict[str, Any], aliases: list[dict[str, Any]]) -> str:
    """What a PCI device of a placement is: an SR-IOV VF of a physnet, or the PCI alias whose vendor and product
    it has (``qat-vf``), else its vendor:product."""
    kind = "VF" if dev.get("dev_type") == "type-VF" else "PF" if dev.get("dev_type") == "type-PF" else "device"
    if dev.get("physical_network"):
        return f"SR-IOV {kind} {dev.get('address')} on {dev['physical_network']}"
    vendor, _, product = str(dev.get("vendor_product", "")).partition(":")
    alias = next((a.get("name") for a in aliases
                  if str(a.get("vendor_id")) == vendor and str(a.get("product_id")) == product), None)
    return f"PCI {kind} {dev.get('address')} ({'alias ' + str(alias) if alias else dev.get('vendor_product')})"


@dataclass
class Item:
    lines: list[tuple[str, str]]  # (css class, text); class "vnf" names the VNF
    colour: str


@dataclass
class Cell:
    head: list[str]
    items: list[Item] = field(default_factory=list)


def _cell_head(c: dict[str, Any]) -> list[str]:
    pages = ", ".join(f"{p['total']} x {p['size']}" + (f" ({p['reserved']} reserved)" if p["reserved"] else "")
                      for p in c.get("hugepages") or [])
    return [f"NUMA cell {c['id']}" + (f" (socket {c['socket']})" if c.get("socket") is not None else ""),
            f"{c['dedicated_cpus']} dedicated + {c['shared_cpus']} shared CPUs, {c['memory_mb'] // 1024} GiB"
            + (f", huge pages {pages}" if pages else "")]


FLOATING = -1  # the column of what no NUMA cell holds


def _other(cid: int) -> Cell:
    if cid == FLOATING:
        return Cell(["no NUMA cell", "no NUMA topology: bound to no cell of the host"])
    return Cell([f"NUMA cell {cid}"])


def layout(doc: dict[str, Any]) -> dict[str, dict[int, Cell]]:
    """Per host used, per NUMA cell: what the plan puts there."""
    hosts: dict[str, dict[int, Cell]] = {}
    for name, host in (doc.get("host_cells") or {}).items():
        hosts[name] = {c["id"]: Cell(_cell_head(c)) for c in host["cells"]}
    vnfs, aliases = doc.get("vnfs") or {}, doc.get("pci_alias") or []
    for p in doc.get("placements") or []:
        cells = hosts.setdefault(p["host"], {})
        flavor = vnfs.get(p["vnf"], {})
        where = p["numa_cells"] or [FLOATING]  # no NUMA topology: Nova binds it to no cell
        pinned = (f"{len(p['pinned_cpus'])} pinned CPUs {cpus(p['pinned_cpus'])}" if p["pinned_cpus"]
                  else f"{flavor.get('vcpus', '?')} shared vCPUs")
        memory = f"{flavor.get('ram_mb', '?')} MiB" + (f" on {p['page_size']} pages" if p["page_size"] != "-" else "")
        lines = [("vnf", p["instance"]), ("", f"flavor {flavor.get('flavor', '?')}"), ("", f"{pinned}, {memory}")]
        if p.get("emulator_cpus"):
            lines.append(("", f"emulator threads on CPUs {cpus(p['emulator_cpus'])}"))
        if len(where) > 1:
            lines.append(("", f"spans NUMA cells {', '.join(map(str, where))}"))
        for cid in where[:1]:
            cells.setdefault(cid, _other(cid)).items.append(Item(lines, "#0f172a"))
        for dev in p.get("pci_devices") or []:
            cid = dev.get("numa_node")
            cid = cid if cid is not None else FLOATING
            target = cells.setdefault(cid, _other(cid))
            target.items.append(Item([("", f"{device_label(dev, aliases)} for {p['instance']}")],
                                     "#b45309"))
    return hosts


def svg(doc: dict[str, Any], title: str) -> str:
    """The plan as an SVG fragment (``role=img``, titled for screen readers)."""
    hosts = layout(doc)
    failures = doc.get("failures") or []
    out: list[str] = []
    y = PAD
    for host, cells in hosts.items():
        role = (doc.get("host_cells") or {}).get(host, {}).get("role", "")
        n = max(1, len(cells))
        cw = (WIDTH - 2 * PAD - (n - 1) * PAD - 2 * PAD) // n
        rows = max([sum(len(i.lines) for i in c.items) + len(c.items) for c in cells.values()] or [0])
        height = HOST_HEAD + CELL_HEAD + rows * LINE + 2 * PAD
        out.append(f'<rect x="{PAD}" y="{y}" width="{WIDTH - 2 * PAD}" height="{height}" rx="6" fill="#f8fafc" '
                   'stroke="#0f172a" stroke-width="2"/>')
        out.append(f'<text x="{2 * PAD}" y="{y + 20}" font-size="15" font-weight="bold" fill="#0f172a">host '
                   f'{escape(host)}<tspan font-size="13" font-weight="normal" fill="#334155">'
                   f'{escape(f"  ({role} compute)" if role else "")}</tspan></text>')
        for k, (_cid, cell) in enumerate(sorted(cells.items(), key=lambda c: (c[0] == FLOATING, c[0]))):
            cx, cy = 2 * PAD + k * (cw + PAD), y + HOST_HEAD
            out.append(f'<rect x="{cx}" y="{cy}" width="{cw}" height="{height - HOST_HEAD - PAD}" fill="#fff" '
                       'stroke="#64748b" stroke-dasharray="5 3"/>')
            for j, text in enumerate(cell.head):
                weight = 'font-weight="bold" ' if j == 0 else ""
                out.append(f'<text x="{cx + 8}" y="{cy + 16 + j * 15}" font-size="{13 if j == 0 else 11}" '
                           f'{weight}fill="#334155">{escape(text)}</text>')
            ly = cy + CELL_HEAD + 6
            for item in cell.items:
                h = len(item.lines) * LINE + 6
                out.append(f'<rect x="{cx + 6}" y="{ly - 2}" width="{cw - 12}" height="{h}" rx="4" fill="none" '
                           f'stroke="{item.colour}" stroke-width="{2 if item.colour != "#0f172a" else 1.5}"/>')
                for j, (cls, text) in enumerate(item.lines):
                    attrs = 'font-weight="bold" class="vnf" ' if cls == "vnf" else ""
                    out.append(f'<text x="{cx + 12}" y="{ly + 13 + j * LINE}" font-size="{13 if cls else 12}" '
                               f'{attrs}fill="{item.colour}">{escape(text)}</text>')
                ly += h + LINE - 6
        y += height + PAD
    for f in failures:
        out.append(f'<rect x="{PAD}" y="{y}" width="{WIDTH - 2 * PAD}" height="{2 * LINE + 12}" rx="6" fill="#fef2f2" '
                   'stroke="#991b1b" stroke-width="2"/>')
        out.append(f'<text x="{2 * PAD}" y="{y + 20}" font-size="14" font-weight="bold" class="vnf" fill="#991b1b">'
                   f'{escape(f["instance"])}</text>')
        first = (f.get("summary") or [{}])[0]
        reason = f"does not fit on any host: {first.get('hosts', '?')} host(s): {first.get('message', '')}"
        out.append(f'<text x="{2 * PAD}" y="{y + 20 + LINE}" font-size="12" fill="#991b1b">'
                   f'{escape(reason[:150] + ("…" if len(reason) > 150 else ""))}</text>')
        y += 2 * LINE + 12 + PAD
    placed = len(doc.get("placements") or [])
    label = (f"{title}: {placed} instance(s) placed on {len(hosts)} host(s)"
             + (f", {len(failures)} that fit no host" if failures else ""))
    head = [f'<svg xmlns="http://www.w3.org/2000/svg" class="plan" viewBox="0 0 {WIDTH} {y}" width="{WIDTH}" '
            f'height="{y}" role="img" aria-label="{escape(label)}" {FONT}>', f"<title>{escape(label)}</title>"]
    return "\n".join([*head, *out, "</svg>"])
