"""Benchmark of the day-0 tier: throughput on the namespace chain, and for the VM tier the time from boot to
tunnel up of two gateway VMs booted from their config drives. Prints figures, asserts nothing about time.
Needs root and tools/debs/day0.txt.

The vRouter's ACL is measured as a ratio to plain forwarding on the same chain: the only difference between
the arms is whether the ACL is loaded in the vRouter's namespace (``vrouter-acl --load`` of the rules the
vRouter's setup rendered, on the datapath the setup chooses: eBPF where the kernel has tcx; or ``--clear``;
same namespaces, links, offloads, routes and traffic; no connection tracking anywhere). By default
(``--method toggle``) the arms take turns within one iperf3 run
(client and server pinned to CPUs 0 and 1, ``--pin``): every other period is plain, the other arms (acl,
``--control``, ``--hooks``, ``--old``, ``--conntrack``) rotate in between, each period loads its arm's tables, waits
``--settle`` seconds and counts the receiving interface's bytes (or packets with ``--udp``) over ``--period``
seconds; a warm-up round first is discarded. A sample's ratio is its value over the mean of the two plain
periods around it, which cancels load from other users of the machine that changes slowly against a period;
the printed ratio is the median of ``--samples`` such ratios. ``--nft`` adds an arm with the same rules on
the nftables datapath (verdict maps), ``--tc`` one with the eBPF programs attached as clsact filters (as on
kernels without tcx). Every sample is also divided by the CPU time
iperf3's client and server and the ksoftirqd threads ran in it (on veth links the whole forwarding path runs
in their softirq context): that ratio is the ACL's cost on the path's own CPU, which other users' load moves
far less than the share of the CPUs the path gets. ``--method runs`` gives each sample its own iperf3 run
of ``--seconds`` instead, arms rotating by round. Rule sets: the template's 20 rules, and generated ones of
the same kinds (MAC, VLAN, IP prefixes, TCP/UDP ports, one ICMP rate limit per side) with more rules,
rendered by the template like the 20. ``--old REV`` adds an arm with the chain-walk ACL of the vrouter hook
at that git revision (its acl.nft.in filled with the same rules); ``--control`` the plain arm a second time,
whose ratio shows what the comparison reads between identical arms on this machine at this moment.

Run: .venv/bin/python tests/bench/bench_day0.py [--method toggle|runs] [--period 0.5] [--settle 0.2]
     [--seconds 5] [--samples 40] [--rules 20,100,1000] [--streams 1,4] [--udp BYTES] [--old REV] [--control]
     [--hooks] [--conntrack] [--nft] [--tc] [--pin C,S] [--no-tunnel] [--no-vm] [--json FILE]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
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

from nfvcat.packaging.images import obtain as lab_images  # noqa: E402
from nfvcat_testbeds.lab import chain as c  # noqa: E402
from nfvcat_testbeds.lab.netns import Lab, run  # noqa: E402
from nfvcat_testbeds.lab.vmpair import IMAGE, boot_pair  # noqa: E402

NO_TABLES = ("table netdev vrouter_l2\ndelete table netdev vrouter_l2\n"
             "table inet vrouter_l3\ndelete table inet vrouter_l3\n"
             "table inet bench_ct\ndelete table inet bench_ct\n")
# what a stateful design pays first: connection tracking of every forwarded packet
CONNTRACK = ("table inet bench_ct {\n  chain ct_forward {\n    type filter hook forward priority -10; policy accept;\n"
             "    ct state invalid counter drop\n  }\n}\n")
ACL_PARAMETERS = ("acl_left_l2", "acl_right_l2", "acl_forward")
# the ACL's base chains with no rule in them: what the hooks alone cost a packet
HOOKS_ONLY = ("table netdev vrouter_l2 {{\n"
              "  chain acl_left_in {{\n"
              "    type filter hook ingress device \"{left}\" priority -500; policy accept;\n  }}\n"
              "  chain acl_right_in {{\n"
              "    type filter hook ingress device \"{right}\" priority -500; policy accept;\n  }}\n"
              "}}\ntable inet vrouter_l3 {{\n"
              "  chain acl_forward {{\n    type filter hook forward priority filter; policy accept;\n  }}\n}}\n")


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
    load: str  # shell command run in the vRouter's namespace before each sample of the arm
    samples: list[float] = field(default_factory=list)
    per_cpu: list[float] = field(default_factory=list)  # the same samples per CPU-second of the path (toggle)


def compare(chain: c.Chain, arms: list[Arm], samples: int, seconds: int, streams: int, work: Path,
            target: tuple[str, str], pin: str = "") -> list[list[float]]:
    """Rounds of one sample per arm (one warm-up round first, discarded); arm order rotates by round."""
    rounds: list[list[float]] = []
    for r in range(samples + 1):
        values: dict[str, float] = {}
        for k in range(len(arms)):
            arm = arms[(r + k) % len(arms)]
            chain.sh("vr", arm.load)
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
files = [open(path) for path in sys.argv[1:]]
for _ in sys.stdin:
    values = []
    for f in files:
        f.seek(0)
        values.append(f.read().strip())
    sys.stdout.write(" ".join(values) + "\n")
    sys.stdout.flush()
"""


def ksoftirqd_pids() -> list[int]:
    pids = []
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            if comm.read_text().startswith("ksoftirqd/"):
                pids.append(int(comm.parent.name))
        except OSError:
            continue
    return pids


def cpu_seconds(pids: list[int]) -> float:
    """CPU time the tasks of ``pids`` (all threads) ran, from schedstat (ns). Without IRQ time accounting the
    softirq work done in a task's context (on veth: forwarding the sender's packets through every namespace)
    is part of that task's time."""
    total = 0
    for pid in pids:
        for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
            try:
                total += int(stat.read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue
    return total / 1e9


def irq_time_accounting() -> bool | None:
    """Whether the kernel accounts softirq time apart from the task it interrupts (then the CPU time of the
    path's tasks misses the forwarding work); None when its configuration cannot be read."""
    for path in (Path("/proc/config.gz"), Path(f"/boot/config-{platform.release()}")):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        text = gzip.decompress(data).decode() if path.suffix == ".gz" else data.decode()
        return "CONFIG_IRQ_TIME_ACCOUNTING=y" in text
    return None


def schedule(arms: list[Arm], samples: int) -> list[tuple[int, Arm]]:
    """(round, arm) per period: the reference arm (``arms[0]``, plain) every other period, the other arms
    in between, their order rotating by round; round 0 is the warm-up; a closing reference period."""
    ref, others = arms[0], arms[1:]
    slots: list[tuple[int, Arm]] = []
    for r in range(samples + 1):
        for k in range(len(others)):
            slots += [(r, ref), (r, others[(r + k) % len(others)])]
    return slots + [(samples, ref)]


def toggle(chain: c.Chain, arms: list[Arm], samples: int, period: float, settle: float, streams: int, work: Path,
           target: tuple[str, str], rx: str, pin: str = "", udp: int = 0
           ) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """One iperf3 run; the arms take turns (``schedule``): each period loads its arm's tables, waits
    ``settle`` seconds (the load's own CPU time and its wake of the flow stay out of every sample), then
    reads the receiving interface's counter at the start and end of ``period`` seconds. Samples are Gbit/s
    (TCP) or Mpps (``udp``: datagrams of that many bytes, iperf3 -u -b 0). An arm's ratio per sample is its
    value over the mean of the two reference periods around it, which cancels load that changes slowly
    against a period; the warm-up round is discarded. Each sample is also divided by the CPU time that
    iperf3's client and server and the ksoftirqd threads ran in it (the path's cost, which other users' load
    does not change as it changes the path's share of the CPUs). Returns the ratios per arm but the
    reference: of the samples, and of the samples per CPU-second."""
    ns, ip = chain.ns[target[0]], target[1]
    slots = schedule(arms, samples)
    length = 5 + len(slots) * (period + settle + 0.3) * 1.5  # generous: iperf3 is stopped at the end
    server = chain.lab.spawn(["ip", "netns", "exec", ns, "iperf3", "-s", "-1", "-B", ip], work / "iperf-toggle.log")
    stat = "rx_packets" if udp else "rx_bytes"
    reader = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c", COUNTER,
                               f"/sys/class/net/{rx}/statistics/{stat}"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    ask, answer = reader.stdin, reader.stdout
    assert ask is not None and answer is not None

    def counter() -> int:
        ask.write("\n")
        ask.flush()
        return int(answer.readline())

    traffic = ["-u", "-b", "0", "-l", str(udp)] if udp else []
    time.sleep(0.5)
    client = chain.lab.spawn(["ip", "netns", "exec", chain.ns["sa"], "iperf3", "-c", ip, "-t", str(int(length)),
                              "-P", str(streams), *traffic, *(["-A", pin] if pin else [])],
                             work / "iperf-toggle-client.log")
    values: list[float] = []
    per_cpu: list[float] = []
    try:
        time.sleep(2)  # TCP ramp-up
        path = [client.pid, server.pid, *ksoftirqd_pids()]
        for _, arm in slots:
            chain.sh("vr", arm.load)
            time.sleep(settle)
            b0, t0, c0 = counter(), time.monotonic(), cpu_seconds(path)
            time.sleep(period)
            b1, t1, c1 = counter(), time.monotonic(), cpu_seconds(path)
            amount = (b1 - b0) / 1e6 if udp else (b1 - b0) * 8 / 1e9
            values.append(amount / (t1 - t0))
            per_cpu.append(amount / max(c1 - c0, 1e-3))
            if client.poll() is not None:
                raise RuntimeError(f"iperf3 ended early: {(work / 'iperf-toggle-client.log').read_text()[-400:]}")
    finally:
        chain.lab.stop(client)
        chain.lab.stop(server)
        ask.close()
        reader.wait(5)
    ratios: dict[str, list[float]] = {a.name: [] for a in arms[1:]}
    cpu_ratios: dict[str, list[float]] = {a.name: [] for a in arms[1:]}
    for i, (r, arm) in enumerate(slots):
        if r == 0 or i == len(slots) - 1:
            continue
        arm.samples.append(values[i])
        arm.per_cpu.append(per_cpu[i])
        if arm is not arms[0]:
            ratios[arm.name].append(values[i] / ((values[i - 1] + values[i + 1]) / 2))
            cpu_ratios[arm.name].append(per_cpu[i] / ((per_cpu[i - 1] + per_cpu[i + 1]) / 2))
    return ratios, cpu_ratios


def spread(values: list[float]) -> str:
    return f"{min(values):.3f}-{max(values):.3f}"


def middle_half(values: list[float]) -> str:
    q1, _, q3 = statistics.quantiles(values, n=4)
    return f"{q1:.3f}-{q3:.3f}"


def acl_bench(chain: c.Chain, work: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    results = []
    irq_time = irq_time_accounting()
    if irq_time is not False:
        print("note: the kernel " + ("accounts softirq time apart (CONFIG_IRQ_TIME_ACCOUNTING=y)" if irq_time else
                                     "configuration is unreadable") + ": the per-CPU-second ratios may miss the "
              "forwarding work done in softirq; read the throughput ratios")
    root = chain.vnfs["vr"].root
    tool = f"python3 {root / c.VROUTER_ACL}"
    left, right = chain.ifname[("vr", "left")], chain.ifname[("vr", "right")]
    plain = f"{tool} --clear && nft -f {work / 'no-tables.nft'}"
    (work / "no-tables.nft").write_text(NO_TABLES)
    for n in args.rules:
        acl = None if n == 20 else generated_acl(n)
        t0 = time.monotonic()
        day0 = c.reconfigure_vrouter(chain, acl)
        setup = time.monotonic() - t0
        rules = {name: list(day0.parameters[name]) for name in ACL_PARAMETERS}
        count = sum(len(v) for v in rules.values())
        new_nft = work / f"acl-{n}.nft"
        new_nft.write_text(NO_TABLES + (root / "etc/vrouter/acl.nft").read_text())
        rules_file = work / f"acl-{n}.rules"
        rules_file.write_text((root / "etc/vrouter/acl.rules").read_text())
        load = f"{tool} --left {left} --right {right} --load {rules_file}"
        datapath = chain.sh("vr", load).stdout.strip()
        arms = [Arm("plain", plain), Arm("acl", load)]
        if args.control:  # the plain arm once more: what the comparison reads between identical arms
            arms.append(Arm("control", plain))
        if args.nft:
            arms.append(Arm("nft", f"{load} --datapath nft"))
        if args.tc:
            arms.append(Arm("bpf-tc", f"{load} --datapath bpf --attach tc"))
        if args.hooks:
            hooks_nft = work / "hooks.nft"
            hooks_nft.write_text(NO_TABLES + HOOKS_ONLY.format(left=chain.ifname[("vr", "left")],
                                                               right=chain.ifname[("vr", "right")]))
            arms.append(Arm("hooks", f"{plain} && nft -f {hooks_nft}"))
        if args.conntrack:
            ct_nft = work / f"ct-{n}.nft"
            ct_nft.write_text(new_nft.read_text() + CONNTRACK)
            arms.append(Arm("acl+ct", f"{plain} && nft -f {ct_nft}"))
        if args.old:
            old_nft = work / f"old-{n}.nft"
            old_nft.write_text(old_acl(args.old, rules, chain.ifname[("vr", "left")],
                                         chain.ifname[("vr", "right")]))
            arms.append(Arm("old", f"{plain} && nft -f {old_nft}"))
        print(f"\n{count} ACL rules ({'template defaults' if acl is None else 'generated'}); render, compile "
              f"and load by the vRouter's setup: {setup:.1f} s; {datapath}", flush=True)
        for streams in args.streams:
            for arm in arms:
                arm.samples, arm.per_cpu = [], []
            cpu_ratios: dict[str, list[float]] = {}
            load = os.getloadavg()[0]
            if args.method == "runs":
                rounds = compare(chain, arms, args.samples, args.seconds, streams, work, ("ga", c.GWA_LAN),
                                 args.pin)
                ratios = {arm.name: [r[i] / r[0] for r in rounds] for i, arm in enumerate(arms[1:], 1)}
                how = f"one iperf3 run of {args.seconds} s per sample, arms rotating, {len(rounds)} rounds"
            else:
                ratios, cpu_ratios = toggle(chain, arms, args.samples, args.period, args.settle, streams, work,
                                ("ga", c.GWA_LAN), chain.ifname[("ga", "lan")], args.pin, args.udp)
                how = (f"one iperf3 run, every other period plain, {args.period:g} s periods after {args.settle:g} s "
                       f"of settling, {args.samples} per arm")
            traffic = f"UDP {args.udp} B datagrams" if args.udp else "TCP"
            unit = "Mpps" if args.udp else "Gbit/s"
            print(f"  iperf3 -P {streams} {traffic}, {how} + 1 warm-up round; load average {load:.2f} -> "
                  f"{os.getloadavg()[0]:.2f}; {unit} median (min-max):")
            for arm in arms:
                cpu = (f"; {statistics.median(arm.per_cpu):.3f} {unit.split('/')[0]} per CPU-second"
                       if arm.per_cpu else "")
                print(f"    {arm.name:<7} {statistics.median(arm.samples):8.3f} ({spread(arm.samples)}){cpu}")
            row: dict[str, Any] = {"rules": count, "streams": streams, "method": args.method, "udp": args.udp,
                                   "unit": unit, "period": args.seconds if args.method == "runs" else args.period,
                                   "load": [load, os.getloadavg()[0]], **{f"{a.name}_samples": a.samples for a in arms},
                                   **{f"{a.name}_per_cpu": a.per_cpu for a in arms if a.per_cpu}}
            for arm in arms[1:]:
                values = ratios[arm.name]
                label = {"acl": "acl ratio", "control": "control ratio (plain again)"}.get(arm.name,
                                                                                      f"{arm.name} ratio")
                print(f"  {label}: {statistics.median(values):.3f} (median of {len(values)}; "
                      f"spread {spread(values)}, middle half {middle_half(values)})", flush=True)
                row[f"{arm.name}_ratios"] = values
                if cpu_ratios:
                    per_cpu = cpu_ratios[arm.name]
                    print(f"    per CPU-second: {statistics.median(per_cpu):.3f} (middle half {middle_half(per_cpu)})",
                          flush=True)
                    row[f"{arm.name}_per_cpu_ratios"] = per_cpu
            results.append(row)
    chain.sh("vr", plain)
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
    parser.add_argument("--period", type=float, default=0.5,
                        help="seconds per sample with --method toggle (default 0.5)")
    parser.add_argument("--settle", type=float, default=0.2,
                        help="seconds after loading an arm's tables before its sample starts (default 0.2)")
    parser.add_argument("--udp", type=int, default=0, metavar="BYTES",
                        help="UDP datagrams of BYTES (iperf3 -u -b 0 -l BYTES), samples in Mpps, instead of TCP")
    parser.add_argument("--seconds", type=int, default=5,
                        help="iperf3 duration per sample with --method runs, and of the tunnel figure (default 5)")
    parser.add_argument("--samples", type=int, default=40, help="samples per arm after the warm-up (default 40)")
    parser.add_argument("--rules", type=_ints, default=[20, 100, 1000],
                        help="ACL sizes, comma-separated (20 = the template's defaults; default 20,100,1000)")
    parser.add_argument("--streams", type=_ints, default=[1, 4],
                        help="iperf3 parallel streams, comma-separated (default 1,4)")
    parser.add_argument("--old", metavar="REV", help="also measure the chain-walk ACL of the vrouter hook at REV")
    parser.add_argument("--control", action="store_true",
                        help="also measure the plain arm a second time, as a control (its ratio is the noise)")
    parser.add_argument("--hooks", action="store_true",
                        help="also measure the ACL's base chains without any rule (the hooks' own cost)")
    parser.add_argument("--conntrack", action="store_true",
                        help="also measure the ACL (nftables) with connection tracking of the forwarded packets on")
    parser.add_argument("--nft", action="store_true",
                        help="also measure the same rules on the nftables datapath (verdict maps)")
    parser.add_argument("--tc", action="store_true",
                        help="also measure the eBPF programs attached as clsact filters (kernels without tcx)")
    parser.add_argument("--pin", metavar="C,S", default="0,1",
                        help="iperf3 -A C,S: client on CPU C, server on CPU S (default 0,1; '' lets the scheduler "
                             "place them)")
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
