"""VM tier: the IPsec gateway VNF, the catalog's product image (images/ipsec-gw, the cached build of its lock),
booted twice, each from its own config drive (an ISO made by ``nfvcat day0 configdrive``), forms the tunnel
with nothing but day-0 data; site A reaches site B through it, the WAN bridge carries only ESP, and the guests
report their ESP counters on the serial console. That report is the lab's probe, test instrumentation merged
into the config drive's user data (``--add-cloud-config``), not part of the image.

    site A (netns) -- br-lana -- gateway A (VM) -- br-wan -- gateway B (VM) -- br-lanb -- site B (netns)

Both gateways boot together, as a stack deploys them (NFVCAT_VM_STAGGER=<console regex> staggers them instead).
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest

from nfvcat.packaging.images import obtain as lab_images
from nfvcat.packaging.images.build import Built
from nfvcat_testbeds.lab import chain as c
from nfvcat_testbeds.lab import probe
from nfvcat_testbeds.lab.netns import Lab
from nfvcat_testbeds.lab.qemu import Vm
from nfvcat_testbeds.lab.vmpair import IMAGE, STAGGER, Pair, boot_pair
from tests.conftest import nfvcat
from tests.day0 import traffic as t

# the product image under TCG on a loaded 2-core machine: cloud-init started 270-420 s after power-on, and
# one cold run hit 600 s as cloud-init's network stage was only starting (a wait limit, not a timed assertion)
TUNNEL_TIMEOUT = float(os.environ.get("NFVCAT_VM_TIMEOUT", "1500"))


def _cli_iso(params: dict[str, str], iso: Path) -> None:
    """The config drive exactly as ``nfvcat day0 configdrive`` makes it, the lab's probe added."""
    probe_file = iso.with_name(probe.FILENAME)
    probe_file.write_text(probe.CLOUD_CONFIG)
    args = [a for k, v in params.items() for a in ("-P", f"{k}={v}")]
    proc = nfvcat("day0", "configdrive", "vnf-ipsec-gw", *args, "--add-cloud-config", str(probe_file),
                  "-o", str(iso))
    assert proc.returncode == 0, proc.stderr


@pytest.fixture(scope="module")
def pair(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> tuple[Pair, Built, float]:
    t0 = time.monotonic()
    image = lab_images.image(IMAGE, lambda msg: print(f"[day0] {msg}", flush=True))
    image_seconds = time.monotonic() - t0
    stagger = os.environ.get("NFVCAT_VM_STAGGER", STAGGER or "none")
    pair = boot_pair(lab, image, Path(tmp_path_factory.mktemp("vms")), _cli_iso,
                     stagger=None if stagger == "none" else stagger, stagger_timeout=TUNNEL_TIMEOUT)
    return pair, image, image_seconds


def _counters(vm: Vm) -> dict[str, int]:
    lines = [line for line in vm.console_text().splitlines() if "NFVCAT-PROBE counters" in line]
    if not lines:
        return {}
    return {k: int(v) for k, v in re.findall(r"(bytes-in|packets-in|bytes-out|packets-out)=(\d+)", lines[-1])}


def test_two_gateways_form_the_tunnel_from_their_config_drives(pair: tuple[Pair, Built, float], lab: Lab,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    gw, image, image_seconds = pair
    vms = gw.vms
    up = {}
    for side, vm in vms.items():
        m = vm.wait_for(r"NFVCAT-PROBE tunnel-up uptime=([\d.]+)", TUNNEL_TIMEOUT)
        up[side] = (float(m.group(1)), time.monotonic() - vm.started)
    for vm in vms.values():
        # Debian's strongswan.service may load the files cloud-init's init stage wrote before the hook's own
        # setup runs in the final stage: the tunnel can be up before the day-0 is done.
        vm.wait_for(r"NFVCAT-IPSEC-GW-READY", TUNNEL_TIMEOUT)
        vm.wait_for(r"nfvcat ipsec-gw day-0 done after", 120)
        ds = vm.wait_for(r"NFVCAT-PROBE datasource .*", 30).group(0)
        assert "config-disk" in ds, ds  # cloud-init read the config drive (ConfigDrive, /dev/sr0)
        # the VNF's day-0 data and the probe's, merged: cloud-init done without module errors
        status = vm.wait_for(r"NFVCAT-CLOUD-INIT status: (\S+)", 120)
        result = json.loads(vm.wait_for(r"NFVCAT-CLOUD-INIT result (\{.*\})", 30).group(1))["v1"]
        assert status.group(1) == "done" and result["errors"] == [], (vm.name, status.group(0), result)

    cap = t.Capture(lab, gw.net, "br-wan", gw.workdir / "wan.pcap")
    try:
        warm = lab.sh(gw.site_a, f"ping -c 3 -i 0.5 -W 3 {c.SITE_B_HOST}", check=False, timeout=60)
        ping = lab.sh(gw.site_a, f"ping -c 10 -i 0.3 -W 3 -p 6e667663 {c.SITE_B_HOST}", check=False,
                      timeout=90)
    finally:
        frames = cap.stop()
    assert " 0% packet loss" in ping.stdout, warm.stdout + ping.stdout
    kinds = [t.classify(f) for f in frames]
    assert kinds.count("esp") >= 20, kinds  # 10 requests + 10 replies, in kernel ESP (no NAT, no encap)
    assert not [k for k in kinds if k not in {"esp", "ike", "arp", "ipv6"}], sorted(set(kinds))
    assert b"nfvcnfvcnfvc" not in b"".join(frames), "plaintext on the WAN bridge"

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ca, cb = _counters(vms["a"]), _counters(vms["b"])
        if min(ca.get("packets-out", 0), cb.get("packets-in", 0), cb.get("packets-out", 0),
               ca.get("packets-in", 0)) >= 13:
            break
        time.sleep(2)
    assert ca.get("packets-out", 0) >= 13 and ca.get("packets-in", 0) >= 13, ca
    assert cb.get("packets-in", 0) >= 13 and cb.get("packets-out", 0) >= 13, cb
    with capsys.disabled():
        built = image.seconds
        print(f"\n[day0] image {IMAGE} {image.recipe.version} sha256 {image.lock.sha256[:12]}: "
              f"{f'built in {built:.0f} s' if built else 'from cache'} ({image_seconds:.0f} s)")
        for side, (uptime, wall) in up.items():
            print(f"[day0] gateway {side}: tunnel up at guest uptime {uptime:.0f} s, {wall:.0f} s after QEMU start")
        print(f"[day0] ESP counters A {ca} B {cb}")
