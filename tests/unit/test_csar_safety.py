"""A CSAR is never extracted before its member list is checked: escapes and bombs are findings."""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

from tests.conftest import findings_of


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def _declare_size(path: Path, member: str, size: int) -> None:
    """Rewrite the central directory's uncompressed size of ``member``: a bomb without writing one."""
    raw = bytearray(path.read_bytes())
    at = raw.find(b"PK\x01\x02")
    while at != -1:
        name_len = struct.unpack_from("<H", raw, at + 28)[0]
        if raw[at + 46: at + 46 + name_len].decode() == member:
            struct.pack_into("<I", raw, at + 24, size)
            break
        at = raw.find(b"PK\x01\x02", at + 4)
    path.write_bytes(bytes(raw))


META = b"TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-By: t\nEntry-Definitions: Definitions/a.yaml\n"


def test_member_escaping_the_archive(tmp_path: Path) -> None:
    z = _zip(tmp_path / "escape.zip", {"TOSCA-Metadata/TOSCA.meta": META, "../../outside.txt": b"x"})
    code, findings = findings_of(str(z))
    assert code == 2
    assert any(f["id"] == "E4004" and "outside.txt" in str(f["message"]) for f in findings), findings
    assert not (tmp_path.parent / "outside.txt").exists()


def test_archive_declaring_gigabytes(tmp_path: Path) -> None:
    z = _zip(tmp_path / "bomb.zip", {"TOSCA-Metadata/TOSCA.meta": META, "Files/zeros.bin": bytes(1024)})
    _declare_size(z, "Files/zeros.bin", 3 * 1024**3)
    code, findings = findings_of(str(z))
    assert code == 2
    assert {f["id"] for f in findings} == {"E4004"}, findings  # and no engine ever saw the archive
    assert any("MiB" in str(f["message"]) or "ratio" in str(f["message"]) for f in findings)


def test_an_archive_zipfile_cannot_read_is_a_finding_in_a_directory_too(tmp_path: Path) -> None:
    # found by the fuzz batch (NFVCAT_FUZZ_SEED=448): a member whose central directory entry needs zip format
    # 19.4 makes zipfile raise NotImplementedError, not BadZipFile; validate died with "internal error", exit 3
    z = _zip(tmp_path / "future.zip", {"TOSCA-Metadata/TOSCA.meta": META, "Definitions/a.yaml": b"a: 1\n"})
    raw = bytearray(z.read_bytes())
    struct.pack_into("<H", raw, raw.find(b"PK\x01\x02") + 6, 194)  # "version needed to extract"
    z.write_bytes(bytes(raw))
    code, findings = findings_of(str(tmp_path))
    assert code == 2, findings
    assert [(f["id"], f["message"]) for f in findings] == [
        ("E4004", "not a readable zip archive: NotImplementedError: zip file version 19.4")], findings
