"""E0012: placement request cannot be read."""

from __future__ import annotations

from collections.abc import Iterator

from nfvcat import catalog
from nfvcat.core.documents import Document
from nfvcat.core.errors import UserError
from nfvcat.core.findings import RawFinding
from nfvcat.validation.rules.base import Context, Rule


class PlacementRequestInvalid(Rule):
    id = "E0012"
    shortdesc = "Placement request cannot be read"
    description = ("A placement request (kind: nfvcat/placement-request) for `nfvcat plan`: each VNF needs a "
                   "flavor (inline, or a catalog flavor by directory or Nova name), ports with vnic types and "
                   "physnets, a positive count, and server groups that exist with a known policy.")
    source_url = "https://docs.openstack.org/nova/latest/admin/cpu-topologies.html"
    kinds = ("placement-request",)

    def check(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        from nfvcat.plan import request

        root = catalog.find_root()
        dirs = [str(root / "flavors")] if root is not None else []
        try:
            request.load(doc.abspath, dirs)
        except UserError as exc:
            yield self.finding((), str(exc).removeprefix(f"{doc.abspath}: "))
