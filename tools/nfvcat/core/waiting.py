"""Waiting for what another process does (a stack, a VNF package, an LCM operation, a service, the engine
server): one poll loop for all of them, tenacity's, with exponential backoff between polls and a message
naming what was awaited and its last state when the time runs out.

``poll`` asks once and returns what it saw; ``done`` says whether that is the end. A failure state is the
poller's to raise: any exception from ``poll`` or ``done`` ends the wait at once, as it is. After ``timeout``
seconds (a poll is never started past it: tenacity's stop_before_delay) ``TimedOut`` is raised with the last
value seen, for a caller that has its own words or clean-up for a timeout.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from nfvcat.core.errors import EXIT_ENGINE, UserError

T = TypeVar("T")


class TimedOut(UserError):
    """The wait ran out of time; ``last`` is what the last poll returned."""

    def __init__(self, message: str, last: Any, seconds: float):
        super().__init__(message, EXIT_ENGINE)
        self.last = last
        self.seconds = seconds


def until(poll: Callable[[], T], done: Callable[[T], bool], *, timeout: float, what: str,
          state: Callable[[T], object] = str, first: float = 0.5, most: float = 5.0,
          sleep: Callable[[float], None] | None = None) -> T:
    """``poll()`` until ``done`` of its value, which is returned; ``first`` seconds between the first two
    polls, doubling up to ``most``. On timeout, ``TimedOut``: "WHAT: still STATE after N s" (``state`` of the
    last value). ``sleep`` (default ``time.sleep``) is how a pause is taken."""
    import tenacity  # 27 ms of imports (asyncio): paid by a wait, not by every command that could wait

    def timed_out(retry: tenacity.RetryCallState) -> T:
        last = retry.outcome.result() if retry.outcome is not None else None
        raise TimedOut(f"{what}: still {state(last) if last is not None else 'nothing'} after {timeout:g} s",
                       last, timeout)

    waiter = tenacity.Retrying(stop=tenacity.stop_before_delay(timeout),
                               wait=tenacity.wait_exponential(multiplier=first, max=most),
                               retry=tenacity.retry_if_result(lambda value: not done(value)),
                               retry_error_callback=timed_out, sleep=sleep or time.sleep, reraise=True)
    return waiter(poll)


def within(done: Callable[[], bool], limit: float, interval: float, clock: Callable[[], float],
           sleep: Callable[[float], None]) -> bool:
    """Whether ``done()`` holds within ``limit`` seconds of ``clock``, asked every ``interval`` seconds (the
    clock and the pause given: a flow's records and a pair's roles are waited for on the caller's clock, and
    tests run it on a fake one); False when the time is up, never an error."""
    end = clock() + limit
    while not done():
        if clock() >= end:
            return False
        sleep(interval)
    return True
