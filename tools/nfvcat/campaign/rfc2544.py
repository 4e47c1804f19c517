"""RFC 2544 section 26.1 throughput: the highest rate at which the device forwards every frame offered, found
by binary search per frame size. A trial whose loss is at most ``loss_tolerance`` (0: zero loss, the RFC's
definition) passes. The search works on the rate the generator really offered (frames sent / seconds it spent
sending them), so a generator slower than asked can not be mistaken for a device that forwards more: when the
generator cannot reach the rate asked and loses nothing, the result is marked ``generator_limited`` (the
device's throughput is at least that figure), and with ``samples`` > 1 that rate is tried that many times and
the figure is the median (a machine shared with other work offers different rates from one trial to the
next). A search that loses nothing at ``max_rate_pps`` itself is ``capped``: the device forwards at least
that much, and how much more is not known (expectations treat such a figure as a bound, never as the
value)."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from nfvcat.catalog.tdf import SearchSettings as Settings

__all__ = ["Search", "Settings", "search"]


class TrialResult(Protocol):
    requested_pps: float
    sent: int
    received: int

    @property
    def offered_pps(self) -> float: ...

    @property
    def loss(self) -> float: ...

    def as_dict(self) -> dict[str, Any]: ...




@dataclass
class Search:
    frame: str
    settings: Settings
    trials: list[TrialResult] = field(default_factory=list)
    throughput_pps: float = 0.0
    generator_limited: bool = False
    converged: bool = False
    capped: bool = False  # no loss at the top of the range asked: at least that, how much more unknown

    def as_dict(self) -> dict[str, Any]:
        return {"frame": self.frame, "throughput_pps": round(self.throughput_pps, 1),
                "generator_limited": self.generator_limited, "converged": self.converged, "capped": self.capped,
                "trials": [dict(t.as_dict(), passed=self.passed(t)) for t in self.trials]}

    def passed(self, t: TrialResult) -> bool:
        return t.sent > 0 and t.loss <= self.settings.loss_tolerance


def search(frame: str, settings: Settings, run_trial: Callable[[str, float, float], TrialResult]) -> Search:
    """Binary search between ``min_rate_pps`` and ``max_rate_pps``, starting at the top."""
    s = Search(frame, settings)
    low, high = 0.0, settings.max_rate_pps
    rate = settings.max_rate_pps
    while len(s.trials) < settings.max_trials:
        t = run_trial(frame, rate, settings.trial_seconds)
        s.trials.append(t)
        offered = t.offered_pps
        if s.passed(t) and offered < rate * settings.generator_margin:  # asking for more gives no more
            more = [run_trial(frame, rate, settings.trial_seconds) for _ in range(settings.samples - 1)]
            s.trials += more
            lost = [x for x in more if not s.passed(x)]
            if not lost:
                s.throughput_pps = statistics.median([offered, *(x.offered_pps for x in more)])
                s.generator_limited = s.converged = True
                break
            high = min(high, min(x.offered_pps for x in lost))  # a repeat lost frames: search below it
        elif s.passed(t):
            s.throughput_pps = max(s.throughput_pps, offered)
            low = max(low, offered)
            if rate >= settings.max_rate_pps:
                s.converged = s.capped = True  # no loss at the top of the range
                break
        else:
            high = min(high, offered if 0 < offered < rate else rate)
        if high <= settings.min_rate_pps:
            s.converged = True  # loses frames even at the lowest rate asked for
            break
        if high - low <= settings.resolution * high:
            s.converged = True
            break
        rate = max(settings.min_rate_pps, (low + high) / 2)
    return s
