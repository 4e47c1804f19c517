"""What Debian's mirror serves against an image lock (nfvcat.packaging.images.mirror), against an HTTP-level fake
mirror (requests-mock): a lock the mirror still serves, one it no longer serves, security updates named as such."""

from __future__ import annotations

import lzma
from pathlib import Path

import pytest
import requests_mock

from nfvcat.packaging.images import mirror, recipe

BASE = "http://mirror.test/debian"
SEC = "http://mirror.test/debian-security"
OLD, NEW = "1.5.2-6+deb12u2", "1.5.2-6+deb12u3"


def _recipe(tmp_path: Path) -> recipe.Recipe:
    return recipe.Recipe("demo", "1.0.0", tmp_path, "bookworm",
                         (f"deb {BASE} bookworm main", f"deb {BASE} bookworm-updates main",
                          f"deb {SEC} bookworm-security main"), ("systemd-sysv",), (), (), 1795392000, 4096, 64)


def _index(*packages: tuple[str, str, str]) -> bytes:
    return lzma.compress("\n".join(f"Package: {p}\nVersion: {v}\nArchitecture: {a}\n"
                                   for p, v, a in packages).encode())


@pytest.fixture()
def fake(monkeypatch: pytest.MonkeyPatch) -> requests_mock.Mocker:
    monkeypatch.setattr(mirror, "_SERVED", {})
    with requests_mock.Mocker() as m:
        m.get(f"{BASE}/dists/bookworm/main/binary-amd64/Packages.xz", content=_index(
            ("libpam0g", "1.5.2-6+deb12u1", "amd64"), ("tzdata", "2025b-0+deb12u1", "all"),
            ("libc6", "2.36-9+deb12u13", "i386"), ("libc6", "2.36-9+deb12u13", "amd64")))
        m.get(f"{BASE}/dists/bookworm-updates/main/binary-amd64/Packages.xz", content=_index(
            ("tzdata", "2025b-0+deb12u2", "all")))
        m.get(f"{SEC}/dists/bookworm-security/main/binary-amd64/Packages.xz", content=_index(
            ("libpam0g", NEW, "amd64")))
        yield m


def _lock(packages: dict[str, str]) -> recipe.Lock:
    return recipe.Lock("demo", "1.0.0", "r", packages, "0" * 64, 1, "4")


def test_a_lock_of_the_newest_versions_is_served(fake: requests_mock.Mocker, tmp_path: Path) -> None:
    s = mirror.status(_recipe(tmp_path), _lock({"libpam0g": NEW, "tzdata": "2025b-0+deb12u2",
                                                "libc6": "2.36-9+deb12u13"}))
    assert s.serves_lock and s.missing == [] and s.newer == []


def test_drift_names_security_updates_and_stable_updates(fake: requests_mock.Mocker, tmp_path: Path) -> None:
    s = mirror.status(_recipe(tmp_path), _lock({"libpam0g": OLD, "tzdata": "2025b-0+deb12u1",
                                                "libc6": "2.36-9+deb12u13", "gone": "1.0"}))
    assert not s.serves_lock
    assert s.missing == [("gone", "1.0"), ("libpam0g", OLD)]  # u2: in no suite any more
    assert [n.text() for n in s.newer] == [
        f"libpam0g {OLD} -> {NEW} (security update, bookworm-security)",
        "tzdata 2025b-0+deb12u1 -> 2025b-0+deb12u2 (stable update, bookworm-updates)"]
    assert s.newest["libpam0g"] == NEW and "gone" not in s.newest
    assert s.as_dict()["newer"][0] == {"package": "libpam0g", "locked": OLD, "newest": NEW,
                                       "suite": "bookworm-security", "kind": "security"}


def test_an_unreadable_mirror_is_an_engine_error_not_a_verdict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mirror, "_SERVED", {})
    with requests_mock.Mocker() as m:
        m.get(requests_mock.ANY, status_code=404)
        with pytest.raises(mirror.MirrorError, match="HTTP 404") as err:
            mirror.status(_recipe(tmp_path), _lock({"libpam0g": OLD}))
    assert err.value.exit_code == 3


def test_versions_compare_in_debians_order() -> None:
    assert mirror.compare("1.5.2-6+deb12u10", "1.5.2-6+deb12u9") > 0
    assert mirror.compare("1:1.0", "2.0") > 0 and mirror.compare("1.0~rc1", "1.0") < 0
