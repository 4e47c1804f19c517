"""One waiting helper (nfvcat.core.waiting, tenacity's loop) for every wait on another process: backoff between
polls, a failure state ends the wait at once, a timeout names what was awaited and its last state; and no
hand-written poll loop with a fixed sleep is left where the lifecycle, the dev cloud and the engine server's
client wait."""

from __future__ import annotations

import ast
import time
from pathlib import Path
from typing import Any

import pytest

from nfvcat.cloud.stacks import StackFailed, Stacks
from nfvcat.core import waiting
from nfvcat.core.errors import EXIT_ENGINE
from tests.conftest import ROOT
from tests.unit.cloudfake import HEAT, cloud  # noqa: F401 (the fake's fixture)

PACKAGE = ROOT / "tools" / "nfvcat"
DEVCLOUD = ROOT / "tools" / "testbeds" / "nfvcat_testbeds" / "devcloud"
WAITERS = [*sorted((PACKAGE / "cloud").glob("*.py")), DEVCLOUD / "bootstrap.py", DEVCLOUD / "lifecycle.py",
           PACKAGE / "validation" / "client.py"]


def test_polls_back_off_until_done() -> None:
    states = iter(["queued", "building", "building", "building", "building", "done"])
    slept: list[float] = []
    assert waiting.until(lambda: next(states), lambda s: s == "done", timeout=60, what="x", first=0.5, most=3,
                         sleep=slept.append) == "done"
    assert slept == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_a_timeout_names_what_and_its_last_state() -> None:
    started = time.monotonic()
    with pytest.raises(waiting.TimedOut) as err:
        waiting.until(lambda: {"state": "PROCESSING"}, lambda s: False, timeout=0.3, what="LCM operation op-1",
                      state=lambda s: s["state"], first=0.05, most=0.1)
    assert str(err.value) == "LCM operation op-1: still PROCESSING after 0.3 s"
    assert err.value.last == {"state": "PROCESSING"} and err.value.exit_code == EXIT_ENGINE
    assert time.monotonic() - started < 1.0  # no poll is started past the timeout


def test_a_failure_state_ends_the_wait_at_once() -> None:
    slept: list[float] = []

    def poll() -> str:
        raise RuntimeError("CREATE_FAILED")

    with pytest.raises(RuntimeError, match="CREATE_FAILED"):
        waiting.until(poll, lambda s: False, timeout=60, what="x", sleep=slept.append)
    assert slept == []


def test_a_stack_wait_backs_off(cloud: Any, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    m, conn = cloud
    m.get(f"{HEAT}/stacks/chain/s1/events", json={"events": []})
    m.get(f"{HEAT}/stacks/chain/s1", [{"json": {"stack": {"id": "s1", "stack_status": "CREATE_IN_PROGRESS"}}}] * 3
          + [{"json": {"stack": {"id": "s1", "stack_status": "CREATE_COMPLETE"}}}])
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    assert Stacks(conn, lambda _: None).wait("chain", "s1", "CREATE", timeout=600)["stack_status"] == "CREATE_COMPLETE"
    assert slept == [1.0, 2.0, 4.0]  # a fixed 2 s before


def test_a_stack_that_never_completes_times_out_with_its_state(cloud: Any) -> None:  # noqa: F811
    m, conn = cloud
    m.get(f"{HEAT}/stacks/chain/s1/events", json={"events": []})
    m.get(f"{HEAT}/stacks/chain/s1", json={"stack": {"id": "s1", "stack_status": "CREATE_IN_PROGRESS"}})
    with pytest.raises(StackFailed, match="timed out after 0 s in CREATE_IN_PROGRESS"):
        Stacks(conn, lambda _: None).wait("chain", "s1", "CREATE", timeout=0)


def _sleeps_in_loops(path: Path) -> list[int]:
    lines = []
    for loop in ast.walk(ast.parse(path.read_text())):
        if isinstance(loop, (ast.While, ast.For)):
            lines += [n.lineno for n in ast.walk(loop) if isinstance(n, ast.Call)
                      and isinstance(n.func, ast.Attribute) and n.func.attr == "sleep"]
    return lines


def test_no_hand_written_poll_loop_is_left() -> None:
    assert len(WAITERS) >= 10
    found = {str(p.relative_to(PACKAGE)): lines for p in WAITERS if (lines := _sleeps_in_loops(p))}
    assert found == {}
