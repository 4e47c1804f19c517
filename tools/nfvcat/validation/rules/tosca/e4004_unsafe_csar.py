"""E4004: a CSAR that must not be extracted. Only the zip's central directory is read."""

from __future__ import annotations

import posixpath
import stat
import zipfile
from collections.abc import Iterator

from nfvcat.core.documents import ZIP_ERRORS, Document
from nfvcat.core.findings import RawFinding
from nfvcat.validation.rules.base import Context, Rule

MAX_MEMBERS = 10_000
MAX_TOTAL_BYTES = 512 * 1024 * 1024
MAX_RATIO = 100
MIN_RATIO_BYTES = 1024 * 1024  # a ratio over tiny members says nothing: only members over 1 MiB count


def escapes(name: str) -> bool:
    """True when a member name would be written outside the extraction directory."""
    normal = name.replace("\\", "/")
    if normal.startswith("/") or (len(normal) > 1 and normal[1] == ":"):
        return True
    return ".." in posixpath.normpath(normal).split("/") or ".." in normal.split("/")


class UnsafeCsar(Rule):
    id = "E4004"
    shortdesc = "Unsafe CSAR archive (path escape, symbolic link or zip bomb)"
    description = ("A member path that is absolute or climbs out with '..', a symbolic link, more than "
                   f"{MAX_MEMBERS} members, more than {MAX_TOTAL_BYTES // 2**20} MiB uncompressed, or a "
                   f"member compressed over {MAX_RATIO}:1. Tacker extracts uploaded packages on the "
                   "conductor's disk, so such an archive can overwrite files or fill the disk. The archive "
                   "is not handed to any engine; only its directory is read, nothing is extracted.")
    source_url = "https://docs.python.org/3/library/zipfile.html#zipfile-resources-limitations"
    kinds = ("csar",)
    blocks_engines = True

    def check(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        try:
            with zipfile.ZipFile(doc.abspath) as zf:
                infos = zf.infolist()
        except ZIP_ERRORS as exc:
            yield RawFinding(self.id, (), f"not a readable zip archive: {type(exc).__name__}: {exc}", self.engine,
                             line=1, column=1)
            return
        if len(infos) > MAX_MEMBERS:
            yield self._at(f"{len(infos)} members, more than the {MAX_MEMBERS} allowed")
        total = 0
        for info in infos:
            total += info.file_size
            if escapes(info.filename):
                yield self._at(f"member '{info.filename}' would be extracted outside the package directory")
            if stat.S_ISLNK(info.external_attr >> 16):
                yield self._at(f"member '{info.filename}' is a symbolic link")
            if info.file_size > MIN_RATIO_BYTES and info.file_size > MAX_RATIO * max(info.compress_size, 1):
                ratio = info.file_size // max(info.compress_size, 1)
                yield self._at(f"member '{info.filename}' expands {ratio}:1 ({info.file_size} bytes), "
                               f"over the {MAX_RATIO}:1 limit (zip bomb)")
        if total > MAX_TOTAL_BYTES:
            yield self._at(f"members expand to {total} bytes, more than {MAX_TOTAL_BYTES // 2**20} MiB")

    def _at(self, message: str) -> RawFinding:
        return RawFinding(self.id, (), message, self.engine, line=1, column=1)
