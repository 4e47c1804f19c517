"""A cloud that accepts connections and never answers: every command that talks to a cloud gives up within its
--timeout (or --api-timeout), says what it waited for, and exits 3 naming the endpoint; a missing password is a
one-line error. The cloud is a TCP listener on 127.0.0.1 that accepts and holds each connection, unread."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from tests.conftest import nfvcat
from tests.unit.test_cloud_connect import OPENRC


@pytest.fixture
def silent_cloud() -> Iterator[str]:
    """The identity URL of a listener that accepts and never answers (stopped, its connections closed, after)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v3"
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        listener.close()


COMMANDS = {
    "list": ["list"],
    "check": ["check", "chain-vrouter"],
    "instantiate": ["instantiate", "chain-vrouter", "--no-check"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_cloud_that_never_answers_is_exit_3_within_the_timeout(silent_cloud: str, command: str) -> None:
    env = {**OPENRC, "OS_AUTH_URL": silent_cloud, "OS_CLOUD": "", "OS_API_TIMEOUT": ""}
    started = time.monotonic()
    proc = nfvcat(*COMMANDS[command], "--timeout", "3", env=env, timeout=120)
    took = time.monotonic() - started
    print(f"{command}: exit {proc.returncode} after {took:.1f} s (--timeout 3)")
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert "waiting for" in proc.stderr and silent_cloud.removesuffix("/v3") in proc.stderr, proc.stderr
    assert "no answer" in proc.stderr, proc.stderr
    assert took < 3 + 30, "gave up long after its --timeout (the margin is Python's and openstacksdk's start-up)"


def test_openstacksdks_api_timeout_is_the_default(silent_cloud: str) -> None:
    env = {**OPENRC, "OS_AUTH_URL": silent_cloud, "OS_CLOUD": "", "OS_API_TIMEOUT": "2"}
    proc = nfvcat("list", env=env, timeout=120)
    assert proc.returncode == 3 and "gives up after 2 s" in proc.stderr, proc.stderr


def test_a_missing_password_is_a_one_line_error(silent_cloud: str) -> None:
    env = {**OPENRC, "OS_AUTH_URL": silent_cloud, "OS_CLOUD": "", "OS_PASSWORD": ""}
    proc = nfvcat("list", env=env, timeout=120)
    assert proc.returncode == 1, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("nfvcat:")]
    assert len(lines) == 1 and "OS_PASSWORD" in lines[0] and "internal error" not in proc.stderr, proc.stderr
