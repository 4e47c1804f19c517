"""The closed loop on the dev cloud's real host: chain-vrouter (the session's day2_chain, as test_outage left it)
runs under Nova's libvirt driver and `nfvcat watch` runs its probes (the ready line, a 200 pps flow through the
chain) every 5 s. Two faults, one after the other:
the guest's QEMU process killed (SIGKILL), then the guest's left data link taken down from the host (`virsh
domif-setlink`: the guest runs on, Nova still says ACTIVE, and nothing crosses it). Each must be detected,
healed (Heat: the server marked unhealthy, the stack updated), checked (check passing) and the traffic back at
full rate. The times to detect (from the fault) and to repair (from detection) go to standard error."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

from tests.integration.conftest import CLOUD, NFVCAT, ROOT

STACK = "day2-vrouter"  # conftest.day2_chain: after test_outage, at chain-vrouter 1.1.1


class Watch:
    """`nfvcat watch` running, its events read line by line."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([*NFVCAT, "watch", STACK, "--traffic", "devcloud", "--format", "json",
                                      "--host-access", "devcloud", "--timeout", "1800"], cwd=ROOT,
                                     env={**os.environ, "OS_CLOUD": CLOUD}, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.events: list[dict[str, Any]] = []

    def until(self, kind: str, timeout: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            event = json.loads(line)
            self.events.append(event)
            sys.stderr.write(f"[watch] {line}")
            if event.get("event") == kind:
                return dict(event)
        raise AssertionError(f"no {kind} event: {self.events}; {self.stop()}")

    def stop(self) -> str:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)  # the watcher closes its flow and unplugs its endpoints
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(30)
        return self.proc.stderr.read()[-2000:] if self.proc.stderr else ""


def repaired(w: Watch, t_fault: float) -> tuple[float, float]:
    detected = w.until("detected", 300)
    w.until("heal", 300)
    w.until("healed", 1800)
    check = w.until("check", 600)
    assert check["ok"], check
    recovered = w.until("recovered", 1800)
    return detected["t"] - t_fault, recovered["t"] - detected["t"]


def test_the_watcher_heals_a_killed_guest_and_a_guest_that_stopped_forwarding(conn: Any, day2_chain: str) -> None:
    from nfvcat.cloud.stacks import servers_of
    from nfvcat_testbeds.devcloud import endpoints, guests, realhost
    from nfvcat_testbeds.devcloud.state import State, default_dir

    state = State(default_dir())
    host = endpoints.real_host(state)
    w = None
    try:
        w = Watch()
        w.until("healthy", 600)

        [(_, sid)] = servers_of(conn, STACK)
        lv = realhost.Libvirt(state, host.name)
        domain = lv.virsh("domname", sid, check=True).stdout.strip()
        pid = guests.qemu_pid(lv, domain)
        assert pid is not None
        t_fault = time.time()
        os.kill(pid, signal.SIGKILL)
        detect, repair = repaired(w, t_fault)
        sys.stderr.write(f"[watch] killed QEMU: detected in {detect:.1f} s, repaired in {repair:.1f} s\n")
        [(_, second)] = servers_of(conn, STACK)
        assert second != sid

        domain = lv.virsh("domname", second, check=True).stdout.strip()
        left = next(p for p in conn.network.ports(device_id=second) if "left" in (p.name or ""))
        tap = f"tap{left.id}"[:14]
        t_fault = time.time()
        lv.virsh("domif-setlink", domain, tap, "down", check=True)
        detect, repair = repaired(w, t_fault)
        sys.stderr.write(f"[watch] guest stopped forwarding: detected in {detect:.1f} s, repaired in "
                         f"{repair:.1f} s\n")
        [(_, third)] = servers_of(conn, STACK)
        assert third != second
        assert [e["event"] for e in w.events].count("heal") == 2  # one heal each: no storm
    finally:
        if w is not None:
            w.stop()
