from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from importlib import resources
from typing import Any

from nfvcat.documents import Document
from nfvcat.findings import RawFinding
from nfvcat.rules.base import Context, Rule


@cache
def entry_validator() -> Any:
    import jsonschema

    schema = json.loads(resources.files("nfvcat.schemas").joinpath("entry.schema.json").read_text())
    return jsonschema.Draft202012Validator(schema)


class EntrySchema(Rule):
    id = "E0010"
    shortdesc = "Catalog entry metadata does not match its schema"
    description = ("entry.yaml (name, semantic version, kind, description, deprecated, images with "
                   "checksums and Glance properties) is checked against the JSON Schema shipped in the "
                   "nfvcat package (nfvcat/schemas/entry.schema.json).")
    source_url = "https://semver.org/"
    kinds = ("entry",)

    def check(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        for err in entry_validator().iter_errors(doc.data):
            yield self.finding(tuple(err.absolute_path), f"entry.yaml: {err.message}")
