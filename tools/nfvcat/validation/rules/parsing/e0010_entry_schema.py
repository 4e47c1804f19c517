"""E0010: catalog entry metadata does not match its schema."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from nfvcat.catalog.entries import entry_validator, schema_of
from nfvcat.core.documents import Document
from nfvcat.core.findings import RawFinding
from nfvcat.validation.rules.base import Context, Rule


class EntrySchema(Rule):
    id = "E0010"
    shortdesc = "Catalog entry metadata does not match its schema"
    description = ("entry.yaml (name, semantic version, kind, description, deprecated, images with "
                   "checksums and Glance properties) is checked against the JSON Schema shipped in the "
                   "nfvcat package (nfvcat/data/schemas/entry.schema.json); a released version (NAME@VERSION) "
                   "against the schema it was released with, as it was valid then.")
    source_url = "https://semver.org/"
    kinds = ("entry",)

    def check(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        for err in entry_validator(schema_of(Path(doc.abspath).parent)).iter_errors(doc.data):
            yield self.finding(tuple(err.absolute_path), f"entry.yaml: {err.message}")
