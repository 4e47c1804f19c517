"""The engine server's client: validate through the server, starting it when none runs.

``validate`` returns None when the server cannot be used (it could not start, or died twice): the caller
then validates in-process, which gives the same findings. ``NFVCAT_NO_SERVER=1`` (or ``--no-server``)
skips the server altogether.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from typing import Any

from nfvcat.validation.server import private_dir, receive, send, settings_fingerprint, site_for, socket_path

START_TIMEOUT = 30.0  # the server answers as soon as it listens; engines load on the first request


def disabled() -> bool:
    return os.environ.get("NFVCAT_NO_SERVER", "") not in ("", "0")


def connect() -> socket.socket | None:
    """A connection to the running server, or None (no server, or a stale socket)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(2)
    try:
        sock.connect(str(socket_path()))
    except OSError:
        sock.close()
        return None
    return sock


def request(message: dict[str, Any], timeout: float) -> dict[str, Any] | None:
    sock = connect()
    if sock is None:
        return None
    with sock:
        try:
            send(sock, message)
        except OSError:
            return None
        return receive(sock, timeout)


def status() -> dict[str, Any] | None:
    reply = request({"op": "status"}, 10)
    return reply.get("status") if reply else None


def start(site: str | None = None, idle: float | None = None) -> dict[str, Any] | None:
    """Start the server in the background (no-op when one answers); its status, or None if it did not come up."""
    current = status()
    if current is not None:
        return current
    try:
        d = private_dir()
    except OSError:  # no private directory to be had (a read-only cache, another user's): in-process
        return None
    import subprocess

    args = [sys.executable, "-m", "nfvcat.validation.server"]
    if site:
        args += ["--site", site]
    if idle is not None:
        args += ["--idle", str(idle)]
    try:
        with open(d / "server.log", "ab") as log:
            proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd="/",
                                    start_new_session=True, close_fds=True)
    except OSError:
        return None
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        current = status()
        if current is not None:
            return current
        if proc.poll() is not None and proc.returncode != 0:
            return None
        time.sleep(0.02)
    return None


def stop(timeout: float = 20) -> int | None:
    """Stop the running server and wait until it is gone; its pid, or None when none ran."""
    from nfvcat.devcloud.procs import alive

    reply = request({"op": "stop"}, 10)
    if not reply:
        return None
    pid = int(reply.get("stopped", 0))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and pid and alive(pid):
        time.sleep(0.02)
    return pid


def validate(paths: list[str], options: Any) -> Any:
    """A pipeline Report through the server, or None when the server cannot be used."""
    from nfvcat.errors import UserError
    from nfvcat.validation.model import Report, engine_timeout

    site = site_for(options.site, options.catalog_root)
    message = {"op": "validate", "settings": settings_fingerprint(site), "cwd": os.getcwd(), "paths": list(paths),
               "options": {"environments": list(options.environments), "parameters": dict(options.parameters),
                           "site": options.site, "use_cache": options.use_cache,
                           "require_signed": options.require_signed, "trust_ca": options.trust_ca,
                           "skip_unknown": options.skip_unknown, "overlays": dict(options.overlays),
                           "project": str(options.project.path) if options.project and options.project.path else None}}
    for _attempt in range(3):
        reply = request(message, engine_timeout() + 60)
        if reply is None or "restart" in reply:  # none runs, it died, or it is not this nfvcat's
            if reply is not None:
                stop()
            if start(site) is None:
                return None
            continue
        if "user_error" in reply:
            raise UserError(str(reply["user_error"]), int(reply.get("exit_code", 1)))
        if "report" in reply:
            return Report.from_json(reply["report"])
        return None  # refused or failed: in-process
    return None
