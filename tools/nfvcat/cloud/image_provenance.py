"""What a deployed server boots from, read back from the provenance onboarding leaves on each Glance image
(``onboarding.provenance``: ``nfvcat_source``, ``nfvcat_lock_sha256``, ``nfvcat_sha256``, ``nfvcat_differs``):

- ``catalog``: the catalog's image, the file whose sha256 its committed lock names;
- ``rebuild``: a local rebuild made when Debian's mirror no longer served the lock's packages, verified against
  its own build record; the packages that differ from the lock are named;
- ``unknown``: an image without nfvcat's provenance (uploaded by other means), one whose provenance does not
  hold together, one Glance does not show, or a server that boots from a volume. Never taken for the catalog's.

Read with one Nova call per server (``Checker.server`` has its record already) and one Glance call per image,
each with the deadline the connection carries (``connect.call``). ``nfvcat list`` shows it per stack or VNF
instance, ``nfvcat check`` gives a verdict per server: ``pass`` for the catalog's image, ``local rebuild``
(which passes, and says so) for a rebuild, ``unknown`` otherwise."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from nfvcat.cloud.connect import call
from nfvcat.cloud.verdicts import PASS
from nfvcat.cloud.verdicts import REBUILD as REBUILT
from nfvcat.cloud.verdicts import UNKNOWN as NOT_KNOWN

CATALOG, REBUILD, UNKNOWN = "catalog", "rebuild", "unknown"
CHECK = "image provenance"
_MORE = re.compile(r"^and (\d+) more$")


@dataclass
class Provenance:
    """One Glance image as its provenance properties say (``kind`` catalog, rebuild or unknown)."""
    id: str  # the Glance image id ("" for a server that boots from a volume)
    name: str  # its Glance name ("" when Glance does not show it)
    kind: str
    why: str = ""  # for unknown: why it is not known
    entry: str = ""  # images/NAME
    version: str = ""
    lock_sha256: str = ""  # the committed lock's
    sha256: str = ""  # the one uploaded
    differs: list[str] = field(default_factory=list)  # the packages that differ from the lock, as Glance holds them
    differ_count: int = 0  # how many packages in all (a long list is cut to Glance's 255 characters)
    more: int = 0  # the changes the cut list leaves out ("; and N more")

    @property
    def label(self) -> str:
        """``catalog``, ``rebuild (N packages differ)`` or ``unknown``, as ``nfvcat list`` shows it."""
        if self.kind == REBUILD:
            one = self.differ_count == 1
            return f"rebuild ({self.differ_count} package{'' if one else 's'} differ{'s' if one else ''})"
        return self.kind

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"image": self.name or None, "id": self.id or None, "provenance": self.kind}
        if self.kind == UNKNOWN:
            out["why"] = self.why
        else:
            out.update(entry=self.entry, version=self.version, lock_sha256=self.lock_sha256, sha256=self.sha256)
        if self.kind == REBUILD:
            out.update(differs=self.differ_count, packages=self.differs)
        return out


def differing(value: str) -> tuple[list[str], int, int]:
    """The changes ``nfvcat_differs`` lists (``a -> b; c -> d; and 3 more``, ``none``), how many packages
    differ in all (a change of builder is no package) and how many changes the list leaves out."""
    items = [i.strip() for i in value.split("; ") if i.strip() and i.strip() != "none"]
    more = 0
    if items and (m := _MORE.match(items[-1])):
        more = int(m.group(1))
        items = items[:-1]
    return items, sum(not i.startswith(("builder ", "recipe ")) for i in items) + more, more


def of_image(image: dict[str, Any]) -> Provenance:
    """The provenance of a Glance image record (v2: properties at the top level)."""
    iid, name = str(image.get("id") or ""), str(image.get("name") or "")
    source = str(image.get("nfvcat_source") or "")
    lock_sha, sha = (str(image.get(k) or "").lower() for k in ("nfvcat_lock_sha256", "nfvcat_sha256"))
    if not source:
        return Provenance(iid, name, UNKNOWN, "no nfvcat provenance in its Glance properties")
    if not lock_sha or not sha:
        return Provenance(iid, name, UNKNOWN, f"its provenance says {source} but names no "
                          f"{'nfvcat_lock_sha256' if not lock_sha else 'nfvcat_sha256'}")
    entry, version = str(image.get("nfvcat_entry") or ""), str(image.get("nfvcat_version") or "")
    if source == CATALOG:
        if sha != lock_sha:
            return Provenance(iid, name, UNKNOWN, f"its provenance says catalog, but the sha256 uploaded ({sha}) is "
                              f"not the lock's ({lock_sha})")
        return Provenance(iid, name, CATALOG, "", entry, version, lock_sha, sha)
    if source == REBUILD:
        items, count, more = differing(str(image.get("nfvcat_differs") or ""))
        return Provenance(iid, name, REBUILD, "", entry, version, lock_sha, sha, items, count, more)
    return Provenance(iid, name, UNKNOWN, f"nfvcat_source {source!r} is neither catalog nor rebuild")


def image_id(server: dict[str, Any]) -> str:
    """The Glance image a Nova server record boots from ("" for a server booted from a volume)."""
    image = server.get("image")
    return str(image.get("id") or "") if isinstance(image, dict) else ""


class Images:
    """Glance images by id, each asked for once (a listing or a check shares them between servers)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self._seen: dict[str, Provenance] = {}

    def of_server(self, server: dict[str, Any]) -> Provenance:
        iid = image_id(server)
        if not iid:
            return Provenance("", "", UNKNOWN, "it boots from a volume (no Glance image in its record)")
        if iid not in self._seen:
            body = call(self.conn.image, "GET", f"/images/{iid}", f"image {iid}", ok=(200, 403, 404))
            self._seen[iid] = of_image(body) if body and "id" in body else Provenance(
                iid, "", UNKNOWN, "Glance does not show this image (deleted, or not visible to this project)")
        return self._seen[iid]

    def of_servers(self, server_ids: list[str]) -> list[tuple[str, Provenance]]:
        """(server id, provenance of its image) for each server (a server Nova no longer knows: unknown)."""
        out = []
        for sid in server_ids:
            srv = call(self.conn.compute, "GET", f"/servers/{sid}", f"server {sid}", ok=(200, 404))
            if srv is None or "server" not in srv:
                out.append((sid, Provenance("", "", UNKNOWN, f"Nova does not know server {sid}")))
            else:
                out.append((sid, self.of_server(srv["server"])))
        return out


def summary(found: list[tuple[str, Provenance]]) -> list[dict[str, Any]]:
    """One row per image the servers boot from (first seen first), with how many servers boot it."""
    rows: dict[str, dict[str, Any]] = {}
    for sid, p in found:
        key = p.id or f"{p.kind}:{p.why}"
        row = rows.setdefault(key, {**p.as_dict(), "servers": []})
        row["servers"].append(sid)
        row["label"] = f"{p.name or p.id or '-'} {p.label}"
    return list(rows.values())


def verdict(images: Images, server: dict[str, Any]) -> tuple[str, str, str]:
    """(check, status, detail) of a server's image: catalog passes, a local rebuild passes and says so
    (verdicts.REBUILD) with the packages that differ, anything else is unknown."""
    p = images.of_server(server)
    what = f"{p.name or p.id} ({p.entry} {p.version})" if p.kind != UNKNOWN else (p.name or p.id or "(volume)")
    if p.kind == CATALOG:
        return CHECK, PASS, f"{what}: the catalog's image, sha256 {p.sha256} (its lock's)"
    if p.kind == REBUILD:
        shown = "; ".join(p.differs) + (f"; and {p.more} more" if p.more else "")
        return CHECK, REBUILT, (f"{what}: a local rebuild, sha256 {p.sha256} (the lock's {p.lock_sha256}), "
                                f"{p.differ_count} package(s) differ from the lock: {shown or 'none named'}")
    return CHECK, NOT_KNOWN, f"{what}: provenance unknown: {p.why}"
