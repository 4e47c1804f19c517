"""The engine server's wire, for both ends: where its socket is, one JSON line each way, and the facts about
the calling process that the server's answers depend on.

Light on purpose (no engine, rule or catalog module): ``nfvcat validate`` talks to a warm server through it,
and every module a call imports is start-up time the user waits for.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time

from nfvcat.dirs import cache_base

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

# Settings that change how the client or the server behave, not what a validation finds.
IGNORED_SETTINGS = frozenset({"NFVCAT_NO_SERVER", "NFVCAT_SERVER_IDLE", "NFVCAT_DEBUG"})


def engine_timeout() -> float:
    """How long an engine may take over one request (``NFVCAT_ENGINE_TIMEOUT``, seconds)."""
    return float(os.environ.get("NFVCAT_ENGINE_TIMEOUT", "900"))


def server_dir() -> Path:
    from pathlib import Path

    return Path(cache_base(), "server")


def socket_path() -> str:
    return os.path.join(cache_base(), "server", "server.sock")


def caller() -> dict[str, Any]:
    """What only the calling process knows and a validation depends on: its Python and nfvcat, PYTHONPATH
    and its NFVCAT_* settings (the server turns them and the site profile into its settings fingerprint)."""
    import nfvcat

    return {"python": sys.executable, "nfvcat": nfvcat.__file__, "pythonpath": os.environ.get("PYTHONPATH", ""),
            "settings": {k: v for k, v in sorted(os.environ.items())
                         if k.startswith("NFVCAT_") and k not in IGNORED_SETTINGS}}


def send(sock: socket.socket, message: dict[str, Any]) -> None:
    sock.sendall((json.dumps(message) + "\n").encode())


def receive(sock: socket.socket, timeout: float) -> dict[str, Any] | None:
    """One JSON line, or None when the peer closed or did not answer in time."""
    deadline = time.monotonic() + timeout
    buf = b""
    while not buf.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        sock.settimeout(left)
        try:
            chunk = sock.recv(1 << 20)
        except (TimeoutError, OSError):
            return None
        if not chunk:
            return None
        buf += chunk
    try:
        data = json.loads(buf)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def connect() -> socket.socket | None:
    """A connection to the running server, or None (no server, or a stale socket)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(2)
    try:
        sock.connect(socket_path())
    except OSError:
        sock.close()
        return None
    return sock


def request(message: dict[str, Any], timeout: float) -> dict[str, Any] | None:
    """Send ``message`` to the running server and wait for its answer; None when none runs or it did not answer."""
    sock = connect()
    if sock is None:
        return None
    with sock:
        try:
            send(sock, message)
        except OSError:
            return None
        return receive(sock, timeout)
