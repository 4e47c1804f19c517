"""The engine server's client: validate through the server, starting it when none runs.

``run`` (the command line's) and ``validate`` (the language server's) return None when the server cannot be
used (it could not start, or died twice): the caller then validates in-process, which gives the same
findings. ``NFVCAT_NO_SERVER=1`` (or ``--no-server``) skips the server altogether.

A warm call imports only this module and ``wire``: the command line's words, its directory and settings go
over the socket, and the server parses them with the command's own parser, validates, and answers with the
output (``run_command_line``). Anything else (no server running, one to restart, ``--help``, a usage error,
``--no-server``) goes the command's own way, which starts or restarts the server as needed (``run``).
"""

from __future__ import annotations

import os
import sys

from nfvcat.validation import wire

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

START_TIMEOUT = 30.0  # the server answers as soon as it listens; engines load on the first request


def read_by_command(path: str) -> bool:
    """Whether a PATH is read by the command itself and sent as a buffer: ``-`` (standard input) or a shell's
    process substitution (``<(cmd)``: /dev/fd/N, /proc/self/fd/N), which only the calling process can read."""
    return path == "-" or path.startswith(("/dev/fd/", "/proc/self/fd/"))


def disabled() -> bool:
    return os.environ.get("NFVCAT_NO_SERVER", "") not in ("", "0")


def status() -> dict[str, Any] | None:
    reply = wire.request({"op": "status"}, 10)
    return reply.get("status") if reply else None


def start(site: str | None = None, idle: float | None = None) -> dict[str, Any] | None:
    """Start the server in the background (no-op when one answers); its status, or None if it did not come up."""
    from nfvcat.validation.server import private_dir

    current = status()
    if current is not None:
        return current
    try:
        d = private_dir()
    except OSError:  # no private directory to be had (a read-only cache, another user's): in-process
        return None
    import subprocess

    args = [sys.executable, "-m", "nfvcat", "server", "run"]
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
    from nfvcat.core.waiting import TimedOut, until

    def up() -> tuple[dict[str, Any] | None, bool]:  # (its status, it failed)
        current = status()
        return current, current is None and proc.poll() is not None and proc.returncode != 0

    try:
        return until(up, lambda seen: seen[0] is not None or seen[1], timeout=START_TIMEOUT,
                     what="the engine server", first=0.01, most=0.05)[0]
    except TimedOut:
        return None


def stop(timeout: float = 20) -> int | None:
    """Stop the running server and wait until it is gone; its pid, or None when none ran."""
    from nfvcat.core.procs import alive
    from nfvcat.core.waiting import TimedOut, until

    reply = wire.request({"op": "stop"}, 10)
    if not reply:
        return None
    pid = int(reply.get("stopped", 0))
    try:
        until(lambda: not (pid and alive(pid)), bool, timeout=timeout, what=f"the engine server (pid {pid})",
              first=0.01, most=0.1)
    except TimedOut:
        pass  # it was asked to stop; the caller reports the pid
    return pid


def run_command_line(argv: list[str], command: str = "validate") -> tuple[int, str, str] | None:
    """``nfvcat validate ARGV...`` (or ``plan``) by the server that runs, as it is: (exit code, stdout, stderr),
    or None when no server answers or the server leaves it to the command (which then parses ARGV itself and
    goes on as ``run``: starting a server, restarting one, printing usage or help, running in-process)."""
    if disabled():
        return None
    if any(read_by_command(a) for a in argv):
        return None  # standard input or a pipe: the command reads it and sends it as a buffer (``run``)
    message: dict[str, Any] = {"op": "run", "cwd": os.getcwd(), "argv": list(argv), "caller": wire.caller(),
                               "command": command, "deadline": wire.deadline()}
    reply = wire.request(message, wire.engine_timeout() + 60)
    if reply is not None and reply.get("needs") == "stdin":  # --stdin-filename: the buffer it names
        import io

        text = sys.stdin.read(wire.max_request() // 2)  # bounded: the command's own read gives the cap's error
        sys.stdin = io.StringIO(text)  # still there for the command if the server leaves the call to it
        reply = wire.request({**message, "stdin": text}, wire.engine_timeout() + 60)
    if reply is None:
        return None
    if "user_error" in reply:
        from nfvcat.core.errors import UserError

        raise UserError(str(reply["user_error"]), int(reply.get("exit_code", 1)))
    if "output" not in reply:  # "restart", "left to the command", an error of the server's
        return None
    out = reply["output"]
    return int(out["exit"]), str(out["stdout"]), str(out["stderr"])


def run(args: dict[str, Any], command: str = "validate") -> tuple[int, str, str] | None:
    """``nfvcat validate`` (or ``plan``) with these arguments (the command's, as plain data) run by the server
    in this directory: (exit code, stdout, stderr), or None when the server cannot be used."""
    site = (lambda: _site_of_call(args)) if command == "validate" else (lambda: None)
    reply = _exchange({"op": "run", "cwd": os.getcwd(), "args": args, "command": command}, site)
    if reply is None or "output" not in reply:
        return None
    out = reply["output"]
    return int(out["exit"]), str(out["stdout"]), str(out["stderr"])


def validate(paths: list[str], options: Any) -> Any:
    """A pipeline Report through the server, or None when the server cannot be used."""
    from nfvcat.validation.model import Report
    from nfvcat.validation.server import site_for

    site = site_for(options.site, options.catalog_root)
    message = {"op": "validate", "site": site, "cwd": os.getcwd(), "paths": list(paths), "options": options.to_json()}
    reply = _exchange(message, lambda: site)
    return Report.from_json(reply["report"]) if reply is not None and "report" in reply else None


def _exchange(message: dict[str, Any], site: Callable[[], str | None]) -> dict[str, Any] | None:
    """The server's answer to a validation request (with this process's settings), starting or restarting the
    server as needed (``site``: the site profile a server started for it is given); None when none answers
    or it refused or failed (the caller then validates in-process). A user error is raised here."""
    message = {**message, "caller": wire.caller(), "deadline": wire.deadline()}
    for _attempt in range(3):
        reply = wire.request(message, wire.engine_timeout() + 60)
        if reply is None or "restart" in reply:  # none runs, it died, or it is not this nfvcat's
            if reply is not None:
                stop()
            if start(site()) is None:
                return None
            continue
        if "user_error" in reply:
            from nfvcat.core.errors import UserError

            raise UserError(str(reply["user_error"]), int(reply.get("exit_code", 1)))
        return reply
    return None


def _site_of_call(args: dict[str, Any]) -> str | None:
    """The site profile of a command-line call (only to start a server for it)."""
    from nfvcat.validation.invocation import prepare
    from nfvcat.validation.server import site_for

    options = prepare(args).options
    return site_for(options.site, options.catalog_root)
