"""Day 2 under traffic on the dev cloud's real host, on one chain-vrouter (the module's ``chain``: 1.0.0 with the
onboarded vRouter image, booted under Nova's libvirt driver; one TCG boot for both tests, terminated at the end
of the module, so the real host is empty for the modules after it).

What an upgrade costs the traffic: a constant-rate UDP flow (`--traffic devcloud`: test endpoints on the chain's
left and right networks, 200 pps) runs through the vRouter while `nfvcat upgrade` runs. The upgrade to 1.1.0 brings
the vRouter hook's new day-0 (new user data: Heat replaces the server): packets lost, the longest gap and the time
back to full rate measured, and the server the preview named is the one that went down. The upgrade to 1.1.1
changes nothing on the server (only the image's default, and the stack names its image): not one packet lost, no
server down, as the preview said.

The closed loop, on the chain as the upgrades left it: `nfvcat watch` runs its probes (the ready line, a 200 pps
flow through the chain) every 5 s. Two faults, one after the other: the guest's QEMU process killed (SIGKILL), then
the guest's left data link taken down from the host (`virsh domif-setlink`: the guest runs on, Nova still says
ACTIVE, and nothing crosses it). Each must be detected, healed (Heat: the server marked unhealthy, the stack
updated), checked (check passing) and the traffic back at full rate. Each figure goes to standard error."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.conftest import CLOUD, NFVCAT, ROOT, glance_name, nfvcat

ENV = "tools/testbeds/nfvcat_testbeds/devcloud/environments/chain-vrouter.env.yaml"
STACK = "day2-vrouter"


@pytest.fixture(scope="module")
def chain(onboarded: list[str]) -> Iterator[str]:
    t0 = time.monotonic()
    res = nfvcat("instantiate", "chain-vrouter@1.0.0", "--stack", STACK, "-e", ENV, "-P",
                 f"image={glance_name('vrouter')}", "--no-check", timeout=1800)
    sys.stderr.write(f"[day2] instantiate chain-vrouter@1.0.0: {time.monotonic() - t0:.0f} s\n")
    try:
        assert res.returncode == 0, res.stderr[-3000:]
        yield STACK
    finally:
        out = nfvcat("terminate", STACK, "--format", "json")
    assert out.returncode == 0 and json.loads(out.stdout)["left_behind"] == [], out.stderr


def upgrade(*args: str) -> dict[str, Any]:
    t0 = time.monotonic()
    res = nfvcat("upgrade", STACK, "--yes", "--no-check", "--format", "json", "--traffic", "devcloud",
                 "--recover-timeout", "1200", *args, timeout=3600)
    sys.stderr.write(f"[outage] upgrade {' '.join(args)}: {time.monotonic() - t0:.0f} s, rc {res.returncode}\n")
    assert res.returncode == 0, res.stderr[-3000:]
    doc = json.loads(res.stdout)
    sys.stderr.write(f"[outage] {json.dumps(doc['outage'])}\n")
    return dict(doc)


def test_an_upgrade_that_replaces_the_vrouter_loses_packets_one_that_does_not_loses_none(conn: Any,
                                                                                         chain: str) -> None:
    from nfvcat.cloud.stacks import servers_of

    assert conn.orchestration.find_stack(chain).tags == ["nfvcat:chain-vrouter@1.0.0"]
    [(_, first)] = servers_of(conn, STACK)

    replaced = upgrade("--to", "1.1.0")
    found = replaced["outage"]
    assert replaced["plan"]["downtime"] and found["baseline_at_full_rate"]
    assert found["lost"] > 0 and found["longest_gap_s"] > 1, found
    assert found["time_to_full_rate_s"] is not None and found["ok"]
    assert (found["prediction"]["predicted_down"], found["prediction"]["went_down"],
            found["prediction"]["held"]) == ([first], [first], True)
    [(_, second)] = servers_of(conn, STACK)
    assert second != first

    same = upgrade("--to", "1.1.1")
    found = same["outage"]
    assert same["plan"]["downtime"] == [] and found["baseline_at_full_rate"]
    assert found["sent"] > 0 and found["lost"] == 0, found
    assert found["prediction"]["held"] is True and found["prediction"]["went_down"] == []
    assert [sid for _, sid in servers_of(conn, STACK)] == [second]


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


def test_the_watcher_heals_a_killed_guest_and_a_guest_that_stopped_forwarding(conn: Any, chain: str) -> None:
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
