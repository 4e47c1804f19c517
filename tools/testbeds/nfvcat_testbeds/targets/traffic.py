"""Frames through a namespace chain: netsniff-ng's ``trafgen`` sends them from the source namespace at a set
rate, frame size or IMIX mix; an nftables counter on the sink's ingress (netdev hook, before any socket)
counts and drops them. Latency: timestamped UDP probes from source to sink, one way, taken from the same
host clock (user-space send time, kernel receive time from SO_TIMESTAMPNS), optionally under trafgen load.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nfvcat_testbeds.lab import frames
from nfvcat_testbeds.lab.netns import Lab, run

LOAD_PORT, PROBE_PORT = 5001, 5002
ICMP_ID = 0x6E66  # the identifier of the generator's ICMP echo requests, which the sink counts (and no ping sends)
SINK_TABLE = "nfvcat_sink"
SETTLE = 0.2  # seconds without a new frame at the sink: the chain has drained
DRAIN_LIMIT = 5.0


@dataclass
class Endpoints:
    """Where frames enter and leave a chain."""

    src_ns: str
    src_if: str
    src_ip: str
    dst_ns: str
    dst_if: str
    dst_ip: str
    first_hop_mac: str


@dataclass
class Trial:
    """One trial: frames offered at ``rate_pps`` for about ``seconds``, what the generator sent and when,
    what the sink counted."""

    frame: str  # "64" ... "1518" or "imix"
    requested_pps: float
    sent: int
    received: int
    tx_seconds: float

    @property
    def offered_pps(self) -> float:
        return self.sent / self.tx_seconds if self.tx_seconds > 0 else 0.0

    @property
    def loss(self) -> float:
        return (self.sent - self.received) / self.sent if self.sent else 1.0

    def as_dict(self) -> dict[str, Any]:
        return {"frame": self.frame, "requested_pps": round(self.requested_pps, 1), "sent": self.sent,
                "received": self.received, "tx_seconds": round(self.tx_seconds, 6),
                "offered_pps": round(self.offered_pps, 1), "loss": round(self.loss, 6)}


def frame_sizes(frame: str) -> list[int]:
    """Sizes of one generator cycle for ``"64"``..``"1518"``, ``"imix"`` (IPv4 weights)."""
    if frame == "imix":
        return frames.imix_sequence(frames.IMIX_IPV4)
    return [int(frame)]


def mean_frame_bytes(frame: str) -> float:
    return frames.mean_size(frames.IMIX_IPV4) if frame == "imix" else float(frame)


def trafgen_config(ep: Endpoints, src_mac: str, frame: str, dport: int = LOAD_PORT, proto: str = "udp") -> str:
    """trafgen's packet configuration: one packet block per frame of the cycle (round robin); ``proto`` udp (to
    ``dport``) or icmp (echo requests of identifier ICMP_ID)."""
    blocks = []
    for size in frame_sizes(frame):
        data = (frames.icmp_echo_frame(ep.first_hop_mac, src_mac, ep.src_ip, ep.dst_ip, size, ICMP_ID)
                if proto == "icmp" else
                frames.sized_udp_frame(size, ep.first_hop_mac, src_mac, ep.src_ip, ep.dst_ip, dport))
        blocks.append("{ " + ", ".join(f"0x{b:02x}" for b in data) + " }")
    what = f"ICMP echo to {ep.dst_ip}" if proto == "icmp" else f"UDP to {ep.dst_ip}:{dport}"
    return f"# nfvcat: {frame} B {what}\n" + "\n".join(blocks) + "\n"


_SENT = re.compile(r"(\d+) packets outgoing")
_CPU = re.compile(r"(\d+) sec, (\d+) usec on CPU\d+ \((\d+) packets\)")


@dataclass
class Generator:
    lab: Lab
    ep: Endpoints
    workdir: Path
    configs: dict[str, Path] = field(default_factory=dict)
    proto: str = "udp"  # or icmp (echo requests)
    # "rate": trafgen's -b N pps, which sends N frames back to back once a second (measured: bursts of 250 frames
    # 1-2 us apart at 250 pps); "gap": -t, one frame every 1/N s, the constant rate RFC 2544 asks, as far as
    # trafgen's per-frame sleep keeps up (the shortfall shows in tx_seconds, so in offered_pps)
    pacing: str = "rate"

    def src_mac(self) -> str:
        return str(self.lab.sh(self.ep.src_ns, f"cat /sys/class/net/{self.ep.src_if}/address").stdout.strip())

    def config(self, frame: str) -> Path:
        if frame not in self.configs:
            path = self.workdir / f"trafgen-{self.ep.src_ns}-{self.proto}-{frame}.cfg"
            path.write_text(trafgen_config(self.ep, self.src_mac(), frame, proto=self.proto))
            self.configs[frame] = path
        return self.configs[frame]

    def argv(self, frame: str, rate_pps: float, seconds: float) -> list[str]:
        """trafgen at ``rate_pps`` for ``seconds`` worth of frames, cut (SIGINT: it prints its counts) a
        little after ``seconds`` when it cannot keep up with the rate."""
        count = max(1, int(rate_pps * seconds))
        return ["ip", "netns", "exec", self.ep.src_ns, "timeout", "-s", "INT", "-k", "5", f"{seconds + 0.5:.2f}",
                "trafgen", "-i", str(self.config(frame)), "-o", self.ep.src_if, "-n", str(count),
                *(["-t", f"{int(1e9 / max(1.0, rate_pps))}ns"] if self.pacing == "gap" else
                  ["-b", f"{max(1, int(rate_pps))}pps"]), "-P", "1", "-Q"]

    def send(self, frame: str, rate_pps: float, seconds: float) -> tuple[int, float]:
        """Frames sent and seconds the generator spent sending them."""
        proc = run(self.argv(frame, rate_pps, seconds), check=False, timeout=seconds + 30)
        out = proc.stdout + proc.stderr
        sent, cpu = _SENT.search(out), _CPU.search(out)
        if proc.returncode not in (0, 124) or not sent or not cpu:  # 124: cut by timeout
            raise RuntimeError(f"trafgen failed ({proc.returncode}): {out.strip()[-400:]}")
        return int(sent.group(1)), int(cpu.group(1)) + int(cpu.group(2)) / 1e6

    def start(self, frame: str, rate_pps: float, seconds: float, log: Path) -> subprocess.Popen[bytes]:
        """Background load (latency under load): ``rate_pps`` for ``seconds``."""
        return self.lab.spawn(self.argv(frame, rate_pps, seconds), log)


@dataclass
class Sink:
    """Counts (and drops) the load frames on the sink's ingress: the UDP load (rule 0) and the generator's
    ICMP echo requests (rule 1, identifier ICMP_ID: a ping's pass)."""

    lab: Lab
    ep: Endpoints

    def install(self) -> None:
        rules = (f"table netdev {SINK_TABLE}\ndelete table netdev {SINK_TABLE}\n"  # installed again: counters anew
                 f"table netdev {SINK_TABLE} {{\n  chain rx {{\n"
                 f"    type filter hook ingress device {self.ep.dst_if} priority 0; policy accept;\n"
                 f"    ip daddr {self.ep.dst_ip} udp dport {LOAD_PORT} counter drop\n"
                 f"    ip daddr {self.ep.dst_ip} icmp type echo-request icmp id {ICMP_ID} counter drop\n  }}\n}}\n")
        run(["ip", "netns", "exec", self.ep.dst_ns, "nft", "-f", "-"], input=rules)

    def count(self, proto: str = "udp") -> int:
        data = json.loads(self.lab.sh(self.ep.dst_ns, f"nft -j list chain netdev {SINK_TABLE} rx").stdout)
        counters = [int(expr["counter"]["packets"]) for item in data.get("nftables", [])
                    for expr in (item.get("rule") or {}).get("expr", [])
                    if isinstance(expr, dict) and "counter" in expr]
        if len(counters) < 2:
            raise RuntimeError(f"no counters in the sink table of {self.ep.dst_ns}")
        return counters[1] if proto == "icmp" else counters[0]


@dataclass
class Stream:
    """A TCP stream's result: goodput, the MSS, or why there is none."""

    mbps: float
    mss: int
    error: str = ""
    retransmits: int = 0  # segments the sender sent again (iperf3's count)


def tcp_stream(lab: Lab, ep: Endpoints, seconds: float, omit: float = 0, streams: int = 1) -> Stream:
    """iperf3 from the source to the sink for ``seconds`` (after ``omit`` seconds not counted), ``streams``
    TCP connections in parallel (their sum)."""
    server = lab.sh(ep.dst_ns, f"iperf3 -s -1 -D -B {ep.dst_ip}", check=False)
    time.sleep(0.3)
    client = lab.sh(ep.src_ns, f"iperf3 -c {ep.dst_ip} -t {seconds:g} -O {omit:g} -P {streams} -J "
                               "--connect-timeout 5000", check=False, timeout=seconds + omit + 60)
    try:
        doc = json.loads(client.stdout)
        return Stream(float(doc["end"]["sum_received"]["bits_per_second"]) / 1e6,
                      int(doc["start"].get("tcp_mss_default") or 0),
                      retransmits=int(doc["end"].get("sum_sent", {}).get("retransmits") or 0))
    except (ValueError, KeyError, TypeError):
        return Stream(0.0, 0, (client.stderr or client.stdout or server.stderr).strip()[-200:])


def warm_up(lab: Lab, ep: Endpoints) -> None:
    """Neighbour entries along the chain (the first frames would otherwise wait for ARP)."""
    proc = lab.sh(ep.src_ns, f"ping -c 3 -i 0.2 -W 2 {ep.dst_ip}", check=False)
    if " 0% packet loss" not in proc.stdout:
        raise RuntimeError(f"{ep.dst_ip} does not answer from {ep.src_ns}: {proc.stdout.strip()[-300:]}")


def trial(gen: Generator, sink: Sink, frame: str, rate_pps: float, seconds: float) -> Trial:
    before = sink.count(gen.proto)
    sent, tx_seconds = gen.send(frame, rate_pps, seconds)
    return Trial(frame, rate_pps, sent, settled(sink, proto=gen.proto) - before, tx_seconds)


def settled(sink: Sink, limit: float = DRAIN_LIMIT, proto: str = "udp") -> int:
    """The sink's count once frames still queued in the chain (a user-space ESP queue, say) have arrived:
    read until two reads ``SETTLE`` apart agree, at most ``limit`` seconds."""
    deadline = time.monotonic() + limit
    last = sink.count(proto)
    while time.monotonic() < deadline:
        time.sleep(SETTLE)
        now = sink.count(proto)
        if now == last:
            return now
        last = now
    return last


PROBE_RX = r"""
import json, socket, struct, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
TS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux SO_TIMESTAMPNS_OLD
s.setsockopt(socket.SOL_SOCKET, TS, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
count, deadline = int(sys.argv[3]), time.monotonic() + float(sys.argv[4])
print("ready", flush=True)
got = {}
while len(got) < count and time.monotonic() < deadline:
    s.settimeout(max(0.01, deadline - time.monotonic()))
    try:
        data, anc, _, _ = s.recvmsg(2048, 64)
    except socket.timeout:
        break
    seq, sent_ns = struct.unpack("!QQ", data[:16])
    rx = next((struct.unpack("qq", d[:16]) for lvl, typ, d in anc if typ == TS), None)
    rx_ns = rx[0] * 1_000_000_000 + rx[1] if rx else time.time_ns()
    got[seq] = rx_ns - sent_ns
print(json.dumps(list(got.values())), flush=True)
"""

PROBE_TX = r"""
import socket, struct, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
dst, port, count, gap = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
pad = b"\0" * 2
for seq in range(count):
    s.sendto(struct.pack("!QQ", seq, time.time_ns()) + pad, (dst, port))
    time.sleep(gap)
"""


@dataclass
class Latency:
    probes: int
    received: int
    load_pps: float
    samples_us: list[float]

    def as_dict(self) -> dict[str, Any]:
        s = sorted(self.samples_us)
        out: dict[str, Any] = {"probes": self.probes, "received": self.received, "load_pps": round(self.load_pps, 1),
                               "method": "one-way UDP probes, 60 B frames, user-space send time to kernel "
                                         "receive time (SO_TIMESTAMPNS), same host clock"}
        if s:
            out.update(min_us=round(s[0], 2), avg_us=round(sum(s) / len(s), 2), max_us=round(s[-1], 2),
                       p50_us=round(s[len(s) // 2], 2), p99_us=round(s[min(len(s) - 1, int(len(s) * 0.99))], 2))
        return out


def latency(gen: Generator, lab: Lab, frame: str, load_pps: float, probes: int, gap: float,
            workdir: Path) -> Latency:
    """``probes`` one-way probes every ``gap`` seconds while trafgen offers ``load_pps`` of ``frame``."""
    ep = gen.ep
    seconds = probes * gap + 1.5
    rx = subprocess.Popen(["ip", "netns", "exec", ep.dst_ns, sys.executable, "-c", PROBE_RX, ep.dst_ip,
                           str(PROBE_PORT), str(probes), str(seconds + 5)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    load = None
    try:
        assert rx.stdout is not None
        if rx.stdout.readline().strip() != "ready":
            raise RuntimeError(f"latency receiver did not start: {rx.stderr.read() if rx.stderr else ''}")
        if load_pps > 0:
            load = gen.start(frame, load_pps, seconds, workdir / "latency-load.log")
            time.sleep(0.3)
        run(["ip", "netns", "exec", ep.src_ns, sys.executable, "-c", PROBE_TX, ep.dst_ip, str(PROBE_PORT),
             str(probes), str(gap)], timeout=seconds + 30)
        out, err = rx.communicate(timeout=seconds + 30)
    finally:
        if rx.poll() is None:
            rx.kill()
            rx.wait()
        if load is not None:
            lab.stop(load)
            lab.procs.remove(load)
    lines = [line for line in out.splitlines() if line.startswith("[")]
    if not lines:
        raise RuntimeError(f"latency receiver gave no result: {err.strip()[-300:]}")
    samples = [ns / 1000 for ns in json.loads(lines[-1])]
    return Latency(probes, len(samples), load_pps, samples)
