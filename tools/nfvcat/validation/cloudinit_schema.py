"""cloud-init's JSON Schema for a pip-installed nfvcat: the one mechanism tools/setup.sh uses too.

cloud-init is not on PyPI, so its schema comes from Debian's ``cloud-init`` package, pinned here by version
and sha256 (the sha256 of the .deb Debian's signed bookworm Packages index lists, checked against a real
download). The .deb is an ``ar`` archive holding ``data.tar.xz``; the schema JSONs are read from it in
Python (no dpkg) and kept with the verified .deb under the cache directory (``~/.cache/nfvcat/cloud-init/<version>/``).

Where the schema comes from, first found wins:

1. ``NFVCAT_CLOUD_INIT_SCHEMA``: a path the user gives is used as it is (a missing file is an error,
   never a silent fallback: the user asked for that file).
2. the venv's ``share/nfvcat/cloud-init/`` (tools/setup.sh fills it with ``fetch(into=...)``).
3. the cache: a previous fetch of the pinned version.
4. an installed cloud-init (``/usr/lib/python3/dist-packages/cloudinit``): the machine's own, offline.
5. a download of the pinned .deb: from ``NFVCAT_DEBIAN_MIRROR`` (space-separated Debian mirror URLs) when
   set, else Debian's pool and then snapshot.debian.org (which keeps every file Debian ever published, by
   sha1: the pool drops an old version after a point release). Whatever the source, the sha256 decides.

Unavailable (offline, a bad hash): one line saying what is missing and how to provide it; the rule that
needed it reports E0009 (exit 3).
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from nfvcat.validation.cache import cache_dir

SCHEMA_NAME = "schema-cloud-config-v1.json"
# The pin: Debian bookworm's cloud-init, as in bookworm's Packages index (Filename, Size, SHA256).
VERSION = "22.4.2-1+deb12u4"
FILENAME = "cloud-init_22.4.2-1+deb12u4_all.deb"
POOL_PATH = "pool/main/c/cloud-init/" + FILENAME
SIZE = 588824
SHA256 = "c18c9b1a999268413f215371ae6382f8705a437b2b24c049d6dbafcc111a1d09"
SHA1 = "88cb46e393c6be8a36662a5c3f2e66bb123833ef"  # snapshot.debian.org names files by sha1
DEFAULT_MIRRORS = ("http://deb.debian.org/debian",)
SNAPSHOT_URL = "https://snapshot.debian.org/file/" + SHA1
MEMBER_DIR = "usr/lib/python3/dist-packages/cloudinit/config/schemas/"
INSTALLED = Path("/usr/lib/python3/dist-packages/cloudinit/config/schemas")
TIMEOUT = float(os.environ.get("NFVCAT_FETCH_TIMEOUT", "30"))


class SchemaUnavailable(Exception):
    """cloud-init's schema could not be found or fetched; the message is one line for the user."""


@dataclass(frozen=True)
class Located:
    path: Path
    source: str  # where it came from, for ``nfvcat fetch-schema`` and the reports


def cached_dir() -> Path:
    return cache_dir() / "cloud-init" / VERSION


def venv_dir() -> Path:
    return Path(sys.prefix) / "share" / "nfvcat" / "cloud-init"


def urls() -> list[str]:
    mirrors = os.environ.get("NFVCAT_DEBIAN_MIRROR", "").split()
    out = [f"{m.rstrip('/')}/{POOL_PATH}" for m in (mirrors or DEFAULT_MIRRORS)]
    return out if mirrors else [*out, SNAPSHOT_URL]


def find() -> Located | None:
    """The schema without a download (sources 1 to 4), or None."""
    override = os.environ.get("NFVCAT_CLOUD_INIT_SCHEMA")
    if override:
        if not os.path.isfile(override):
            raise SchemaUnavailable(f"NFVCAT_CLOUD_INIT_SCHEMA={override}: no such file (it must be cloud-init's "
                                    f"{SCHEMA_NAME})")
        return Located(Path(override), "NFVCAT_CLOUD_INIT_SCHEMA")
    for directory, source in ((venv_dir(), "venv"), (cached_dir(), "cache"), (INSTALLED, "installed cloud-init")):
        if (directory / SCHEMA_NAME).is_file():
            return Located(directory / SCHEMA_NAME, source)
    return None


RETRY_AFTER = 300.0  # seconds a failure is remembered: one attempt per run, not forever in the engine server
_memo: dict[str, tuple[float, Located | SchemaUnavailable]] = {}


def locate(download: bool = True) -> Located:
    """The schema, fetched once per process at most; SchemaUnavailable when it cannot be had."""
    when, found = _memo.get("schema", (0.0, None))
    if found is None or (isinstance(found, SchemaUnavailable) and time.monotonic() - when > RETRY_AFTER):
        try:
            found = find() or (fetch() if download else None)
            if found is None:
                raise SchemaUnavailable(missing_message("no download attempted"))
        except SchemaUnavailable as exc:
            found = exc
        _memo["schema"] = (time.monotonic(), found)
    if isinstance(found, SchemaUnavailable):
        raise found
    return found


def missing_message(why: str) -> str:
    return (f"cloud-init's {SCHEMA_NAME} is missing (Debian cloud-init {VERSION}, sha256 {SHA256[:12]}...): "
            f"{why}; set NFVCAT_CLOUD_INIT_SCHEMA=path/to/{SCHEMA_NAME}, or NFVCAT_DEBIAN_MIRROR=<Debian mirror "
            f"URL>, or run `nfvcat fetch-schema` once with network access")


def fetch(into: Path | None = None, quiet: bool = False) -> Located:
    """Download the pinned .deb, verify it, unpack the schema JSONs into ``into`` (default: the cache)."""
    target = into or cached_dir()
    if _complete(target):
        return Located(target / SCHEMA_NAME, str(target))
    failures = []
    for url in urls():
        if not quiet:
            print(f"nfvcat: fetching cloud-init's schema: {url} ({SIZE // 1024} KiB)", file=sys.stderr)
        try:
            data = _download(url)
        except (OSError, ValueError) as exc:  # urllib's URLError is an OSError
            failures.append(f"{url}: {getattr(exc, 'reason', None) or exc}")
            continue
        import hashlib  # here and below: not imported by a plain validate, whose client only finds the schema

        digest = hashlib.sha256(data).hexdigest()
        if digest != SHA256:
            failures.append(f"{url}: sha256 {digest[:12]}... is not the pinned {SHA256[:12]}..., refused")
            continue
        _install({**extract(data), FILENAME: data}, target, url)
        return Located(target / SCHEMA_NAME, url)
    raise SchemaUnavailable(missing_message("; ".join(failures) or "no URL to fetch from"))


def _complete(target: Path) -> bool:
    stamp = target / "VERSION"
    return ((target / SCHEMA_NAME).is_file() and (target / FILENAME).is_file() and stamp.is_file()
            and stamp.read_text().strip() == VERSION)


def _download(url: str) -> bytes:
    import urllib.request

    with urllib.request.urlopen(url, timeout=TIMEOUT) as resp:
        data: bytes = resp.read(SIZE + 1)
    if len(data) > SIZE:
        raise ValueError(f"larger than the pinned {SIZE} bytes, refused")
    return data


def extract(deb: bytes) -> dict[str, bytes]:
    """The schema JSONs of a cloud-init .deb, by file name: ``ar`` archive -> data.tar.xz -> schemas/."""
    if not deb.startswith(b"!<arch>\n"):
        raise SchemaUnavailable(missing_message("the download is not a Debian package (no ar header)"))
    pos = 8
    while pos + 60 <= len(deb):
        header = deb[pos:pos + 60]
        name = header[:16].decode("ascii", "replace").strip().rstrip("/")
        size = int(header[48:58].decode("ascii").strip() or 0)
        body = deb[pos + 60:pos + 60 + size]
        pos += 60 + size + (size % 2)
        if not name.startswith("data.tar"):
            continue
        out: dict[str, bytes] = {}
        import io
        import tarfile

        with tarfile.open(fileobj=io.BytesIO(body), mode="r:*") as tar:
            for member in tar:
                member_name = member.name.removeprefix("./")
                if (member.isfile() and member_name.startswith(MEMBER_DIR) and member_name.endswith(".json")
                        and "/" not in member_name[len(MEMBER_DIR):]):
                    f = tar.extractfile(member)
                    if f is not None:
                        out[os.path.basename(member_name)] = f.read()
        if SCHEMA_NAME not in out:
            raise SchemaUnavailable(missing_message(f"the package has no {MEMBER_DIR}{SCHEMA_NAME}"))
        return out
    raise SchemaUnavailable(missing_message("the package has no data.tar member"))


def _install(files: dict[str, bytes], target: Path, source: str) -> None:
    """Write the JSONs, the verified .deb (a local mirror can serve it) and VERSION next to each other,
    all at once (a rename), never half."""
    for name, content in files.items():
        if name.endswith(".json"):
            json.loads(content)  # a schema that is not JSON is not installed
    target.parent.mkdir(parents=True, exist_ok=True)
    import shutil
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix=".cloud-init-", dir=target.parent))
    try:
        for name, content in files.items():
            (tmp / name).write_bytes(content)
        (tmp / "VERSION").write_text(VERSION + "\n")
        (tmp / "SOURCE").write_text(f"{source}\nsha256 {SHA256}\n")
        if target.exists() and not _complete(target):
            shutil.rmtree(target)  # an older version's, or a stale one: replaced, not merged
        try:
            os.replace(tmp, target)
        except OSError:
            if not _complete(target):  # another process got there first: fine if it finished
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
