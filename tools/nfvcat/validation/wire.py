"""The engine server's wire, for both ends: where its socket is, one JSON line each way, and the facts about
the calling process that the server's answers depend on.

Light on purpose (no engine, rule or catalog module): ``nfvcat validate`` talks to a warm server through it,
and every module a call imports is start-up time the user waits for. For the same reason it uses the C
modules under ``socket`` and ``json`` (``_socket``, ``_json``): importing ``socket`` and ``json`` brings
``re``, ``enum`` and ``selectors``, 11 ms of a warm call's 27 ms start-up on the benchmark machine. The
JSON written is what ``json.dumps`` writes (ASCII, its separators); the JSON read is what ``json.loads``
reads.
"""

from __future__ import annotations

import _json
import _socket
import os
import sys
import time

from nfvcat.core.dirs import cache_base

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

# Settings that change how the client or the server behave, not what a validation finds.
IGNORED_SETTINGS = frozenset({"NFVCAT_NO_SERVER", "NFVCAT_SERVER_IDLE", "NFVCAT_DEBUG", "NFVCAT_REQUEST_TIMEOUT"})


MAX_REQUEST = 64 * 1024 * 1024  # a request or answer line: eight times the default file size cap (8 MiB)


def max_request() -> int:
    """The longest line either end reads: ``MAX_REQUEST``, or eight times ``NFVCAT_MAX_FILE_SIZE`` when it is
    set (a request carries buffers, an answer findings); a peer that sends more is dropped."""
    if not os.environ.get("NFVCAT_MAX_FILE_SIZE"):
        return MAX_REQUEST
    from nfvcat.core.confine import default_max_bytes

    try:
        return 8 * default_max_bytes() + (1 << 20)
    except ValueError:
        return MAX_REQUEST


def engine_timeout() -> float:
    """How long an engine may take over one request (``NFVCAT_ENGINE_TIMEOUT``, seconds)."""
    return float(os.environ.get("NFVCAT_ENGINE_TIMEOUT", "900"))


def deadline() -> float:
    """How long the engine server works on one request before it answers that it could not finish
    (exit 3): ``NFVCAT_REQUEST_TIMEOUT`` seconds, else the engine timeout and 30 s (a worker that hangs is
    reported by its own timeout, E0009, first; the client waits 60 s more than the engines)."""
    try:
        return float(os.environ.get("NFVCAT_REQUEST_TIMEOUT", "") or engine_timeout() + 30)
    except ValueError:
        return engine_timeout() + 30


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


def dumps(value: Any) -> str:
    """``value`` (dicts with string, number, boolean or null keys, lists, tuples, strings, numbers,
    booleans, None) as ``json.dumps`` writes it; TypeError for anything else, ValueError for a cycle."""
    out: list[str] = []
    _encode(value, out, set())
    return "".join(out)


def _encode(value: Any, out: list[str], active: set[int]) -> None:
    if isinstance(value, str):
        out.append(_json.encode_basestring_ascii(value))
    elif value is None or value is True or value is False:
        out.append("null" if value is None else "true" if value else "false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        out.append(_float(value))
    elif isinstance(value, (dict, list, tuple)):
        if id(value) in active:
            raise ValueError("Circular reference detected")
        active.add(id(value))
        if isinstance(value, dict):
            out.append("{")
            for i, (key, item) in enumerate(value.items()):
                out.append(", " if i else "")
                out.append(_key(key))
                out.append(": ")
                _encode(item, out, active)
            out.append("}")
        else:
            out.append("[")
            for i, item in enumerate(value):
                out.append(", " if i else "")
                _encode(item, out, active)
            out.append("]")
        active.discard(id(value))
    else:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return _json.encode_basestring_ascii(key)
    if key is None or key is True or key is False:
        return '"null"' if key is None else '"true"' if key else '"false"'
    if isinstance(key, int):
        return f'"{int.__repr__(key)}"'
    if isinstance(key, float):
        return f'"{_float(key)}"'
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


class _Reading:
    """What ``_json``'s scanner reads its settings from (as from ``json.JSONDecoder``): the defaults."""
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(float)  # NaN, Infinity, -Infinity


_scan = _json.make_scanner(_Reading())  # type: ignore[arg-type]  # typeshed: a JSONDecoder; it reads these
_SPACE = " \t\n\r"


def loads(text: str) -> Any:
    """One JSON value, as ``json.loads`` reads it; ValueError when ``text`` is not one."""
    start = len(text) - len(text.lstrip(_SPACE))
    try:
        value, end = _scan(text, start)
    except StopIteration:
        raise ValueError(f"Expecting value: char {start}") from None
    if text[end:].strip(_SPACE):
        raise ValueError(f"Extra data: char {end}")
    return value


def send(sock: Any, message: dict[str, Any]) -> None:
    sock.sendall((dumps(message) + "\n").encode())


def receive(sock: Any, timeout: float, limit: int | None = None) -> dict[str, Any] | None:
    """One JSON line, or None when the peer closed, did not answer in time, or sent more than ``limit`` bytes
    (``max_request``) or something else than one JSON object."""
    deadline = time.monotonic() + timeout
    limit = limit or max_request()
    buf = b""
    while not buf.endswith(b"\n"):
        if len(buf) > limit:
            return None
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
        data = loads(buf.decode())
    except ValueError:  # UnicodeDecodeError among them
        return None
    return data if isinstance(data, dict) else None


def connect() -> Any:
    """A connection to the running server (a ``_socket.socket``), or None (no server, or a stale socket)."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
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
    try:
        send(sock, message)
        return receive(sock, timeout)
    except OSError:
        return None
    finally:
        sock.close()
