"""cloud-init's schema for a pip-installed nfvcat: the pinned Debian package fetched over HTTP (a real
http.server on 127.0.0.1 serving a .deb built here), verified by sha256, unpacked in Python, cached;
refused on a bad hash; one line saying how to provide it when offline."""

from __future__ import annotations

import hashlib
import io
import json
import lzma
import socket
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from nfvcat.validation import cloudinit_schema as cs
from tests.conftest import nfvcat
from tests.debmirror import Mirror

SCHEMA = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object",
          "properties": {"runcmd": {"type": "array"}}}


def ar(members: dict[str, bytes]) -> bytes:
    """A Debian package is an ar archive (deb(5)): a global header, then 60-byte member headers."""
    out = io.BytesIO()
    out.write(b"!<arch>\n")
    for name, data in members.items():
        out.write(f"{name + '/':<16}{0:<12}{0:<6}{0:<6}{'100644':<8}{len(data):<10}`\n".encode())
        out.write(data + (b"\n" if len(data) % 2 else b""))
    return out.getvalue()


def tar_xz(files: dict[str, bytes]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return lzma.compress(raw.getvalue())


def make_deb(schema: dict[str, object]) -> bytes:
    base = "./usr/lib/python3/dist-packages/cloudinit/config/schemas/"
    return ar({"debian-binary": b"2.0\n",
               "control.tar.xz": tar_xz({"./control": b"Package: cloud-init\n"}),
               "data.tar.xz": tar_xz({base + cs.SCHEMA_NAME: json.dumps(schema).encode(),
                                      base + "versions.schema.cloud-config.json": b"{}",
                                      "./usr/bin/cloud-init": b"#!/bin/sh\n"})})


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No schema anywhere but what the test provides: empty cache, no venv copy, no installed cloud-init."""
    monkeypatch.setenv("NFVCAT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("NFVCAT_CLOUD_INIT_SCHEMA", raising=False)
    monkeypatch.setattr(cs, "venv_dir", lambda: tmp_path / "no-venv")
    monkeypatch.setattr(cs, "INSTALLED", tmp_path / "no-cloud-init")
    monkeypatch.setattr(cs, "_memo", {})
    return tmp_path


@pytest.fixture
def test_deb(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[bytes, Mirror]]:
    deb = make_deb(SCHEMA)
    monkeypatch.setattr(cs, "SHA256", hashlib.sha256(deb).hexdigest())  # the pin, for this test's package
    monkeypatch.setattr(cs, "SIZE", len(deb) + 4096)  # the read limit: room for the tampered package below
    with Mirror(deb) as mirror:
        monkeypatch.setenv("NFVCAT_DEBIAN_MIRROR", mirror.url)
        yield deb, mirror


def test_good_download_is_verified_unpacked_cached_and_fetched_once(isolated: Path,
                                                                    test_deb: tuple[bytes, Mirror]) -> None:
    deb, mirror = test_deb
    found = cs.locate()
    assert found.path == isolated / "cache" / "cloud-init" / cs.VERSION / cs.SCHEMA_NAME
    assert json.loads(found.path.read_text()) == SCHEMA
    assert (found.path.parent / "VERSION").read_text().strip() == cs.VERSION
    assert (found.path.parent / cs.FILENAME).read_bytes() == deb  # a local mirror can serve it on
    assert sorted(p.name for p in found.path.parent.glob("*.json")) == [cs.SCHEMA_NAME,
                                                                       "versions.schema.cloud-config.json"]
    assert mirror.requests == [f"/debian/{cs.POOL_PATH}"]
    cs._memo.clear()
    again = cs.locate()  # a new process: from the cache, no request
    assert again.source == "cache" and len(mirror.requests) == 1


def test_bad_hash_is_refused_and_nothing_is_cached(isolated: Path, test_deb: tuple[bytes, Mirror]) -> None:
    _, mirror = test_deb
    mirror.deb = make_deb({**SCHEMA, "title": "tampered"})
    with pytest.raises(cs.SchemaUnavailable) as err:
        cs.locate()
    message = str(err.value)
    assert "\n" not in message and "refused" in message and "NFVCAT_CLOUD_INIT_SCHEMA=" in message
    assert not (isolated / "cache" / "cloud-init" / cs.VERSION).exists()
    assert not list((isolated / "cache" / "cloud-init").glob(".cloud-init-*"))  # no half-written directory


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_offline_says_in_one_line_what_is_missing_and_how_to_provide_it(isolated: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NFVCAT_DEBIAN_MIRROR", f"http://127.0.0.1:{free_port()}/debian")
    with pytest.raises(cs.SchemaUnavailable) as err:
        cs.locate()
    message = str(err.value)
    assert "\n" not in message
    assert f"cloud-init's {cs.SCHEMA_NAME} is missing (Debian cloud-init {cs.VERSION}" in message
    assert "Connection refused" in message and "NFVCAT_CLOUD_INIT_SCHEMA=" in message
    with pytest.raises(cs.SchemaUnavailable):  # the failure is remembered: one attempt per run
        cs.locate()


def test_override_wins_and_a_missing_override_is_an_error(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mine = isolated / "mine.json"
    mine.write_text(json.dumps(SCHEMA))
    monkeypatch.setenv("NFVCAT_CLOUD_INIT_SCHEMA", str(mine))
    assert cs.locate() == cs.Located(mine, "NFVCAT_CLOUD_INIT_SCHEMA")
    cs._memo.clear()
    monkeypatch.setenv("NFVCAT_CLOUD_INIT_SCHEMA", str(isolated / "typo.json"))
    with pytest.raises(cs.SchemaUnavailable, match=r"typo\.json: no such file"):
        cs.locate()


def test_not_a_deb_is_refused() -> None:
    with pytest.raises(cs.SchemaUnavailable, match="not a Debian package"):
        cs.extract(b"<html>404</html>")
    with pytest.raises(cs.SchemaUnavailable, match="no usr/lib/python3"):
        cs.extract(ar({"debian-binary": b"2.0\n", "data.tar.xz": tar_xz({"./usr/bin/x": b""})}))


def test_pinned_default_sources(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pool first, then snapshot.debian.org by the file's sha1 (it keeps what the pool drops); a
    mirror the user names replaces both."""
    monkeypatch.delenv("NFVCAT_DEBIAN_MIRROR", raising=False)
    assert cs.urls() == [f"http://deb.debian.org/debian/{cs.POOL_PATH}", cs.SNAPSHOT_URL]
    monkeypatch.setenv("NFVCAT_DEBIAN_MIRROR", "http://a/debian/ http://b/debian")
    assert cs.urls() == [f"http://a/debian/{cs.POOL_PATH}", f"http://b/debian/{cs.POOL_PATH}"]


def test_fetch_schema_command_offline_is_exit_3_one_line(tmp_path: Path) -> None:
    proc = nfvcat("fetch-schema", "--into", str(tmp_path / "out"),
                  env={"NFVCAT_DEBIAN_MIRROR": f"http://127.0.0.1:{free_port()}/debian"})
    assert proc.returncode == 3 and "Traceback" not in proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("nfvcat: error:")]
    assert len(errors) == 1 and "NFVCAT_CLOUD_INIT_SCHEMA=" in errors[0]
    assert not (tmp_path / "out").exists()
