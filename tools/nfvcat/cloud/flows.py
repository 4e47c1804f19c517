"""Where the traffic flow of an outage measurement (``nfvcat.cloud.outage``) comes from: a plugin of the
``nfvcat.traffic_flows`` entry point group, or a command of the user's.

- ``--traffic NAME``: ``NAME = module:factory`` in the group; ``factory(conn, stack, rate_pps, say)`` returns a
  ``Flow`` through the chain of Heat stack ``stack`` (the test beds' ``devcloud``: endpoints on the dev cloud's
  real host).
- ``--traffic-command CMD``: on any cloud, a command that sends ``rate_pps`` packets a second through the chain
  and prints the records (``nfvcat.cloud.outage``) on its standard output, until SIGINT or SIGTERM: then it
  prints ``{"sent": N, "stop": T}``, waits a moment for packets still in the chain, and exits. It runs without a
  shell, with ``NFVCAT_STACK`` and ``NFVCAT_RATE_PPS`` in its environment. An example, with a sender and a sink
  the user runs on either side of the chain: ``--traffic-command "ssh probe@left ./flow --to 10.0.2.10"``.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nfvcat.cloud.outage import Flow, FlowRecord, parse
from nfvcat.core import plugins
from nfvcat.core.errors import EXIT_ENGINE, EXIT_USAGE, UserError

GROUP = plugins.TRAFFIC_FLOWS
MAX_BYTES = 256 * 1024 * 1024  # the records a command may print


class CommandFlow:
    """A flow that is a command printing the records (see the module's doc)."""

    def __init__(self, argv: list[str], stack: str, rate_pps: float, drain_s: float = 10.0) -> None:
        self.argv, self.stack, self.rate_pps, self.drain_s = argv, stack, rate_pps, drain_s
        self.describe = f"command {argv[0]}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.dir = Path(tempfile.mkdtemp(prefix="nfvcat-flow-"))
        self.out = self.dir / "records.jsonl"

    def start(self) -> None:
        env = {**os.environ, "NFVCAT_STACK": self.stack, "NFVCAT_RATE_PPS": f"{self.rate_pps:g}"}
        with self.out.open("wb") as out:
            try:
                self.proc = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.DEVNULL, env=env,
                                             start_new_session=True)
            except OSError as exc:
                raise UserError(f"--traffic-command {self.argv[0]}: {exc.strerror or exc}", EXIT_ENGINE) from None

    def record(self) -> FlowRecord:
        with self.out.open("rb") as f:
            data = f.read(MAX_BYTES)
        text = data.decode("utf-8", "replace")
        complete = text[:text.rfind("\n") + 1]  # a line still being written is read next time
        rec = parse(complete.splitlines())
        if rec.rate_pps <= 0:
            rec.rate_pps = self.rate_pps
        return rec

    def stop(self) -> FlowRecord:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGINT)
                self.proc.wait(self.drain_s)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
            except ProcessLookupError:
                pass
        return self.record()

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(5)
        for p in (self.out,):
            p.unlink(missing_ok=True)
        if self.dir.exists():
            self.dir.rmdir()


def open_flow(name: str | None, command: str | None, conn: Any, stack: str, rate_pps: float,
              say: Callable[[str], None]) -> Flow | None:
    """The flow ``--traffic NAME`` or ``--traffic-command CMD`` names (None: neither given)."""
    if name and command:
        raise UserError("--traffic and --traffic-command: give one", EXIT_USAGE)
    if command:
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise UserError(f"--traffic-command: {exc}", EXIT_USAGE) from None
        if not argv:
            raise UserError("--traffic-command: empty", EXIT_USAGE)
        return CommandFlow(argv, stack, rate_pps)
    if not name:
        return None
    factory = plugins.load(GROUP, name)
    if factory is None:
        have = ", ".join(plugins.names(GROUP)) or "none installed"
        raise UserError(f"--traffic {name}: no such flow ({GROUP} entry points: {have}; or give "
                        "--traffic-command)", EXIT_USAGE)
    flow: Flow = factory(conn, stack, rate_pps, say)
    return flow
