"""Benchmark of the day-0 tier: throughput on the namespace chain (plain kernel forwarding, through the
vRouter with its rendered ACLs, through the IPsec tunnel of the rendered gateways), each as a ratio to
plain; and, for the VM tier, the time from boot to tunnel up of two gateway VMs booted from their config
drives. Prints figures, asserts nothing about time. Needs root and tools/debs/day0.txt.

Run: .venv/bin/python tests/bench/bench_day0.py [--seconds 5] [--no-vm]
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from nfvcat.day0 import chain as c  # noqa: E402
from nfvcat.day0.image import ensure_image  # noqa: E402
from nfvcat.day0.netns import Lab, run  # noqa: E402
from nfvcat.day0.vmpair import boot_pair  # noqa: E402


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def iperf(lab: Lab, client_ns: str, server_ns: str, server_ip: str, seconds: int, work: Path) -> float:
    """Gbit/s received, one TCP stream, ``seconds`` long (the first second omitted)."""
    server = lab.spawn(["ip", "netns", "exec", server_ns, "iperf3", "-s", "-1", "-B", server_ip],
                       work / f"iperf-{server_ip}.log")
    time.sleep(0.5)
    try:
        out = run(["ip", "netns", "exec", client_ns, "iperf3", "-c", server_ip, "-t", str(seconds), "-O", "1", "-J"],
                  timeout=seconds + 30).stdout
    finally:
        lab.stop(server)
    return float(json.loads(out)["end"]["sum_received"]["bits_per_second"]) / 1e9


def namespace_chain(lab: Lab, work: Path, seconds: int) -> None:
    chain = c.build(lab, work)
    esp = "kernel ESP" if chain.kernel_esp else "kernel-libipsec (user-space ESP in UDP 4500)"
    print(f"namespace chain built: render {chain.timings['render']:.1f} s, tunnel up in "
          f"{chain.timings['tunnel up']:.2f} s after the gateways' setup ({esp})")
    acl = iperf(lab, chain.ns["sa"], chain.ns["ga"], c.GWA_LAN, seconds, work)
    tunnel = iperf(lab, chain.ns["sa"], chain.ns["sb"], c.SITE_B_HOST, seconds, work)
    chain.sh("vr", "nft delete table netdev vrouter_l2 && nft delete table inet vrouter_l3")
    plain = iperf(lab, chain.ns["sa"], chain.ns["ga"], c.GWA_LAN, seconds, work)
    print(f"{'path':<44} {'Gbit/s':>8} {'ratio':>7}")
    for name, value in (("plain forwarding (vRouter without tables)", plain),
                        ("vRouter with its 20 ACL rules", acl),
                        ("vRouter + IPsec tunnel (gateway A -> B)", tunnel)):
        print(f"{name:<44} {value:8.3f} {value / plain:7.3f}")


def vm_tier(lab: Lab, work: Path) -> None:
    t0 = time.monotonic()
    image = ensure_image()
    built = f"built in {image.built_seconds:.0f} s" if image.built_seconds else "from cache"
    print(f"guest image: {built} ({time.monotonic() - t0:.0f} s)")
    pair = boot_pair(lab, image, work)
    for side, vm in pair.vms.items():
        m = vm.wait_for(r"NFVCAT-PROBE tunnel-up uptime=([\d.]+)", 900)
        day0 = vm.wait_for(r"day-0 done after ([\d.]+) s", 60)
        print(f"gateway {side}: day-0 done at guest uptime {float(day0.group(1)):.0f} s, tunnel up at guest uptime "
              f"{float(m.group(1)):.0f} s, {time.monotonic() - vm.started:.0f} s after QEMU start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=5, help="iperf3 duration per path (default 5)")
    parser.add_argument("--no-vm", action="store_true", help="skip the VM tier")
    args = parser.parse_args()
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupt)
    with tempfile.TemporaryDirectory(prefix="nfvcat-bench-day0-") as tmp:
        lab = Lab()
        try:
            namespace_chain(lab, Path(tmp), args.seconds)
        finally:
            lab.close()
        if not args.no_vm:
            lab = Lab()
            try:
                vm_tier(lab, Path(tmp))
            finally:
                lab.close()


if __name__ == "__main__":
    main()
