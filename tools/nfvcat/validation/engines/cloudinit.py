"""cloud-init engine: cloud-init's own JSON Schema (schema-cloud-config-v1.json, draft-04), checked
with jsonschema as ``cloud-init schema`` does. Runs in the main process: it is a few milliseconds.

The schema comes from Debian's cloud-init package (it is not on PyPI), pinned by version and sha256 and
fetched on first use: see nfvcat.validation.cloudinit_schema for where it is looked for.
"""

from __future__ import annotations

import datetime
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from nfvcat.core import spelling
from nfvcat.validation import cloudinit_schema

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


def _specific(err: Any) -> Any:
    """For a oneOf/anyOf error, the branch error about the instance's own shape (not "is not of type"):
    for a user given as a mapping, the mapping branch's complaint."""
    while err.context:
        # a branch's complaint about an item or key inside the value (a list item of the wrong type) is where
        # the problem is; at the value itself, "is not of type" only says that branch is another shape
        deeper = [c for c in err.context if len(c.absolute_path) > len(err.absolute_path)]
        branches = deeper or [c for c in err.context if c.validator != "type"]
        if not branches:
            break
        err = max(branches, key=lambda c: len(c.absolute_path))  # the first of the deepest
    return err


def _unexpected(err: Any) -> list[str]:
    """The keys an additionalProperties error is about, in the instance's order."""
    if err.validator != "additionalProperties" or not isinstance(err.instance, dict):
        return []
    known = err.schema.get("properties", {}) if isinstance(err.schema, dict) else {}
    patterns = err.schema.get("patternProperties", {}) if isinstance(err.schema, dict) else {}
    return [k for k in err.instance if k not in known and not any(re.search(p, str(k)) for p in patterns)]


def check(data: Any) -> list[tuple[list[Any], str]]:
    """(key path, cloud-init's message) for every schema error in a cloud-config mapping. The path is
    the offending key: an unexpected key itself, inside the branch of a oneOf that fits the value."""
    if data is None:
        data = {}
    errors = sorted(_validator().iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    out: list[tuple[list[Any], str]] = []
    for err in errors:
        where = ".".join(str(p) for p in err.absolute_path) or "<top>"
        message = f"{where}: {err.message}"
        inner = _specific(err)
        if inner is not err:
            message += f" ({inner.message})"
        if isinstance(inner.instance, (datetime.date, datetime.time)):
            message += (" (an unquoted date or time: YAML, and cloud-init with it, reads it as a date, not a "
                        "string; quote it)")
        path = list(inner.absolute_path)
        extra = _unexpected(inner)
        if extra:
            path.append(extra[0])
            known = inner.schema.get("properties", {})
            hints = [f"'{k}': did you mean '{m}'?" for k in extra if (m := spelling.closest(str(k), known))]
            if hints:
                message += f"; {'; '.join(hints)}"
        out.append((path, message))
    return out


# cc_write_files.canonicalize_extraction: an encoding's decoding steps, in order
_EXTRACTIONS = {"gz": ("gzip",), "gzip": ("gzip",), "gz+base64": ("base64", "gzip"), "gzip+base64": ("base64", "gzip"),
                "gz+b64": ("base64", "gzip"), "gzip+b64": ("base64", "gzip"), "b64": ("base64",),
                "base64": ("base64",)}


# cc_ntp (22.4.2): the clients it has a configuration for (NTP_CLIENT_CONFIG; DISTRO_CLIENT_CONFIG only
# overrides these per distribution), and what supplemental_schema_validation requires of a client's
# configuration once the user's ntp.config is merged over the client's own (an unknown client has none).
NTP_CLIENTS = frozenset({"auto", "chrony", "ntp", "ntpdate", "openntpd", "systemd-timesyncd"})
NTP_REQUIRED = ("check_exe", "confpath", "packages", "service_name")


def _ntp_errors(data: Any) -> list[tuple[list[Any], str]]:
    """cc_ntp.select_ntp_client gives a client it does not know an empty configuration: unless ntp.config
    gives every key supplemental_schema_validation requires, the module raises at boot and NTP is not set up."""
    ntp = data.get("ntp") if isinstance(data, dict) else None
    if not isinstance(ntp, dict):
        return []
    client = ntp.get("ntp_client")
    if not isinstance(client, str) or not client or client in NTP_CLIENTS or ntp.get("enabled") is False:
        return []
    config = ntp["config"] if isinstance(ntp.get("config"), dict) else {}
    missing = [k for k in NTP_REQUIRED if k not in config]
    if not missing and (config.get("template") or config.get("template_name")):
        return []  # a client of the user's own, fully described
    what = (f"Missing required ntp:config keys: {', '.join(missing)}" if missing else
            "Either ntp:config:template or ntp:config:template_name values are required")
    near = spelling.closest(client, NTP_CLIENTS - {"auto"})
    return [(["ntp", "ntp_client"], f"ntp.ntp_client: cc_ntp knows no client '{client}' (it knows "
             f"{', '.join(sorted(NTP_CLIENTS))}{f'; did you mean {near!r}?' if near else ''}) and ntp.config does "
             f"not describe one: the module fails at boot (Invalid ntp configuration: {what}) and NTP is not "
             "configured")]


def module_errors(data: Any) -> list[tuple[list[Any], str]]:
    """(key path, message) for what cloud-init's modules refuse where its schema does not: cc_write_files
    decodes each item's content as its encoding says (base64.b64decode, then util.decomp_gzip that raises);
    content that does not decode fails the module, and no file after it is written. cc_ntp refuses a client it
    does not know (``_ntp_errors``)."""
    import base64
    import binascii
    import gzip
    import zlib

    items = data.get("write_files") if isinstance(data, dict) else None
    out: list[tuple[list[Any], str]] = _ntp_errors(data)
    for i, item in enumerate(items if isinstance(items, list) else []):
        if not isinstance(item, dict) or item.get("defer") is True or not isinstance(item.get("encoding"), str):
            continue
        steps = _EXTRACTIONS.get(item["encoding"].lower().strip(), ())
        content: Any = item.get("content", "")
        if not isinstance(content, (str, bytes)):
            continue  # the schema's
        try:
            for step in steps:
                raw = content.encode("utf-8") if isinstance(content, str) else content
                content = base64.b64decode(raw) if step == "base64" else gzip.decompress(raw)
        except (binascii.Error, ValueError, OSError, EOFError, zlib.error) as exc:
            out.append((["write_files", i, "content"],
                        f"write_files.{i}.content: cc_write_files cannot decode it as {item['encoding']} ({exc}): "
                        "the module fails at boot and writes no file after this one"))
    return out


# Top-level keys cloud-init reads that its schema does not describe: merging, the datasource and system
# configuration (cloud.cfg), and the legacy apt keys cc_apt_configure still converts.
NOT_IN_SCHEMA = frozenset({
    "merge_how", "merge_type", "datasource", "datasource_list", "system_info", "output", "log_cfgs",
    "network", "manual_cache_clean", "apt_sources", "apt_mirror", "apt_mirror_search",
    "apt_mirror_search_dns", "apt_proxy", "apt_http_proxy", "apt_ftp_proxy", "apt_https_proxy",
    "apt_preserve_sources_list", "apt_custom_sources_list", "add_apt_repo_match", "debconf_selections",
    "launch-index",
})


@cache
def known_keys() -> frozenset[str]:
    """The top-level keys of cloud-init's schema: the properties of every module's definition."""
    path = cloudinit_schema.locate().path
    schema = json.loads(path.read_text())
    defs = schema.get("$defs") or schema.get("definitions") or {}

    def keys(node: Any, depth: int = 0) -> set[str]:
        if not isinstance(node, dict) or depth > 5:
            return set()
        found = set(node.get("properties", {}))
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            found |= keys(defs.get(ref.rsplit("/", 1)[-1]), depth + 1)
        for combo in ("allOf", "anyOf", "oneOf"):
            for sub in node.get(combo, []):
                found |= keys(sub, depth + 1)
        return found

    return frozenset(keys(schema)) | NOT_IN_SCHEMA


def unknown_keys(data: Any) -> list[tuple[str, str]]:
    """(key, the known key it most likely misspells) for top-level keys cloud-init ignores silently."""
    if not isinstance(data, dict):
        return []
    known = known_keys()
    out = []
    for key in data:
        if isinstance(key, str) and key not in known:
            match = spelling.closest(key, known)
            if match:
                out.append((key, match))
    return out
