"""What nfvcat deployed, and from which catalog entry version (the marks of ``cloud.marks``), with the newest
version the catalog offers."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from nfvcat.catalog import history
from nfvcat.catalog.versions import parse_version
from nfvcat.cloud.connect import call
from nfvcat.cloud.marks import METADATA_KEY, parse_mark
from nfvcat.cloud.tacker_lcm import LCM, Tacker, available
from nfvcat.core.errors import UserError


@dataclass
class Deployed:
    via: str  # heat | tacker
    name: str  # the stack's or VNF instance's name
    id: str
    entry: str
    version: str
    status: str
    newest: str | None = None
    outdated: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def stacks(conn: Any) -> list[Deployed]:
    """The project's stacks that carry an nfvcat mark (Heat's stack list holds each stack's tags)."""
    body = call(conn.orchestration, "GET", "/stacks", "stack list")
    out = []
    for s in body.get("stacks", []):
        found = parse_mark(s.get("tags"), str(s.get("stack_status") or ""))
        if found:
            out.append(Deployed("heat", str(s["stack_name"]), str(s["id"]), found[0], found[1],
                                str(s.get("stack_status"))))
    return out


def vnf_instances(conn: Any) -> list[Deployed]:
    """The VNF instances Tacker holds with an nfvcat mark in their metadata (none when the cloud has no Tacker)."""
    if not available(conn):
        return []
    tk = Tacker(conn, lambda _: None)
    # Tacker's v2 list leaves metadata out unless asked for (SOL013 attribute selector, default exclude)
    resp = tk.request("GET", f"{LCM}/vnf_instances", "VNF instance list", params={"fields": "metadata"})
    out = []
    for inst in resp.json():
        found = parse_mark([(inst.get("metadata") or {}).get(METADATA_KEY, "")])
        if found:
            out.append(Deployed("tacker", str(inst.get("vnfInstanceName")), str(inst["id"]), found[0], found[1],
                                str(inst.get("instantiationState"))))
    return out


def listing(conn: Any, root: Path, tacker: bool = True) -> list[Deployed]:
    """Every marked stack and VNF instance, with the newest version the catalog at ``root`` offers for its
    entry (``outdated`` when that is higher than the deployed one)."""
    rows = stacks(conn) + (vnf_instances(conn) if tacker else [])
    for row in rows:
        try:
            row.newest = history.newest(root, row.entry, "heat" if row.via == "heat" else "vnfd")
        except UserError:
            row.newest = None  # an entry this catalog does not hold
        have, new = parse_version(row.version), parse_version(row.newest)
        row.outdated = bool(have and new and new > have)
    return sorted(rows, key=lambda r: (r.via, r.name))
