"""instantiate's wait for each VNF's ready line in Nova's console log, against Nova at the HTTP level."""

from __future__ import annotations

from typing import Any

import pytest

from nfvcat.cloud import readiness
from nfvcat.core.errors import UserError
from nfvcat.day0.ready import READY, ready_line
from tests.unit.cloudfake import NOVA, sent

SID = "0f7c2a3e-2b6e-4f51-9a55-5d5f3d9d2d01"
LINE = "NFVCAT-VROUTER-READY left=enp2s0 right=enp3s0 datapath bpf: eBPF programs (tc)"


def serve(m: Any, consoles: list[Any], status: str = "ACTIVE", fault: str | None = None) -> None:
    """GET the server; each console-log request answers the next of ``consoles`` (text, or an HTTP status)."""
    server = {"id": SID, "name": "chain-vrouter-1", "status": status,
              **({"fault": {"message": fault, "code": 500}} if fault else {})}
    m.get(f"{NOVA}/servers/{SID}", json={"server": server})
    answers = [({"status_code": c, "json": {"error": {"message": "x", "code": c}}} if isinstance(c, int)
                else {"json": {"output": c}}) for c in consoles]
    m.post(f"{NOVA}/servers/{SID}/action", answers)


def test_ready_when_the_line_appears(cloud: Any) -> None:
    m, conn = cloud
    serve(m, [409, "Booting...\n", f"cloud-init ...\n{LINE}\r\nchain-vrouter-1 login:"])
    said: list[str] = []
    out = readiness.wait(conn, [("vrouter", SID)], timeout=60, say=said.append, poll=0, every=0)
    assert [(r.status, r.detail) for r in out] == [(readiness.READY, LINE)]
    bodies = [r.json() for r in sent(m, "POST", r"/action$")]
    assert len(bodies) == 3 and all("os-getConsoleOutput" in b for b in bodies)
    assert any("waiting for its ready line" in s and "Booting..." in s for s in said), said


def test_a_hypervisor_without_console_is_not_observable_never_ready(cloud: Any) -> None:
    m, conn = cloud
    serve(m, [501])
    said: list[str] = []
    out = readiness.wait(conn, [("vrouter", SID)], timeout=60, say=said.append, poll=0)
    assert [r.status for r in out] == [readiness.NOT_OBSERVABLE]


def test_timeout_and_error_fail(cloud: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    m, conn = cloud
    serve(m, ["still booting\n"] * 50)
    out = readiness.wait(conn, [("vrouter", SID)], timeout=0, say=lambda s: None, poll=0)
    assert out[0].status == readiness.TIMEOUT
    serve(m, ["x"], status="ERROR", fault="No valid host was found.")
    out = readiness.wait(conn, [("vrouter", SID)], timeout=60, say=lambda s: None, poll=0)
    assert (out[0].status, out[0].detail) == (readiness.ERROR, "server in ERROR: No valid host was found.")
    monkeypatch.setattr(readiness, "servers_of", lambda conn, name: [("vrouter", SID)])
    with pytest.raises(UserError, match=r"vrouter not ready: server in ERROR.*stack kept"):
        readiness.stack_ready(conn, "chain-vrouter", 60, lambda s: None)


def test_ready_lines_of_the_hooks() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for vnf, marker in READY.items():
        hook = (root / "hooks" / vnf.removeprefix("vnf-") / "user-data.yaml").read_text()
        assert f'echo "{marker}' in hook, vnf
    assert ready_line(f"a\n{LINE}\nb\n") == LINE and ready_line("NFVCAT-VROUTER") is None
