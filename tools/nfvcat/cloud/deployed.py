"""What nfvcat deployed, and from which catalog entry version (the marks of ``cloud.marks``), with the newest
version the catalog offers and the images its servers boot from, each catalog, local rebuild or unknown
(``cloud.image_provenance``): Heat's resource list (nested stacks too) or Tacker's VNFC resources name the
servers, Nova each server's image, Glance each image's provenance (asked once per image)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from nfvcat.catalog import history
from nfvcat.catalog.versions import parse_version
from nfvcat.cloud.connect import call
from nfvcat.cloud.image_provenance import Images, summary
from nfvcat.cloud.marks import METADATA_KEY, parse_mark
from nfvcat.cloud.stacks import servers_of
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
    servers: list[str] = field(default_factory=list)  # the Nova servers it holds
    images: list[dict[str, Any]] = field(default_factory=list)  # image_provenance.summary of its servers

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        del out["servers"]  # named per image
        return out

    @property
    def images_text(self) -> str:
        """The images column for people: ``nfvcat-vrouter-1.1.2 rebuild (4 packages differ)``, comma separated."""
        return ", ".join(str(i["label"]) for i in self.images)


def stacks(conn: Any) -> list[Deployed]:
    """The project's stacks that carry an nfvcat mark (Heat's stack list holds each stack's tags)."""
    body = call(conn.orchestration, "GET", "/stacks", "stack list")
    out = []
    for s in body.get("stacks", []):
        found = parse_mark(s.get("tags"), str(s.get("stack_status") or ""))
        if found:
            out.append(Deployed("heat", str(s["stack_name"]), str(s["id"]), found[0], found[1],
                                str(s.get("stack_status"))))
    for row in out:
        row.servers = [sid for _, sid in servers_of(conn, f"{row.name}/{row.id}", missing_ok=True)]
    return out


def vnf_instances(conn: Any) -> list[Deployed]:
    """The VNF instances Tacker holds with an nfvcat mark in their metadata (none when the cloud has no Tacker)."""
    if not available(conn):
        return []
    tk = Tacker(conn, lambda _: None)
    # Tacker's v2 list leaves metadata and instantiatedVnfInfo out unless asked for (SOL013 attribute selector,
    # default exclude), and given ``fields`` it leaves out every optional attribute not named (vnfInstanceName)
    resp = tk.request("GET", f"{LCM}/vnf_instances", "VNF instance list",
                      params={"fields": "vnfInstanceName,metadata,instantiatedVnfInfo"})
    out = []
    for inst in resp.json():
        found = parse_mark([(inst.get("metadata") or {}).get(METADATA_KEY, "")])
        if found:
            row = Deployed("tacker", str(inst.get("vnfInstanceName")), str(inst["id"]), found[0], found[1],
                           str(inst.get("instantiationState")))
            info = inst.get("instantiatedVnfInfo") or {}
            row.servers = [str(r["computeResource"]["resourceId"]) for r in info.get("vnfcResourceInfo") or []
                           if (r.get("computeResource") or {}).get("resourceId")]
            out.append(row)
    return out


def listing(conn: Any, root: Path, tacker: bool = True) -> list[Deployed]:
    """Every marked stack and VNF instance, with the newest version the catalog at ``root`` offers for its
    entry (``outdated`` when that is higher than the deployed one)."""
    rows = stacks(conn) + (vnf_instances(conn) if tacker else [])
    images = Images(conn)
    for row in rows:
        row.images = summary(images.of_servers(row.servers))
        try:
            row.newest = history.newest(root, row.entry, "heat" if row.via == "heat" else "vnfd")
        except UserError:
            row.newest = None  # an entry this catalog does not hold
        have, new = parse_version(row.version), parse_version(row.newest)
        row.outdated = bool(have and new and new > have)
    return sorted(rows, key=lambda r: (r.via, r.name))
