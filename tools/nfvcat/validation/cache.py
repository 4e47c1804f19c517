"""A cache of engine results keyed by content and engine version, so an unchanged file is not re-run.

An entry is valid while every file the engine read (nested templates, get_file) still has the hash it
had: the key covers the job and the files named in it, ``deps`` covers what the engine discovered.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from functools import cache
from pathlib import Path
from typing import Any

from nfvcat.core import confine, filesig
from nfvcat.core.dirs import cache_base

ENGINE_PACKAGES = {
    "heat": ("openstack-heat", "python-heatclient"),
    "nova": ("nova", "neutron"),  # the Nova worker also runs Neutron's API checks (engines/nova_neutron.py)
    "tosca": ("tosca-parser", "tacker"),
}


def cache_dir() -> Path:
    return Path(cache_base())


# path -> (settled stat signature, sha256): an unchanged file is not read again (nfvcat.core.filesig says when a
# signature can be trusted); bounded, oldest out first
_HASHES: dict[str, tuple[filesig.Signature, str]] = {}
_HASHES_MAX = 4096


def file_hash(path: str) -> str | None:
    """sha256 of the file's content; None when it cannot be read."""
    key = os.path.abspath(path)
    try:
        signature = filesig.settled(os.stat(key))
        hit = _HASHES.get(key)
        if hit is not None and hit[0] == signature:
            return hit[1]
        digest = hashlib.sha256(confine.read_bytes(key, policy=confine.Policy(max_bytes=confine.current().max_bytes))
                                ).hexdigest()
    except OSError:  # confine.Refused among them: a FIFO, a device, too large
        return None
    _HASHES.pop(key, None)
    if signature is not None:
        _HASHES[key] = (signature, digest)
        if len(_HASHES) > _HASHES_MAX:
            with contextlib.suppress(KeyError, RuntimeError, StopIteration):  # another request's thread took it
                del _HASHES[next(iter(_HASHES))]
    return digest


@cache
def engine_version(engine: str) -> str:
    """Versions of the engine's packages plus a hash of nfvcat's own engine code."""
    from importlib import metadata  # here: the engine server's client does not need it

    parts = []
    for pkg in ENGINE_PACKAGES.get(engine, ()):
        try:
            parts.append(f"{pkg}={metadata.version(pkg)}")
        except metadata.PackageNotFoundError:
            parts.append(f"{pkg}=missing")
    here = Path(__file__).parent / "engines"
    code = hashlib.sha256()
    for p in [here / "worker.py", *sorted(here.glob(f"{engine}*.py"))]:  # the engine and its helper modules
        if p.exists():
            code.update(p.read_bytes())
    parts.append(code.hexdigest()[:16])
    return ";".join(parts)


def job_key(engine: str, job: dict[str, Any]) -> str:
    h = hashlib.sha256()
    h.update(json.dumps([engine, engine_version(engine), job], sort_keys=True, default=str).encode())
    for field in ("file", "environments"):
        value = job.get(field)
        for path in value if isinstance(value, list) else [value] if value else []:
            h.update((file_hash(path) or "missing").encode())
    return h.hexdigest()


def get(key: str) -> dict[str, Any] | None:
    path = cache_dir() / key[:2] / f"{key}.json"
    try:
        entry = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    for dep, digest in entry.get("deps", {}).items():
        if file_hash(dep) != digest:
            return None
    return entry if isinstance(entry, dict) else None


def put(key: str, result: dict[str, Any]) -> None:
    deps = {dep: file_hash(dep) for dep in result.get("deps") or {}}
    entry = {"findings": result.get("findings", []), "deps": deps}
    target = cache_dir() / key[:2]
    import tempfile  # here: the engine server's client only needs cache_dir

    try:
        target.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(entry, f)
        os.replace(tmp, target / f"{key}.json")
    except OSError:
        pass  # a read-only cache only costs time
