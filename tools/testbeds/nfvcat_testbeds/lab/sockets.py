"""Probe traffic run inside a lab namespace (the day-0 lab's or a cloud test endpoint's): raw Ethernet frames
(AF_PACKET), UDP datagrams, TCP connects, a UDP/TCP listener that logs what arrives, and a UDP receiver that
reports each datagram's IP TOS byte (DSCP marking). Each runs as a small Python program in the namespace."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from nfvcat_testbeds.lab.netns import Lab, run

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

TOS_RX = r"""
import json, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
count, deadline = int(sys.argv[3]), time.monotonic() + float(sys.argv[4])
print("ready", flush=True)
tos = []
while len(tos) < count and time.monotonic() < deadline:
    s.settimeout(max(0.01, deadline - time.monotonic()))
    try:
        _, anc, _, _ = s.recvmsg(2048, 64)
    except socket.timeout:
        break
    tos += [d[0] for lvl, typ, d in anc if lvl == socket.IPPROTO_IP and typ == socket.IP_TOS][:1]
print(json.dumps(tos), flush=True)
"""


def send_frames(lab: Lab, ns: str, ifname: str, frames: list[bytes]) -> None:
    run(["ip", "netns", "exec", ns, sys.executable, "-c", SENDER, ifname, *(f.hex() for f in frames)])


def udp_send(lab: Lab, ns: str, dst: str, port: int, payload: str, src: str = "", count: int = 1) -> None:
    run(["ip", "netns", "exec", ns, sys.executable, "-c", UDP_SEND, dst, str(port), payload, src, str(count)])


def tcp_connect(lab: Lab, ns: str, dst: str, port: int, tag: str, timeout: float = 1.5) -> str:
    """``ok`` when the listener answered, else ``error <exception>`` (refused, timed out)."""
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


def tos_seen(lab: Lab, rx_ns: str, rx_ip: str, tx_ns: str, port: int, count: int = 10,
             wait: float = 5.0) -> list[int]:
    """The IP TOS byte of each of ``count`` UDP datagrams sent from ``tx_ns`` to ``rx_ip``:``port`` as the
    receiver's socket got them (IP_RECVTOS); the DSCP is the top six bits. Datagrams lost are missing."""
    rx = subprocess.Popen(["ip", "netns", "exec", rx_ns, sys.executable, "-c", TOS_RX, rx_ip, str(port), str(count),
                           str(wait)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert rx.stdout is not None
        if rx.stdout.readline().strip() != "ready":
            raise RuntimeError(f"TOS receiver did not start in {rx_ns}: {rx.stderr.read() if rx.stderr else ''}")
        udp_send(lab, tx_ns, rx_ip, port, "nfvcat-dscp-probe", count=count)
        out, err = rx.communicate(timeout=wait + 30)
    finally:
        if rx.poll() is None:
            rx.kill()
            rx.wait()
    lines = [line for line in out.splitlines() if line.startswith("[")]
    if not lines:
        raise RuntimeError(f"TOS receiver gave no result: {err.strip()[-300:]}")
    return [int(t) for t in json.loads(lines[-1])]
