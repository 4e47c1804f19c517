"""``instantiate`` waits for each VNF of the chain to say it is ready: the line its day-0 hook prints on the console
(:mod:`nfvcat.day0.ready`), read from Nova's console log (``os-getConsoleOutput``, what ``openstack console log
show`` prints). Where the server's user data prints cloud-init's own status once cloud-init is over, that line is
waited for too, and anything but ``done`` fails (cloud-init's ``error``: a module or the hook failed). A hypervisor
that serves no console log (Nova answers 501) leaves readiness "not observable": said so, never counted as ready. A
server that goes to ERROR, or no line before the timeout, fails; so does one whose cloud-init found no datasource
(it will never print the line), at once."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nfvcat.cloud.stacks import servers_of
from nfvcat.cloud.verdicts import PASS, Verdict
from nfvcat.core.errors import EXIT_FINDINGS, UserError
from nfvcat.core.waiting import TimedOut, until
from nfvcat.day0.ready import cloud_init_status, prints_cloud_init_status, ready_line, without_datasource

READY, NOT_OBSERVABLE, TIMEOUT, ERROR = "ready", "not observable", "timeout", "error"
CLOUD_INIT_FAILED = "cloud-init not done"
NO_DAY0 = "no day-0"


@dataclass
class Readiness:
    vnf: str
    server_id: str
    status: str
    detail: str
    seconds: float
    cloud_init: str = ""  # cloud-init's status line, where the user data prints one

    def as_dict(self) -> dict[str, Any]:
        return {"vnf": self.vnf, "server": self.server_id, "status": self.status, "detail": self.detail,
                "seconds": round(self.seconds, 1), "cloud_init": self.cloud_init}


def console(conn: Any, server_id: str) -> str | None:
    """The server's console log; None when the hypervisor serves none (501), '' while there is none yet."""
    from openstack import exceptions

    try:
        body = conn.compute.get_server_console_output(server_id)
    except exceptions.HttpException as exc:
        if exc.status_code == 501:
            return None
        if exc.status_code in (404, 409):  # no log yet, or the instance not running yet
            return ""
        raise
    return str((body or {}).get("output") or "")


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.replace("\r", "\n").splitlines() if line.strip()]
    last = lines[-1] if lines else "(empty)"
    return last if len(last) <= 100 else last[:97] + "..."


def expects_status(server: Any) -> bool:
    """Whether the server's user data (Nova shows it to an admin, microversion 2.3+) prints cloud-init's status."""
    import base64
    import binascii

    try:
        text = base64.b64decode(server.user_data or "").decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return False
    return prints_cloud_init_status(text)


def judge(vnf: str, sid: str, text: str, status_expected: bool, seconds: float) -> Readiness | None:
    """The verdict a console log gives, None while it says nothing final yet."""
    line = ready_line(text)
    status = cloud_init_status(text) if status_expected else None
    if line is None and status is None and (final := without_datasource(text)) is not None:
        return Readiness(vnf, sid, NO_DAY0, "cloud-init found no datasource, so the day-0 never reached the server "
                         "(no config drive; the metadata service at 169.254.169.254 did not answer: is the "
                         f"management network's DHCP and metadata path up?): {final}", seconds)
    if status is not None and status[0] != "done":
        return Readiness(vnf, sid, CLOUD_INIT_FAILED, f"cloud-init status {status[0]}"
                         f"{'' if line else ' and no ready line'}: {status[2]}", seconds, status[2])
    if status is not None and line is None:
        return Readiness(vnf, sid, CLOUD_INIT_FAILED, f"cloud-init done without the ready line: {status[2]}",
                         seconds, status[2])
    if line is not None and (status is not None or not status_expected):
        return Readiness(vnf, sid, READY, line, seconds, status[2] if status else "")
    return None


def wait(conn: Any, servers: list[tuple[str, str]], timeout: float, say: Callable[[str], None],
         poll: float = 5.0, every: float = 30.0) -> list[Readiness]:
    """Until every server printed its ready line, and its cloud-init status line where its user data prints one
    (or failed); progress every ``every`` seconds."""
    t0 = time.monotonic()
    pending = dict(servers)
    out: dict[str, Readiness] = {}
    last_said = [t0]
    expected: dict[str, bool] = {}

    def one_round() -> int:
        now = time.monotonic()
        for vnf, sid in list(pending.items()):
            server = conn.compute.get_server(sid)
            if vnf not in expected:
                expected[vnf] = expects_status(server)
            if server.status == "ERROR":
                fault = (server.fault or {}).get("message", "no fault recorded")
                out[vnf] = Readiness(vnf, sid, ERROR, f"server in ERROR: {fault}", now - t0)
            else:
                text = console(conn, sid)
                if text is None:
                    out[vnf] = Readiness(vnf, sid, NOT_OBSERVABLE, "the hypervisor serves no console log "
                                         "(Nova: 501 Not Implemented)", now - t0)
                elif (verdict := judge(vnf, sid, text, expected[vnf], now - t0)) is not None:
                    out[vnf] = verdict
                    if verdict.status == READY:
                        say(f"  {vnf}: ready after {now - t0:.0f} s: {verdict.detail}"
                            + (f"; {verdict.cloud_init}" if verdict.cloud_init else ""))
                elif now - last_said[0] >= every:
                    what = ("cloud-init's status line" if ready_line(text) else "its ready line")
                    say(f"  {vnf}: waiting for {what} ({now - t0:.0f} s; {server.status}; console: "
                        f"{_last_line(text) if text else '(no log yet)'})")
            if vnf in out:
                del pending[vnf]
        if now - last_said[0] >= every:
            last_said[0] = now
        return len(pending)

    try:
        until(one_round, lambda left: left == 0, timeout=timeout, what="ready lines",
              state=lambda left: f"{left} VNF(s) without one", first=poll, most=poll)
    except TimedOut:
        for vnf, sid in pending.items():
            what = "cloud-init status line" if expected.get(vnf) else "ready line"
            out[vnf] = Readiness(vnf, sid, TIMEOUT, f"no {what} within {timeout:.0f} s", time.monotonic() - t0)
    return [out[vnf] for vnf, _ in servers]


def stack_ready(conn: Any, name: str, timeout: float, say: Callable[[str], None]) -> list[Verdict]:
    """Each VNF of the stack's ready line (a passed verdict each); a VNF in ERROR or not ready in time fails (the
    stack is kept, to be looked at); a hypervisor without console log is said and not counted. ``timeout`` 0:
    no wait."""
    if timeout <= 0:
        return []
    servers = servers_of(conn, name)
    say(f"{name}: waiting for the ready line of {', '.join(v for v, _ in servers)} in Nova's console log")
    results = wait(conn, servers, timeout, say)
    bad = [r for r in results if r.status in (ERROR, TIMEOUT, CLOUD_INIT_FAILED, NO_DAY0)]
    if bad:
        raise UserError(f"{name}: {'; '.join(f'{r.vnf} not ready: {r.detail}' for r in bad)} (stack kept: "
                        f"`nfvcat terminate {name}` removes it)", EXIT_FINDINGS)
    for r in results:
        if r.status == NOT_OBSERVABLE:
            say(f"  {r.vnf}: readiness not observable: {r.detail}")
    verdicts = []
    for r in results:
        if r.status == READY:
            verdicts.append(Verdict(r.vnf, r.server_id, "day-0 ready", PASS, f"{r.detail} (after {r.seconds:.0f} s)"))
            if r.cloud_init:
                verdicts.append(Verdict(r.vnf, r.server_id, "cloud-init status", PASS, r.cloud_init))
    return verdicts
