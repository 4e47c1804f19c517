"""instantiate's wait for each VNF's ready line in Nova's console log, against Nova at the HTTP level."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from nfvcat.cloud import readiness
from nfvcat.core.errors import UserError
from nfvcat.day0.ready import READY, ready_line
from tests.unit.cloudfake import NOVA, sent

SID = "0f7c2a3e-2b6e-4f51-9a55-5d5f3d9d2d01"
LINE = "NFVCAT-VROUTER-READY left=enp2s0 right=enp3s0 datapath bpf: eBPF programs (tc)"


STATUS_HOOK = '#cloud-config\nwrite_files:\n  - content: |\n      echo "NFVCAT-CLOUD-INIT status: $S datasource: $F"\n'
DONE = "NFVCAT-CLOUD-INIT status: done datasource: metadata (http://169.254.169.254)"


def serve(m: Any, consoles: list[Any], status: str = "ACTIVE", fault: str | None = None,
          user_data: str = "#cloud-config\n") -> None:
    """GET the server (with its user data, as Nova shows an admin); each console-log request answers the next of
    ``consoles`` (text, or an HTTP status)."""
    server = {"id": SID, "name": "chain-vrouter-1", "status": status,
              "OS-EXT-SRV-ATTR:user_data": base64.b64encode(user_data.encode()).decode(),
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


def test_where_the_user_data_prints_cloud_inits_status_it_is_waited_for(cloud: Any) -> None:
    m, conn = cloud
    serve(m, [f"{LINE}\n", f"{LINE}\nCloud-init v. 22.4.2 finished\n", f"{LINE}\n{DONE}\r\n"],
          user_data=STATUS_HOOK)
    said: list[str] = []
    [r] = readiness.wait(conn, [("vrouter", SID)], timeout=60, say=said.append, poll=0, every=0)
    assert (r.status, r.detail, r.cloud_init) == (readiness.READY, LINE, DONE)
    assert len(sent(m, "POST", r"/action$")) == 3  # the ready line alone did not end the wait
    assert any("waiting for cloud-init's status line" in s for s in said), said
    assert any("ready after" in s and DONE in s for s in said), said


def test_cloud_init_not_done_fails_at_once(cloud: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    m, conn = cloud
    error = "NFVCAT-CLOUD-INIT status: error datasource: config-disk (/dev/sr0)"
    serve(m, [f"{LINE}\n{error}\n"] * 3, user_data=STATUS_HOOK)
    [r] = readiness.wait(conn, [("vrouter", SID)], timeout=60, say=lambda s: None, poll=0)
    assert (r.status, r.cloud_init) == (readiness.CLOUD_INIT_FAILED, error)
    assert len(sent(m, "POST", r"/action$")) == 1
    serve(m, ["NFVCAT-CLOUD-INIT status: degraded datasource: x\n"], user_data=STATUS_HOOK)
    [r] = readiness.wait(conn, [("vrouter", SID)], timeout=60, say=lambda s: None, poll=0)
    assert r.status == readiness.CLOUD_INIT_FAILED and "no ready line" in r.detail
    serve(m, [f"{DONE}\n"], user_data=STATUS_HOOK)  # done, but the hook never said it was ready
    [r] = readiness.wait(conn, [("vrouter", SID)], timeout=60, say=lambda s: None, poll=0)
    assert r.status == readiness.CLOUD_INIT_FAILED and "without the ready line" in r.detail
    serve(m, [f"{LINE}\n{error}\n"], user_data=STATUS_HOOK)
    monkeypatch.setattr(readiness, "servers_of", lambda conn, name: [("vrouter", SID)])
    with pytest.raises(UserError, match=r"vrouter not ready: cloud-init status error: .*stack kept"):
        readiness.stack_ready(conn, "chain-vrouter", 60, lambda s: None)


def test_status_verdict_beside_the_ready_one(cloud: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    m, conn = cloud
    serve(m, [f"{LINE}\n{DONE}\n"], user_data=STATUS_HOOK)
    monkeypatch.setattr(readiness, "servers_of", lambda conn, name: [("vrouter", SID)])
    verdicts = readiness.stack_ready(conn, "chain-vrouter", 60, lambda s: None)
    assert [(v.check, v.status) for v in verdicts] == [("day-0 ready", "pass"), ("cloud-init status", "pass")]
    assert verdicts[1].detail == DONE


def test_the_vrouter_hook_prints_cloud_inits_status_after_its_last_stage() -> None:
    from pathlib import Path

    import yaml

    from nfvcat.day0.ready import cloud_init_status, prints_cloud_init_status

    hook = (Path(__file__).resolve().parents[2] / "hooks/vrouter/user-data.yaml").read_text()
    assert prints_cloud_init_status(hook)
    doc = yaml.safe_load(hook)
    files = {f["path"]: f["content"] for f in doc["write_files"]}
    unit = files["/etc/systemd/system/vrouter-cloud-init-status.service"]
    assert "After=cloud-final.service" in unit and "ExecStart=/usr/local/sbin/vrouter-cloud-init-status" in unit
    assert "cloud-init status --wait" in files["/usr/local/sbin/vrouter-cloud-init-status"]
    # started without waiting from runcmd (part of cloud-final: waiting there would wait for itself)
    assert ["systemctl", "start", "--no-block", "vrouter-cloud-init-status.service"] in doc["runcmd"]
    assert cloud_init_status(f"x\n{DONE}\r\n") == ("done", "metadata (http://169.254.169.254)", DONE)
    assert cloud_init_status("NFVCAT-CLOUD-INIT status: error\n") == ("error", "", "NFVCAT-CLOUD-INIT status: error")


def test_no_datasource_fails_at_once_naming_it(cloud: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A guest whose cloud-init found no datasource (no config drive, no metadata service: it logs DataSourceNone in
    its last line) will never print the ready line: the wait ends there, saying why; a later boot that found one
    is waited for as usual."""
    m, conn = cloud
    none = ("[  167.274076] cloud-init[495]: Cloud-init v. 22.4.2 finished at Fri, 27 Nov 2026 05:06:36 +0000. "
            "Datasource DataSourceNone.  Up 167.23 seconds")
    serve(m, ["Booting...\n", f"url_helper.py[ERROR]: Timed out\n{none}\r\n"] + ["x"] * 5, user_data=STATUS_HOOK)
    [r] = readiness.wait(conn, [("vrouter", SID)], timeout=60, say=lambda s: None, poll=0)
    assert r.status == readiness.NO_DAY0 and r.detail.endswith(none.split("]: ", 1)[1]), r.detail
    assert "no config drive" in r.detail and len(sent(m, "POST", r"/action$")) == 2
    drive = ("Cloud-init v. 22.4.2 finished at Fri, 27 Nov 2026 05:10:00 +0000. Datasource DataSourceConfigDrive "
             "[net,ver=2][source=/dev/sr0].  Up 90.1 seconds")
    serve(m, [f"{none}\n{drive}\n", f"{none}\n{drive}\n{LINE}\n{DONE}\n"], user_data=STATUS_HOOK)
    [r] = readiness.wait(conn, [("vrouter", SID)], timeout=60, say=lambda s: None, poll=0)
    assert r.status == readiness.READY
    serve(m, [f"{none}\n"])
    monkeypatch.setattr(readiness, "servers_of", lambda conn, name: [("vrouter", SID)])
    with pytest.raises(UserError, match=r"vrouter not ready: cloud-init found no datasource.*stack kept"):
        readiness.stack_ready(conn, "chain-vrouter", 60, lambda s: None)
