"""Ethernet frames built byte by byte: an IPv4/UDP frame (optionally 802.1Q tagged) with its checksums,
and the frame sizes and weights of the RFC 2544 / IMIX test methods."""

from __future__ import annotations

import ipaddress
import struct

FCS = 4  # the Ethernet frame sizes of RFC 2544 include the 4-byte FCS, which the NIC (here: veth) adds
# IMIX weights of the source documents, by frame size on the wire (bytes including FCS)
IMIX_IPV4 = ((64, 3), (100, 26), (256, 6), (570, 5), (1300, 6), (1518, 17))
IMIX_IPV6 = ((128, 29), (256, 6), (570, 5), (1300, 6), (1518, 17))
MIN_FRAME, MAX_FRAME = 64, 1518
HEADERS = 14 + 20 + 8  # Ethernet, IPv4, UDP


def mac_bytes(mac: str) -> bytes:
    return bytes.fromhex(mac.replace(":", ""))


def checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def udp_frame(dst_mac: str, src_mac: str, src_ip: str, dst_ip: str, dport: int, payload: bytes,
              vlan: int | None = None, sport: int = 40000) -> bytes:
    """An Ethernet II IPv4/UDP frame without FCS (UDP checksum 0: none, as IPv4 allows)."""
    udp = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0,
                         ipaddress.IPv4Address(src_ip).packed, ipaddress.IPv4Address(dst_ip).packed)
    header = header[:10] + struct.pack("!H", checksum(header)) + header[12:]
    eth = mac_bytes(dst_mac) + mac_bytes(src_mac)
    if vlan is not None:
        eth += struct.pack("!HH", 0x8100, vlan)
    return eth + struct.pack("!H", 0x0800) + header + udp


def icmp_echo_frame(dst_mac: str, src_mac: str, src_ip: str, dst_ip: str, size: int, ident: int,
                    seq: int = 1) -> bytes:
    """An Ethernet II IPv4 ICMP echo request of ``size`` bytes on the wire (FCS included), with its checksums."""
    if not MIN_FRAME <= size <= MAX_FRAME:
        raise ValueError(f"frame size {size} outside {MIN_FRAME}..{MAX_FRAME}")
    payload = bytes((i * 7) & 0xFF for i in range(size - FCS - 14 - 20 - 8))
    icmp = struct.pack("!BBHHH", 8, 0, 0, ident, seq) + payload
    icmp = icmp[:2] + struct.pack("!H", checksum(icmp)) + icmp[4:]
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(icmp), 1, 0, 64, 1, 0,
                         ipaddress.IPv4Address(src_ip).packed, ipaddress.IPv4Address(dst_ip).packed)
    header = header[:10] + struct.pack("!H", checksum(header)) + header[12:]
    return mac_bytes(dst_mac) + mac_bytes(src_mac) + struct.pack("!H", 0x0800) + header + icmp


def sized_udp_frame(size: int, dst_mac: str, src_mac: str, src_ip: str, dst_ip: str, dport: int) -> bytes:
    """A UDP frame of ``size`` bytes on the wire (FCS included, so ``size - 4`` bytes are written)."""
    if not MIN_FRAME <= size <= MAX_FRAME:
        raise ValueError(f"frame size {size} outside {MIN_FRAME}..{MAX_FRAME}")
    payload = bytes((i * 7) & 0xFF for i in range(size - FCS - HEADERS))
    return udp_frame(dst_mac, src_mac, src_ip, dst_ip, dport, payload)


def imix_sequence(weights: tuple[tuple[int, int], ...] = IMIX_IPV4) -> list[int]:
    """Frame sizes in one IMIX cycle, each size as often as its weight, interleaved (largest remainder
    first) so that any window of the cycle has about the mix's proportions."""
    total = sum(w for _, w in weights)
    out: list[int] = []
    sent = {s: 0 for s, _ in weights}
    for n in range(1, total + 1):
        size = max(weights, key=lambda sw: (sw[1] * n / total - sent[sw[0]], -sw[0]))[0]
        sent[size] += 1
        out.append(size)
    return out


def mean_size(weights: tuple[tuple[int, int], ...] = IMIX_IPV4) -> float:
    return sum(s * w for s, w in weights) / sum(w for _, w in weights)
