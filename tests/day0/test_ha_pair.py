"""Namespace tier: the vRouter HA pair (templates/heat/vrouter-ha-pair) from its rendered day-0 data.

Both routers' day-0 runs in namespaces; keepalived runs from the configuration the hook wrote. Traffic from
the host to the sink goes through the VIPs; the master is stopped, the backup takes both VIPs and traffic
resumes. The failover time is measured (several samples per way of stopping, medians printed); its only
timed assertion is a generous sanity bound. A rolling upgrade of the pair (nfvcat.cloud.rolling over
``hapair.LabMembers``: roles from the routers' consoles, the backup first, the master handed over before its
upgrade) loses no more traffic than one crash failover of the same pair.
"""

from __future__ import annotations

import json
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nfvcat.cloud import rolling
from nfvcat_testbeds.lab import hapair
from nfvcat_testbeds.lab.netns import Lab

SAMPLES = 3


# the template's default advert_interval, and a sub-second one (VRRPv3)
@pytest.fixture(scope="module", params=[1.0, 0.2], ids=lambda a: f"advert{a:g}s")
def pair(lab: Lab, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[hapair.Pair]:
    advert = float(request.param)
    pair = hapair.build(lab, Path(tmp_path_factory.mktemp("hapair")), advert, suffix=str(int(advert * 100)))
    yield pair
    for router in list(pair.keepalived):
        lab.stop(pair.keepalived.pop(router))


def test_day0_configures_keepalived_from_the_parameters(pair: hapair.Pair) -> None:
    for router, peer in (("router_a", "router_b"), ("router_b", "router_a")):
        conf = (pair.vnf(router).root / "etc/keepalived/keepalived.conf").read_text()
        priority = "200" if router == "router_a" else "100"
        assert f"priority {priority}\n" in conf
        assert "virtual_router_id 51\n" in conf and f"advert_int {pair.advert:g}\n" in conf and "vrrp_version 3" in conf
        assert "interface left\n" in conf  # the data interface found by the left port's MAC
        peers = conf.split("unicast_peer {", 1)[1].split("}", 1)[0].split()
        assert peers == [hapair.ADDRESSES[peer][0]]
        assert f"{hapair.LEFT_VIP}/32 dev left" in conf and f"{hapair.RIGHT_VIP}/32 dev right" in conf
        # each state change on the console, by a script keepalived runs as root only with script security on
        global_defs = conf.split("global_defs {", 1)[1].split("}", 1)[0].splitlines()
        assert "  script_user root" in global_defs and "  enable_script_security" in global_defs
        instance = conf.split("vrrp_instance vrouter {", 1)[1].splitlines()
        assert "  notify /etc/keepalived/vrouter-notify" in instance
        notify = pair.vnf(router).root / "etc/keepalived/vrouter-notify"
        assert stat.S_IMODE(notify.stat().st_mode) == 0o755 and notify.read_text().startswith("#!/bin/sh\n")
        assert pair.systemctl_calls[router] == ["enable keepalived", "restart keepalived"]


def test_each_router_announces_its_role_on_the_console(pair: hapair.Pair) -> None:
    for router, state, priority in (("router_a", "MASTER", 200), ("router_b", "BACKUP", 100)):
        pair.wait(f"{router} announces {state}", lambda r=router, s=state: pair.role(r) == s, 5 + 5 * pair.advert)
        lines = [line for line in pair.console_since_start(router).splitlines() if "NFVCAT-VRRP" in line]
        assert lines[-1] == f"NFVCAT-VRRP state={state} instance=vrouter priority={priority}", lines
        assert rolling.role(lines[-1]) == state


def test_master_holds_the_vips_and_traffic_goes_through_it(pair: hapair.Pair) -> None:
    assert pair.holds_vips("router_a") and not pair.holds_vips("router_b")
    assert pair.reaches_sink()
    assert pair.host_gateway_mac() == pair.mac("router_a", "left")


def test_failover_moves_the_vips_and_traffic_resumes(pair: hapair.Pair, tmp_path: Path) -> None:
    samples: list[hapair.Sample] = []
    advert = pair.advert
    timeout = 10 + 5 * advert
    for i in range(SAMPLES):  # the two ways of stopping alternate
        for mode in ("crash", "stop"):
            samples.append(hapair.failover(pair, mode, tmp_path / f"ping-{mode}-{i}.log", timeout))
    figures = hapair.summary(samples)
    print(f"\nVRRP failover, advert_interval {advert:g} s, probes every {hapair.PROBE_INTERVAL * 1000:.0f} ms:")
    for s in samples:
        print(f"  {s.mode:5}  outage {s.outage:.3f} s  lost {s.lost}  backup held the VIPs after {s.takeover:.3f} s")
    print(json.dumps(figures, indent=2))
    # a crash is seen after the master-down interval (3 x advert + skew: 3.61 advert intervals at priority 100);
    # a clean stop at once (priority 0): sanity bounds only, the figures are printed
    assert figures["crash"]["max_outage_s"] < 4 * advert + 5
    assert figures["stop"]["max_outage_s"] < advert + 5
    assert all(s.outage > 0 and s.lost > 0 for s in samples if s.mode == "crash")


def test_rolling_upgrade_loses_no_more_than_one_crash_failover(pair: hapair.Pair, tmp_path: Path) -> None:
    timeout = 10 + 5 * pair.advert
    # one crash failover of the same pair, same probes: the figures the rolling upgrade must not exceed
    crash = hapair.failover(pair, "crash", tmp_path / "ping-crash.log", timeout)
    members = hapair.LabMembers(pair)
    pair.wait("router A announces MASTER, router B BACKUP",
              lambda: members.roles() == {"router_a": rolling.MASTER, "router_b": rolling.BACKUP}, timeout)
    assert pair.role("router_a") == rolling.MASTER and pair.holds_vips("router_a")
    log = tmp_path / "ping-rolling.log"
    with hapair.probes(pair, log):
        time.sleep(1.0)
        t0 = time.monotonic()
        steps = rolling.roll(members, print, timeout=timeout)
        # router A came back as a backup or a master; with its higher priority it takes the master role back
        pair.wait("router A master again", lambda: pair.role("router_a") == rolling.MASTER
                  and pair.role("router_b") == rolling.BACKUP and pair.holds_vips("router_a")
                  and not pair.holds_vips("router_b"), timeout)
        pair.wait("the host's gateway is router A", lambda: pair.host_gateway_mac() == pair.mac("router_a", "left"),
                  timeout)
        pair.wait("replies through router A", lambda: hapair.replies_flow(log) and time.monotonic() - t0 > 0.5,
                  timeout)
        total = time.monotonic() - t0
    gap, lost = hapair.gap_and_lost(log)
    print(f"\nrolling upgrade, advert_interval {pair.advert:g} s, probes every {hapair.PROBE_INTERVAL * 1000:.0f} ms, "
          f"{total:.1f} s in all:")
    for step in steps:
        print(f"  {json.dumps(step.as_dict())}")
    print(f"  rolling upgrade: longest gap {gap:.3f} s, lost {lost}")
    print(f"  one crash failover: longest gap {crash.outage:.3f} s, lost {crash.lost}")
    assert [s.member for s in steps] == ["router_b", "router_a"]  # the backup first, the master last
    assert steps[0].roles_before == {"router_a": rolling.MASTER, "router_b": rolling.BACKUP} and not steps[0].handover
    assert steps[1].handover
    assert [(what, who) for what, who, _ in members.events] == [
        ("upgrade", "router_b"), ("handover", "router_a"), ("upgrade", "router_a")]
    roles_at_upgrade_of_a = members.events[2][2]
    assert roles_at_upgrade_of_a["router_b"] == rolling.MASTER and roles_at_upgrade_of_a["router_a"] != rolling.MASTER
    assert all(members.rejoined(r) for r in hapair.SHORT) and all(s.placement == [] for s in steps)
    assert gap <= crash.outage and lost <= crash.lost
