"""`nfvcat onboard`'s VNF packages against a Tacker at the HTTP level: a package a VNF instance uses is never
disabled or deleted (Tacker refuses: before, onboard disabled it, then failed on the 409, half-applied), and a new
build that would clash with it is refused before any request that changes something."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import requests_mock

from nfvcat.catalog import entries
from nfvcat.cloud import onboarding, tacker_lcm
from nfvcat.core.errors import EXIT_FINDINGS, UserError
from tests.conftest import ROOT
from tests.unit.cloudfake import TACKER, _discovery, connection

BASE = f"{TACKER}/vnfpkgm/v1/vnf_packages"
ENTRIES = {e.dir.name: e for e in entries.entries(ROOT, "vnfd")}


def vnfd_id(name: str) -> str:
    return tacker_lcm.vnfd_id(ENTRIES[name].dir, ENTRIES[name].meta["template"])


@pytest.fixture
def tacker() -> Iterator[tuple[requests_mock.Mocker, Any, list[dict[str, Any]]]]:
    """A package list the test fills; creating, uploading and showing a new package succeed (ONBOARDED)."""
    listed: list[dict[str, Any]] = []
    with requests_mock.Mocker() as m:
        _discovery(m)
        m.get(re.compile(rf"^{BASE}\?all_fields$"), json=lambda req, ctx: listed)
        m.post(BASE, json=lambda req, ctx: {"id": f"new-{len(m.request_history)}"}, status_code=201)
        m.put(re.compile(rf"^{BASE}/new-\d+/package_content$"), status_code=202)
        m.get(re.compile(rf"^{BASE}/new-\d+$"), json={"onboardingState": "ONBOARDED"})
        m.patch(re.compile(rf"^{BASE}/[^/]+$"), json={})
        m.delete(re.compile(rf"^{BASE}/[^/]+$"), status_code=204)
        yield m, connection(nfv_orchestration_endpoint_override=TACKER), listed


def package(pid: str, entry: str, vid: str, usage: str) -> dict[str, Any]:
    return {"id": pid, "vnfdId": vid, "onboardingState": "ONBOARDED", "operationalState": "ENABLED",
            "usageState": usage, "userDefinedData": {"nfvcat-entry": entry, "nfvcat-sha256": "an older build"}}


def changes(m: requests_mock.Mocker) -> list[tuple[str, str]]:
    return [(r.method, r.url.removeprefix(BASE)) for r in m.request_history if r.method in ("POST", "PUT", "PATCH",
                                                                                            "DELETE")]


def test_a_package_in_use_stays_beside_the_new_one(tacker: Any) -> None:
    m, conn, listed = tacker
    listed += [package("old-used", "vnf-vrouter", "an older version's vnfdId", "IN_USE"),
               package("old-free", "vnf-ipsec-gw", "another older vnfdId", "NOT_IN_USE")]
    actions = {a.name: a for a in onboarding.vnf_packages(conn, ROOT, False, lambda _: None, timeout=5)}
    assert actions["vnf-vrouter"].verb == "create" and "old-used" in actions["vnf-vrouter"].detail
    assert "kept: in use by a VNF instance" in actions["vnf-vrouter"].detail
    assert actions["vnf-ipsec-gw"].verb == "replace"
    done = changes(m)
    assert not [c for c in done if "old-used" in c[1]], done  # neither disabled nor deleted
    assert ("PATCH", "/old-free") in done and ("DELETE", "/old-free") in done
    assert [c for c in done if c[0] == "POST"] == [("POST", ""), ("POST", "")]


def test_a_new_build_with_the_vnfd_id_of_a_package_in_use_changes_nothing(tacker: Any) -> None:
    m, conn, listed = tacker
    listed += [package("old-free", "vnf-ipsec-gw", "another older vnfdId", "NOT_IN_USE"),
               package("used", "vnf-vrouter", vnfd_id("vnf-vrouter"), "IN_USE")]
    with pytest.raises(UserError, match=r"vnf-vrouter: VNF package used .* in use by a VNF instance.*nothing was "
                                        r"changed") as exc:
        onboarding.vnf_packages(conn, ROOT, False, lambda _: None, timeout=5)
    assert exc.value.exit_code == EXIT_FINDINGS
    assert changes(m) == []  # not even the other entry's replacement
