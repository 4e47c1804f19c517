"""Traffic for the day-0 tier, run inside namespaces: raw Ethernet frames (AF_PACKET), a UDP/TCP
listener that logs what arrives, TCP connects, and a small pcap reader."""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

from nfvcat.lab.frames import udp_frame as udp_frame
from nfvcat.lab.netns import Lab, run

LISTENER = r"""
import select, socket, sys
log = open(sys.argv[1], "a", buffering=1)
socks = []
for spec in sys.argv[2:]:
    proto, port = spec.split("/")
    if proto == "udp":
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    else:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", int(port)))
    if proto == "tcp":
        s.listen(16)
    socks.append((proto, int(port), s))
log.write("ready\n")
while True:
    ready, _, _ = select.select([s for _, _, s in socks], [], [])
    for proto, port, s in socks:
        if s not in ready:
            continue
        if proto == "udp":
            data, peer = s.recvfrom(65535)
            log.write(f"udp {port} {peer[0]} {data.decode(errors='replace')}\n")
        else:
            c, peer = s.accept()
            data = c.recv(65535)
            c.sendall(b"ok")
            c.close()
            log.write(f"tcp {port} {peer[0]} {data.decode(errors='replace')}\n")
"""

SENDER = r"""
import socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((sys.argv[1], 0))
for frame in sys.argv[2:]:
    s.send(bytes.fromhex(frame))
"""

CONNECT = r"""
import socket, sys
try:
    c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=float(sys.argv[3]))
    c.sendall(sys.argv[4].encode())
    print(c.recv(16).decode() or "closed")
except OSError as exc:
    print(f"error {type(exc).__name__}")
"""

UDP_SEND = r"""
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
if sys.argv[4]:
    s.bind((sys.argv[4], 0))
for _ in range(int(sys.argv[5])):
    s.sendto(sys.argv[3].encode(), (sys.argv[1], int(sys.argv[2])))
"""


def send_frames(lab: Lab, ns: str, ifname: str, frames: list[bytes]) -> None:
    run(["ip", "netns", "exec", ns, sys.executable, "-c", SENDER, ifname, *(f.hex() for f in frames)])


def udp_send(lab: Lab, ns: str, dst: str, port: int, payload: str, src: str = "", count: int = 1) -> None:
    run(["ip", "netns", "exec", ns, sys.executable, "-c", UDP_SEND, dst, str(port), payload, src, str(count)])


def tcp_connect(lab: Lab, ns: str, dst: str, port: int, tag: str, timeout: float = 1.5) -> str:
    return str(run(["ip", "netns", "exec", ns, sys.executable, "-c", CONNECT, dst, str(port), str(timeout), tag],
                   timeout=timeout + 10).stdout.strip())


class Listener:
    """UDP and TCP ports listened on inside a namespace; what arrived is read back from a log."""

    def __init__(self, lab: Lab, ns: str, log: Path, specs: list[str]):
        self.log = log
        self.proc = lab.spawn(["ip", "netns", "exec", ns, sys.executable, "-c", LISTENER, str(log), *specs],
                              log.with_suffix(".out"))
        deadline = time.monotonic() + 10
        while "ready" not in (log.read_text() if log.exists() else ""):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"listener in {ns} did not start: {log.with_suffix('.out').read_text()}")
            time.sleep(0.05)

    def received(self, tag: str, settle: float = 0.3) -> int:
        time.sleep(settle)
        return sum(1 for line in self.log.read_text().splitlines() if line.endswith(f" {tag}"))


class Capture:
    """tcpdump on one interface of a namespace, into a pcap file."""

    def __init__(self, lab: Lab, ns: str, ifname: str, pcap: Path):
        self.lab, self.pcap = lab, pcap
        self.proc: subprocess.Popen[bytes] = lab.spawn(
            ["ip", "netns", "exec", ns, "tcpdump", "-i", ifname, "-U", "-n", "-s", "0", "-w", str(pcap)],
            pcap.with_suffix(".log"))
        deadline = time.monotonic() + 10
        while "listening on" not in pcap.with_suffix(".log").read_text():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"tcpdump did not start: {pcap.with_suffix('.log').read_text()}")
            time.sleep(0.05)
        time.sleep(0.5)  # "listening on" comes a moment before the socket sees every frame on a loaded machine

    def stop(self) -> list[bytes]:
        time.sleep(1.0)
        self.lab.stop(self.proc)
        return read_pcap(self.pcap)


def read_pcap(path: Path) -> list[bytes]:
    data = path.read_bytes()
    magic = data[:4]
    endian = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    frames, off = [], 24
    while off + 16 <= len(data):
        _, _, caplen, _ = struct.unpack(endian + "IIII", data[off:off + 16])
        frames.append(data[off + 16:off + 16 + caplen])
        off += 16 + caplen
    return frames


def classify(frame: bytes) -> str:
    """'arp', 'ike', 'esp-in-udp', 'esp', or 'other <proto> <ports>' for one Ethernet frame."""
    ethertype = struct.unpack("!H", frame[12:14])[0]
    if ethertype == 0x0806:
        return "arp"
    if ethertype == 0x86DD:
        return "ipv6"  # link-local noise (router solicitations), no data of the chain
    if ethertype != 0x0800:
        return f"other ethertype {ethertype:#x}"
    ip = frame[14:]
    ihl = (ip[0] & 0x0F) * 4
    proto = ip[9]
    if proto == 50:
        return "esp"
    if proto == 17:
        sport, dport = struct.unpack("!HH", ip[ihl:ihl + 4])
        payload = ip[ihl + 8:]
        if 4500 in (sport, dport):
            return "ike" if payload[:4] == b"\0\0\0\0" else ("keepalive" if payload == b"\xff" else "esp-in-udp")
        if 500 in (sport, dport):
            return "ike"
        return f"other udp {sport}->{dport}"
    return f"other proto {proto}"


def nft_json(lab: Lab, ns: str) -> dict[str, object]:
    return dict(json.loads(lab.sh(ns, "nft -j list ruleset").stdout))


def local_socket_ok() -> bool:
    return hasattr(socket, "AF_PACKET")
