"""What a lifecycle operation costs the traffic: a constant-rate flow through the deployed chain runs while the
operation does (upgrade, heal, scale), and its sink's records give the figures.

The flow is an interface (``Flow``): something that starts, stops and reports what its sink received. nfvcat
defines what a flow reports and how it is judged; where the flow's packets enter and leave the chain is the
cloud's business: a plugin of the ``nfvcat.traffic_flows`` entry point group (``--traffic NAME``; the test beds
offer ``devcloud``: endpoints on the dev cloud's real host), or any command that prints the records
(``--traffic-command CMD``, ``CommandFlow``).

The records, one JSON object per line (times in seconds since the epoch, on the clock of the host nfvcat runs on):

- ``{"start": T, "rate_pps": R}``: the sender's first packet (sequence number 0) at T, then one every 1/R s;
- ``{"seq": N, "t": T}``: the sink received packet N at T (duplicates count once);
- ``{"sent": N, "stop": T}``: the sender stopped at T after sending packets 0 .. N-1.

The figures (``figures``): packets sent, received and lost; the longest gap between two packets the sink received
in a row (the outage; at either end of the flow, from its start or to its stop when the packets there were lost);
the time from the operation's start until the chain forwards at full rate again (the first packet received after
the last one lost: from then on every packet sent arrived; None when packets were still being lost when the flow
stopped). The preview's prediction held when the servers it named as going down did (deleted, replaced or rebuilt:
the server id is gone or Nova's ``launched_at`` changed) and no other did.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Generic, Protocol, TypeVar

from nfvcat.core.errors import EXIT_USAGE, UserError
from nfvcat.core.waiting import within

T = TypeVar("T")
MAX_LINES = 2_000_000  # a flow's records read at most (an hour at 500 pps)


@dataclass
class FlowRecord:
    """What a flow reported so far."""

    rate_pps: float = 0.0
    start: float | None = None
    stop: float | None = None
    sent: int | None = None  # known once the sender stopped
    arrivals: dict[int, float] = field(default_factory=dict)  # sequence number -> first time the sink had it
    malformed: int = 0  # lines that were no record

    def add(self, line: str) -> None:
        try:
            rec = json.loads(line)
            if not isinstance(rec, dict):
                raise ValueError
            if "seq" in rec:
                seq, t = int(rec["seq"]), float(rec["t"])
                if seq >= 0 and math.isfinite(t):
                    self.arrivals.setdefault(seq, t)
                    return
            elif "sent" in rec:
                self.sent, self.stop = int(rec["sent"]), float(rec["stop"])
                return
            elif "start" in rec:
                self.start, self.rate_pps = float(rec["start"]), float(rec["rate_pps"])
                return
        except (ValueError, KeyError, TypeError):
            pass
        self.malformed += 1


def parse(lines: Iterable[str], rec: FlowRecord | None = None) -> FlowRecord:
    """Records from lines of JSON (at most MAX_LINES; blank lines skipped)."""
    rec = rec if rec is not None else FlowRecord()
    for i, line in enumerate(lines):
        if i >= MAX_LINES:
            break
        if line.strip():
            rec.add(line)
    return rec


class Flow(Protocol):
    """A constant-rate flow through a deployed chain."""

    describe: str  # where it runs, for the report

    def start(self) -> None:
        """Start sending (the records' ``start``)."""

    def record(self) -> FlowRecord:
        """What the sink received so far (the flow runs on)."""

    def stop(self) -> FlowRecord:
        """Stop sending, let the chain drain, and return every record."""

    def close(self) -> None:
        """Remove what the flow made (endpoints, processes); safe to call twice."""


@dataclass
class Figures:
    rate_pps: float
    sent: int
    received: int
    lost: int
    longest_gap_s: float
    time_to_full_rate_s: float | None  # from the operation's start; None: still losing when the flow stopped

    def as_dict(self) -> dict[str, Any]:
        return {"rate_pps": self.rate_pps, "sent": self.sent, "received": self.received, "lost": self.lost,
                "longest_gap_s": round(self.longest_gap_s, 3),
                "time_to_full_rate_s": None if self.time_to_full_rate_s is None else
                round(self.time_to_full_rate_s, 3)}


def figures(rec: FlowRecord, op_start: float) -> Figures:
    """The figures of a stopped flow around an operation that started at ``op_start``."""
    arrived = rec.arrivals
    sent = rec.sent if rec.sent is not None else (max(arrived) + 1 if arrived else 0)
    got = {s: t for s, t in arrived.items() if s < sent}
    lost = sent - len(got)
    times = sorted(got.values())
    if rec.start is not None and 0 not in got:  # the first packets lost: the gap runs from the flow's start
        times.insert(0, rec.start)
    if rec.stop is not None and sent and (sent - 1) not in got:  # the last ones lost: it runs to the stop
        times.append(rec.stop)
    gap = max((b - a for a, b in pairwise(times)), default=0.0)
    missing = [s for s in range(sent) if s not in got] if lost else []
    if not missing:
        back: float | None = 0.0
    else:
        after = [t for s, t in got.items() if s > missing[-1]]
        back = max(0.0, min(after) - op_start) if after else None
    return Figures(rec.rate_pps, sent, len(got), lost, max(0.0, gap), back)


def at_full_rate(rec: FlowRecord, since: float, hold_s: float) -> bool:
    """The flow forwards at full rate: the last ``hold_s`` seconds' worth of packets before the newest one
    received all arrived, the oldest of them after ``since``."""
    if not rec.arrivals or rec.rate_pps <= 0:
        return False
    n = max(2, math.ceil(rec.rate_pps * hold_s))
    top = max(rec.arrivals)
    window = range(top - n + 1, top + 1)
    return window.start >= 0 and all(s in rec.arrivals for s in window) and rec.arrivals[window.start] >= since


@dataclass
class Prediction:
    """The servers the preview named as going down (ids; None: the operation predicts nothing) against the
    servers before and after (id -> Nova's launched_at)."""

    predicted: set[str] | None
    before: dict[str, str]
    after: dict[str, str]

    @property
    def went_down(self) -> set[str]:
        return {s for s, launched in self.before.items() if s not in self.after or self.after[s] != launched}

    @property
    def held(self) -> bool | None:
        return None if self.predicted is None else self.went_down == self.predicted

    def as_dict(self) -> dict[str, Any]:
        down = self.went_down
        return {"predicted_down": None if self.predicted is None else sorted(self.predicted),
                "went_down": sorted(down), "held": self.held,
                "unexpected": sorted(down - (self.predicted or set())),
                "missed": sorted((self.predicted or set()) - down),
                "new_servers": sorted(set(self.after) - set(self.before))}


@dataclass
class Outage(Generic[T]):
    operation: str
    flow: str
    figures: Figures
    prediction: Prediction
    baseline: bool  # the flow was at full rate before the operation started
    operation_s: float
    result: T | None = None

    @property
    def ok(self) -> bool:
        """Back at full rate, and the prediction held (or there was none to hold)."""
        return self.figures.time_to_full_rate_s is not None and self.prediction.held is not False

    def metrics(self) -> dict[str, Any]:
        """The figures a Test Description File's ``expect:`` can bound."""
        f = self.figures
        return {"sent": f.sent, "lost": f.lost, "longest_gap_s": f.longest_gap_s,
                "time_to_full_rate_s": f.time_to_full_rate_s,
                "prediction_held": None if self.prediction.held is None else int(self.prediction.held)}

    def as_dict(self) -> dict[str, Any]:
        return {"operation": self.operation, "flow": self.flow, "baseline_at_full_rate": self.baseline,
                "operation_s": round(self.operation_s, 3), **self.figures.as_dict(),
                "prediction": self.prediction.as_dict(), "ok": self.ok}

    def text(self) -> str:
        f, p = self.figures, self.prediction
        back = ("not back at full rate when the flow stopped" if f.time_to_full_rate_s is None else
                f"full rate again {f.time_to_full_rate_s:.1f} s after the operation started")
        held = {None: "no prediction to hold", True: "held", False: "did NOT hold"}[p.held]
        pd = p.as_dict()
        out = [f"Outage of {self.operation} ({self.flow}, {f.rate_pps:g} pps"
               + ("" if self.baseline else "; NOT at full rate before the operation") + "):",
               f"  sent {f.sent}, received {f.received}, lost {f.lost}; longest gap {f.longest_gap_s:.3f} s; {back}",
               f"  prediction {held}: predicted down {', '.join(pd['predicted_down'] or []) or 'none'}; "
               f"went down {', '.join(pd['went_down']) or 'none'}"]
        return "\n".join(out)


def measure(flow: Flow, label: str, operation: Callable[[], T], servers: Callable[[], dict[str, str]],
            predicted: set[str] | None, say: Callable[[str], None], *, baseline_s: float = 60,
            recover_s: float = 600, hold_s: float = 3.0, settle_s: float = 5.0, need_baseline: bool = True,
            clock: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep) -> Outage[T]:
    """Run ``operation`` inside ``flow``: the flow starts and must reach full rate (``baseline_s`` at most;
    ``need_baseline``: else the operation is not run), the operation runs, then the flow goes on until it is at
    full rate again for ``hold_s`` (at least ``settle_s`` after the operation, at most ``recover_s``), stops, and
    its records give the figures. The flow is closed whatever happens."""
    try:
        before = servers()
        flow.start()
        t0 = clock()
        baseline = within(lambda: at_full_rate(flow.record(), t0, hold_s), baseline_s, 0.5, clock, sleep)
        if not baseline:
            say(f"{flow.describe}: not at full rate after {baseline_s:g} s")
            if need_baseline:
                flow.stop()
                raise UserError(f"the traffic flow ({flow.describe}) does not pass the chain at full rate before "
                                f"{label}: what the operation costs cannot be measured; fix the chain or the flow "
                                "first", 2)
        op_start = clock()
        say(f"{label}: under traffic ({flow.describe})")
        result = operation()
        op_end = clock()
        due = op_end + settle_s
        back = within(lambda: clock() >= due and at_full_rate(flow.record(), op_end, hold_s),
                      recover_s + settle_s, 0.5, clock, sleep)
        if not back:
            say(f"{flow.describe}: not at full rate {recover_s:g} s after {label}")
        rec = flow.stop()
        after = servers()
    finally:
        flow.close()
    return Outage(label, flow.describe, figures(rec, op_start), Prediction(predicted, before, after), baseline,
                  op_end - op_start, result)


def check_rate(rate: float) -> float:
    if not 1 <= rate <= 10_000:
        raise UserError(f"--traffic-rate {rate:g}: between 1 and 10000 packets per second", EXIT_USAGE)
    return rate


def stack_servers(conn: Any, stack: str) -> dict[str, str]:
    """Every server of the stack (nested stacks too): id -> Nova's launched_at (a rebuild changes it)."""
    from nfvcat.cloud.stacks import servers_of

    out = {}
    for _, sid in servers_of(conn, stack):
        server = conn.compute.find_server(sid, ignore_missing=True)
        if server is not None:
            out[sid] = str(server.launched_at or "")
    return out
