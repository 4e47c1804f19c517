"""E0011: host inventory does not match its schema."""

from __future__ import annotations

from collections.abc import Iterator

from nfvcat.core.documents import Document
from nfvcat.core.errors import UserError
from nfvcat.core.findings import RawFinding
from nfvcat.validation.rules.base import Context, Rule


class InventoryInvalid(Rule):
    id = "E0011"
    shortdesc = "Host inventory does not match its schema"
    description = ("A host inventory (kind: nfvcat/inventory), the file `nfvcat plan` places onto and the dev "
                   "cloud's simulated hypervisor reports, is checked against the JSON Schema shipped in the "
                   "package (nfvcat/data/schemas/inventory.schema.json) and then loaded as the planner would: CPU "
                   "sets, NUMA cells, huge pages, PCI devices and unique host names.")
    source_url = "https://docs.openstack.org/nova/latest/admin/cpu-topologies.html"
    kinds = ("inventory",)

    def check(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        import jsonschema

        from nfvcat.catalog import inventory

        errors = list(jsonschema.Draft202012Validator(inventory.schema()).iter_errors(doc.data))
        for err in errors:
            yield self.finding(tuple(err.absolute_path), f"inventory: {err.message}")
        if not errors:
            try:
                inventory.from_data(doc.data, doc.path)
            except UserError as exc:
                yield self.finding((), str(exc).removeprefix(f"{doc.path}: "))
