"""cloud-init engine: cloud-init's own JSON Schema (schema-cloud-config-v1.json, draft-04), checked
with jsonschema as ``cloud-init schema`` does. Runs in the main process: it is a few milliseconds.

The schema comes from Debian's cloud-init package, unpacked by tools/setup.sh into the venv (it is not
on PyPI); NFVCAT_CLOUD_INIT_SCHEMA overrides the path, and an installed cloud-init is used last.
"""

from __future__ import annotations

import json
import os
import sys
from functools import cache
from pathlib import Path
from typing import Any

ENGINE = "cloud-init"
SCHEMA_NAME = "schema-cloud-config-v1.json"


def schema_path() -> Path | None:
    override = os.environ.get("NFVCAT_CLOUD_INIT_SCHEMA")
    if override:
        return Path(override) if os.path.isfile(override) else None
    candidates = [os.path.join(sys.prefix, "share", "nfvcat", "cloud-init", SCHEMA_NAME),
                  f"/usr/lib/python3/dist-packages/cloudinit/config/schemas/{SCHEMA_NAME}"]
    for c in candidates:
        if c and os.path.isfile(c):
            return Path(c)
    return None


def version() -> str:
    path = schema_path()
    if path is None:
        return "missing"
    stamp = path.with_name("VERSION")
    return stamp.read_text().strip() if stamp.exists() else path.stat().st_mtime_ns.__str__()


@cache
def _validator() -> Any:
    import jsonschema

    path = schema_path()
    if path is None:
        raise FileNotFoundError(
            f"cloud-init's {SCHEMA_NAME} not found: run tools/setup.sh or set NFVCAT_CLOUD_INIT_SCHEMA")
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
