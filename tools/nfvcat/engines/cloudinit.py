"""cloud-init engine: cloud-init's own JSON Schema (schema-cloud-config-v1.json, draft-04), checked
with jsonschema as ``cloud-init schema`` does. Runs in the main process: it is a few milliseconds.

The schema comes from Debian's cloud-init package (it is not on PyPI), pinned by version and sha256 and
fetched on first use: see nfvcat.cloudinit_schema for where it is looked for.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from nfvcat import cloudinit_schema

ENGINE = "cloud-init"
SCHEMA_NAME = cloudinit_schema.SCHEMA_NAME


def schema_path() -> Path | None:
    """The schema if it is here without a download, else None."""
    try:
        found = cloudinit_schema.find()
    except cloudinit_schema.SchemaUnavailable:
        return None
    return found.path if found else None


def version() -> str:
    path = schema_path()
    if path is None:
        return "missing"
    stamp = path.with_name("VERSION")
    return stamp.read_text().strip() if stamp.exists() else path.stat().st_mtime_ns.__str__()


@cache
def _validator() -> Any:
    import jsonschema

    path = cloudinit_schema.locate().path  # SchemaUnavailable: one line, E0009 from the rule runner
    schema = json.loads(path.read_text())
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def check(data: Any) -> list[tuple[list[Any], str]]:
    """(key path, cloud-init's message) for every schema error in a cloud-config mapping."""
    if data is None:
        data = {}
    errors = sorted(_validator().iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    out: list[tuple[list[Any], str]] = []
    for err in errors:
        where = ".".join(str(p) for p in err.absolute_path) or "<top>"
        out.append((list(err.absolute_path), f"{where}: {err.message}"))
    return out
