"""Benchmark of the day-0 tier: throughput on the namespace chain, and for the VM tier the time from boot to
tunnel up of two gateway VMs booted from their config drives. Prints figures, asserts nothing about time.
Needs root and tools/debs/day0.txt.

The vRouter's ACL is measured as a ratio to plain forwarding on the same chain: the only difference between
the arms is whether the ACL tables are loaded (``nft -f`` of the file the vRouter's setup compiled, or of
an empty replacement); the arms alternate round by round (the first arm rotates), after a warm-up round,
so load from other users of the machine falls on every arm alike. By default (``--method toggle``) the
arms take turns every ``--period`` seconds within one iperf3 run (a sample: the receiving interface's
bytes over the arm's period, counted after its tables are loaded), which pairs samples a second apart;
``--method runs`` gives each sample its own iperf3 run of ``--seconds``. The ratio is the median of the
per-round ratios (ACL / plain of the same round). Rule sets: the template's 20 rules, and generated ones of
the same kinds (MAC, VLAN, IP prefixes, TCP/UDP ports, one ICMP rate limit per side) with more rules,
rendered by the template like the 20. ``--old REV`` adds an arm with the chain-walk ACL of the vrouter hook
at that git revision (its acl.nft.in filled with the same rules); ``--control`` the plain arm a second time,
whose ratio shows what the comparison reads between identical arms on this machine at this moment.

Run: .venv/bin/python tests/bench/bench_day0.py [--method toggle|runs] [--period 1] [--seconds 5]
     [--samples 10] [--rules 20,100,1000] [--streams 1,4] [--old REV] [--control] [--conntrack]
     [--pin C,S] [--no-tunnel] [--no-vm] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from nfvcat.day0 import chain as c  # noqa: E402
from nfvcat.day0.netns import Lab, run  # noqa: E402
from nfvcat.day0.vmpair import IMAGE, boot_pair  # noqa: E402
from nfvcat.images import lab as lab_images  # noqa: E402

NO_TABLES = ("table netdev vrouter_l2\ndelete table netdev vrouter_l2\n"
             "table inet vrouter_l3\ndelete table inet vrouter_l3\n"
             "table inet bench_ct\ndelete table inet bench_ct\n")
# what a stateful design pays first: connection tracking of every forwarded packet
CONNTRACK = ("table inet bench_ct {\n  chain ct_forward {\n    type filter hook forward priority -10; policy accept;\n"
             "    ct state invalid counter drop\n  }\n}\n")
ACL_PARAMETERS = ("acl_left_l2", "acl_right_l2", "acl_forward")


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def iperf(lab: Lab, client_ns: str, server_ns: str, server_ip: str, seconds: int, work: Path,
          streams: int = 1, pin: str = "") -> float:
    """Gbit/s received, ``streams`` parallel TCP streams, ``seconds`` long (the first second omitted);
    ``pin``: iperf3 -A (client CPU, server CPU)."""
    server = lab.spawn(["ip", "netns", "exec", server_ns, "iperf3", "-s", "-1", "-B", server_ip],
                       work / f"iperf-{server_ip}.log")
    time.sleep(0.5)
    try:
        out = run(["ip", "netns", "exec", client_ns, "iperf3", "-c", server_ip, "-t", str(seconds), "-O", "1",
                   "-P", str(streams), "-J", *(["-A", pin] if pin else [])], timeout=seconds + 30).stdout
    finally:
        lab.stop(server)
    return float(json.loads(out)["end"]["sum_received"]["bits_per_second"]) / 1e9


def generated_acl(n: int) -> dict[str, list[str]]:
    """``n`` rules of the template's kinds in its proportions (per side a quarter of the rules: L2 2/5 MAC
    source, 1/5 MAC destination, 2/5 VLAN; forward 1/4 each source prefix, multicast-free destination
    prefix, TCP port, UDP port, and the ICMP rate limit). No value matches the benchmark's traffic
    (10.10.x.x, TCP 5201 and ephemeral ports, untagged frames, the veths' MAC addresses)."""
    quarter = n // 4
    l2: dict[str, list[str]] = {}
    for side, s in (("left", 0), ("right", 1)):
        mac_src, mac_dst = quarter * 2 // 5, quarter // 5
        vlans = quarter - mac_src - mac_dst
        l2[side] = ([f"ether saddr 02:00:01:{s:02x}:{i >> 8:02x}:{i & 255:02x} counter drop" for i in range(mac_src)]
                    + [f"ether daddr 01:00:5e:7f:{s:02x}:{i:02x} counter drop" for i in range(mac_dst)]
                    + [f"vlan id {100 + s * 2000 + i} counter drop" for i in range(vlans)])
    forward = []
    for side, s in (("@LEFT@", 0), ("@RIGHT@", 1)):
        each = (n - 2 * quarter) // 2 - 1  # this side's forward rules but its rate limit
        k = each // 4
        forward += ([f"iifname {side} ip saddr 100.{64 + s}.{i >> 8}.{i & 255}/32 counter drop" if i >= 256 else
                     f"iifname {side} ip saddr 100.{64 + s}.{i}.0/24 counter drop" for i in range(k)]
                    + [f"iifname {side} ip daddr 198.{18 + s}.{i}.0/24 counter drop" for i in range(k)]
                    + [f"iifname {side} tcp dport {100 + i} counter drop" for i in range(k)]
                    + [f"iifname {side} udp dport {100 + i} counter drop" for i in range(each - 3 * k)]
                    + [f"iifname {side} ip protocol icmp limit rate over 1000/second counter drop"])
    return {"acl_left_l2": l2["left"], "acl_right_l2": l2["right"], "acl_forward": forward}


def old_acl(rev: str, acl: dict[str, list[str]], left: str, right: str) -> str:
    """The chain-walk ACL of the vrouter hook at git revision ``rev``, filled with ``acl``, as one nft -f
    transaction replacing the tables."""
    text = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:hooks/vrouter/user-data.yaml"],
                          capture_output=True, text=True, check=True).stdout
    files = {f["path"]: f["content"] for f in yaml.safe_load(text)["write_files"]}
    template = files["/etc/vrouter/acl.nft.in"]
    placeholders = ("__ACL_LEFT_L2__", "__ACL_RIGHT_L2__", "__ACL_FORWARD__")
    for name, placeholder in zip(ACL_PARAMETERS, placeholders, strict=True):
        template = template.replace(placeholder, "\n    ".join(acl[name]))
    return NO_TABLES + template.replace("@LEFT@", left).replace("@RIGHT@", right)


@dataclass
class Arm:
    name: str
    nft: Path  # loaded before each sample of the arm
    samples: list[float] = field(default_factory=list)


def compare(chain: c.Chain, arms: list[Arm], samples: int, seconds: int, streams: int, work: Path,
            target: tuple[str, str], pin: str = "") -> list[list[float]]:
    """Rounds of one sample per arm (one warm-up round first, discarded); arm order rotates by round."""
    rounds: list[list[float]] = []
    for r in range(samples + 1):
        values: dict[str, float] = {}
        for k in range(len(arms)):
            arm = arms[(r + k) % len(arms)]
            chain.sh("vr", f"nft -f {arm.nft}")
            values[arm.name] = iperf(chain.lab, chain.ns["sa"], chain.ns[target[0]], target[1], seconds, work,
                                     streams, pin)
        if r == 0:
            continue
        for arm in arms:
            arm.samples.append(values[arm.name])
        rounds.append([values[a.name] for a in arms])
    return rounds


COUNTER = r"""
import sys
f = open(sys.argv[1])
for _ in sys.stdin:
    f.seek(0)
    sys.stdout.write(f.read())
    sys.stdout.flush()
"""


def toggle(chain: c.Chain, arms: list[Arm], samples: int, period: float, streams: int, work: Path,
           target: tuple[str, str], rx: str, pin: str = "") -> list[list[float]]:
    """One iperf3 run; the arms take turns every ``period`` seconds (loaded, then the receiving interface's
    byte counter read at the start and end of the arm's period), in rounds whose order rotates; a warm-up
    round first (and iperf3's own first seconds), discarded. Samples are Gbit/s over each period."""
    ns, ip = chain.ns[target[0]], target[1]
    length = 3 + (samples + 1) * len(arms) * (period + 0.5) * 2  # generous: iperf3 is stopped at the end
    server = chain.lab.spawn(["ip", "netns", "exec", ns, "iperf3", "-s", "-1", "-B", ip], work / "iperf-toggle.log")
    reader = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c", COUNTER,
                               f"/sys/class/net/{rx}/statistics/rx_bytes"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    ask, answer = reader.stdin, reader.stdout
    assert ask is not None and answer is not None

    def rx_bytes() -> int:
        ask.write("\n")
        ask.flush()
        return int(answer.readline())

    time.sleep(0.5)
    client = chain.lab.spawn(["ip", "netns", "exec", chain.ns["sa"], "iperf3", "-c", ip, "-t", str(int(length)),
                              "-P", str(streams), *(["-A", pin] if pin else [])], work / "iperf-toggle-client.log")
    rounds: list[list[float]] = []
    try:
        time.sleep(2)  # TCP ramp-up
        for r in range(samples + 1):
            values: dict[str, float] = {}
            for k in range(len(arms)):
                arm = arms[(r + k) % len(arms)]
                chain.sh("vr", f"nft -f {arm.nft}")
                b0, t0 = rx_bytes(), time.monotonic()
                time.sleep(period)
                b1, t1 = rx_bytes(), time.monotonic()
                values[arm.name] = (b1 - b0) * 8 / (t1 - t0) / 1e9
            if client.poll() is not None:
                raise RuntimeError(f"iperf3 ended early: {(work / 'iperf-toggle-client.log').read_text()[-400:]}")
            if r == 0:
                continue
            for arm in arms:
                arm.samples.append(values[arm.name])
            rounds.append([values[a.name] for a in arms])
    finally:
        chain.lab.stop(client)
        chain.lab.stop(server)
        ask.close()
        reader.wait(5)
    return rounds


def spread(values: list[float]) -> str:
    return f"{min(values):.3f}-{max(values):.3f}"


def middle_half(values: list[float]) -> str:
    q1, _, q3 = statistics.quantiles(values, n=4)
    return f"{q1:.3f}-{q3:.3f}"


def acl_bench(chain: c.Chain, work: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    results = []
    plain_nft = work / "plain.nft"
    plain_nft.write_text(NO_TABLES)
    root = chain.vnfs["vr"].root
    for n in args.rules:
        acl = None if n == 20 else generated_acl(n)
        t0 = time.monotonic()
        day0 = c.reconfigure_vrouter(chain, acl)
        setup = time.monotonic() - t0
        rules = {name: list(day0.parameters[name]) for name in ACL_PARAMETERS}
        count = sum(len(v) for v in rules.values())
        new_nft = work / f"acl-{n}.nft"
        new_nft.write_text(NO_TABLES + (root / "etc/vrouter/acl.nft").read_text())
        arms = [Arm("plain", plain_nft), Arm("acl", new_nft)]
        if args.control:  # the plain arm once more: what the comparison reads between identical arms
            arms.append(Arm("control", plain_nft))
        if args.conntrack:
            ct_nft = work / f"ct-{n}.nft"
            ct_nft.write_text(new_nft.read_text() + CONNTRACK)
            arms.append(Arm("acl+ct", ct_nft))
        if args.old:
            old_nft = work / f"old-{n}.nft"
            old_nft.write_text(old_acl(args.old, rules, chain.ifname[("vr", "left")],
                                         chain.ifname[("vr", "right")]))
            arms.append(Arm("old", old_nft))
        print(f"\n{count} ACL rules ({'template defaults' if acl is None else 'generated'}); render, compile "
              f"and load by the vRouter's setup: {setup:.1f} s", flush=True)
        for streams in args.streams:
            for arm in arms:
                arm.samples = []
            if args.method == "runs":
                rounds = compare(chain, arms, args.samples, args.seconds, streams, work, ("ga", c.GWA_LAN),
                                 args.pin)
                how = f"one iperf3 run of {args.seconds} s per sample"
            else:
                rounds = toggle(chain, arms, args.samples, args.period, streams, work, ("ga", c.GWA_LAN),
                                chain.ifname[("ga", "lan")], args.pin)
                how = f"one iperf3 run, arms toggled every {args.period:g} s"
            print(f"  iperf3 -P {streams}, {how}, {len(rounds)} rounds + 1 warm-up; Gbit/s median (min-max):")
            for arm in arms:
                print(f"    {arm.name:<6} {statistics.median(arm.samples):8.3f} ({spread(arm.samples)})")
            row: dict[str, Any] = {"rules": count, "streams": streams, "method": args.method,
                                   "seconds": args.seconds if args.method == "runs" else args.period,
                                   **{f"{a.name}_gbps": a.samples for a in arms}}
            for i, arm in enumerate(arms[1:], 1):
                ratios = [r[i] / r[0] for r in rounds]
                label = {"acl": "acl ratio", "control": "control ratio (plain again)"}.get(arm.name,
                                                                                      f"{arm.name} ratio")
                print(f"  {label}: {statistics.median(ratios):.3f} (median of {len(ratios)}; "
                      f"spread {spread(ratios)}, middle half {middle_half(ratios)})", flush=True)
                row[f"{arm.name}_ratios"] = ratios
            results.append(row)
    chain.sh("vr", f"nft -f {plain_nft}")
    return results


def tunnel_bench(chain: c.Chain, work: Path, args: argparse.Namespace) -> None:
    """Plain forwarding (to gateway A's LAN address) and through the tunnel (to site B), alternated."""
    plain, tunnel = [], []
    for r in range(args.samples + 1):
        pair = [iperf(chain.lab, chain.ns["sa"], chain.ns["ga"], c.GWA_LAN, args.seconds, work),
                iperf(chain.lab, chain.ns["sa"], chain.ns["sb"], c.SITE_B_HOST, args.seconds, work)]
        if r:
            plain.append(pair[0])
            tunnel.append(pair[1])
    ratios = [t / p for t, p in zip(tunnel, plain, strict=True)]
    print(f"\nIPsec tunnel (gateway A -> B), iperf3 -P 1: {statistics.median(tunnel):.3f} Gbit/s "
          f"({spread(tunnel)}) vs plain {statistics.median(plain):.3f} ({spread(plain)}); "
          f"tunnel ratio: {statistics.median(ratios):.3f} (median of {len(ratios)})")


def namespace_chain(lab: Lab, work: Path, args: argparse.Namespace) -> None:
    chain = c.build(lab, work)
    esp = "kernel ESP" if chain.kernel_esp else "kernel-libipsec (user-space ESP in UDP 4500)"
    print(f"namespace chain built: render {chain.timings['render']:.1f} s, tunnel up in "
          f"{chain.timings['tunnel up']:.2f} s after the gateways' setup ({esp})", flush=True)
    results = acl_bench(chain, work, args)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    if not args.no_tunnel:
        tunnel_bench(chain, work, args)


def vm_tier(lab: Lab, work: Path) -> None:
    t0 = time.monotonic()
    image = lab_images.image(IMAGE, print)
    built = f"built in {image.seconds:.0f} s" if image.seconds else "from cache"
    print(f"guest image {IMAGE} {image.recipe.version}: {built} ({time.monotonic() - t0:.0f} s)")
    pair = boot_pair(lab, image, work)
    for side, vm in pair.vms.items():
        m = vm.wait_for(r"NFVCAT-PROBE tunnel-up uptime=([\d.]+)", 900)
        day0 = vm.wait_for(r"day-0 done after ([\d.]+) s", 60)
        print(f"gateway {side}: day-0 done at guest uptime {float(day0.group(1)):.0f} s, tunnel up at guest uptime "
              f"{float(m.group(1)):.0f} s, {time.monotonic() - vm.started:.0f} s after QEMU start")


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--method", choices=("toggle", "runs"), default="toggle",
                        help="ACL arms: toggled within one iperf3 run every --period (default), or one iperf3 run "
                             "of --seconds per sample")
    parser.add_argument("--period", type=float, default=1.0, help="seconds per sample with --method toggle")
    parser.add_argument("--seconds", type=int, default=5,
                        help="iperf3 duration per sample with --method runs, and of the tunnel figure (default 5)")
    parser.add_argument("--samples", type=int, default=10, help="samples per arm after the warm-up (default 10)")
    parser.add_argument("--rules", type=_ints, default=[20, 100, 1000],
                        help="ACL sizes, comma-separated (20 = the template's defaults; default 20,100,1000)")
    parser.add_argument("--streams", type=_ints, default=[1, 4],
                        help="iperf3 parallel streams, comma-separated (default 1,4)")
    parser.add_argument("--old", metavar="REV", help="also measure the chain-walk ACL of the vrouter hook at REV")
    parser.add_argument("--control", action="store_true",
                        help="also measure the plain arm a second time, as a control (its ratio is the noise)")
    parser.add_argument("--conntrack", action="store_true",
                        help="also measure the ACL with connection tracking of the forwarded packets on")
    parser.add_argument("--pin", metavar="C,S", default="",
                        help="iperf3 -A C,S: client on CPU C, server on CPU S (default: the scheduler places them)")
    parser.add_argument("--no-tunnel", action="store_true", help="skip the IPsec tunnel figure")
    parser.add_argument("--no-vm", action="store_true", help="skip the VM tier")
    parser.add_argument("--json", metavar="FILE", help="write the ACL samples and ratios to FILE")
    args = parser.parse_args()
    if args.samples < 5:
        parser.error("--samples: at least 5 per arm")
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupt)
    with tempfile.TemporaryDirectory(prefix="nfvcat-bench-day0-") as tmp:
        lab = Lab()
        try:
            namespace_chain(lab, Path(tmp), args)
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
