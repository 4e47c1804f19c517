"""Traffic for the day-0 tier, run inside namespaces: the lab's probes (raw Ethernet frames, UDP, TCP connects,
a listener: nfvcat_testbeds.lab.sockets, which the cloud's ACL probes use too), captures and a small pcap reader."""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import time
from pathlib import Path

from nfvcat_testbeds.lab.frames import udp_frame as udp_frame
from nfvcat_testbeds.lab.netns import Lab
from nfvcat_testbeds.lab.sockets import Listener as Listener
from nfvcat_testbeds.lab.sockets import send_frames as send_frames
from nfvcat_testbeds.lab.sockets import tcp_connect as tcp_connect
from nfvcat_testbeds.lab.sockets import udp_send as udp_send


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
