"""Namespace tier: the vRouter HA pair (templates/heat/vrouter-ha-pair) from its rendered day-0 data.

Both routers' day-0 runs in namespaces; keepalived runs from the configuration the hook wrote. Traffic from
the host to the sink goes through the VIPs; the master is stopped, the backup takes both VIPs and traffic
resumes. The failover time is measured (several samples per way of stopping, medians printed); the only
timed assertion is a generous sanity bound.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

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
        assert pair.systemctl_calls[router] == ["enable keepalived", "restart keepalived"]


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
