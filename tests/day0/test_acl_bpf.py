"""Namespace tier (root: bpf(2)): the vRouter's eBPF ACL programs, compiled by the hook's own vrouter-acl and
run by the kernel on crafted frames (BPF_PROG_TEST_RUN, no traffic): the verdict and the rule that counts
each frame are what the rules mean in nftables, for what the namespace chain's traffic does not carry:
IPv6 with extension headers, later fragments, VLAN tags still in the frame, ranges of MACs, VLANs and ports,
a rate limit, an accept rule, an output interface, the router's own packets."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import ipaddress
import os
import struct
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

HOOK = Path(__file__).resolve().parents[2] / "hooks" / "vrouter" / "vrouter-acl"
CMD_TEST_RUN = 10
PASS, DROP = 0xFFFFFFFF, 2  # TCX_NEXT (-1), TCX_DROP
IF = {"eth1": 101, "eth2": 102, "lo": 1}  # names the rules use -> indexes the programs compare (lo: a real device)
RULES = {
    "acl_left_in": [
        "ether saddr 02:00:00:00:00:01 counter drop",
        "vlan id 100-199 counter drop",
        "ether daddr 01:80:c2:00:00:00-01:80:c2:00:00:0f counter drop",
    ],
    "acl_right_in": [],
    "acl_forward": [
        "iifname eth1 ip6 saddr 2001:db8:1::/48 counter drop",
        "iifname eth1 tcp dport 22 counter drop",
        "iifname eth1 udp dport 1000-2000 counter accept",
        "iifname eth1 udp dport 1500 counter drop",
        "iifname eth1 ip protocol icmp limit rate over 1/second counter drop",
        "oifname lo ip daddr 10.9.0.0/16 counter drop",
    ],
}
MAC_A, MAC_B = "02:00:00:00:00:0a", "02:00:00:00:00:0b"


@pytest.fixture(scope="module")
def acl() -> ModuleType:
    if os.geteuid() != 0:
        pytest.fail("the day-0 tier runs as root (bpf(2))")
    loader = importlib.machinery.SourceFileLoader("vrouter_acl", str(HOOK))
    spec = importlib.util.spec_from_loader("vrouter_acl", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def programs(acl: ModuleType) -> dict[str, Any]:
    chains = {chain: list(enumerate(rules)) for chain, rules in RULES.items()}
    loaded, counters = acl.compile_bpf(chains, {"acl_left_in": "eth1", "acl_right_in": "eth2"}, IF, ["lo"])
    try:
        yield {"l2": loaded[(IF["eth1"], "ingress")], "fwd": loaded[(IF["lo"], "egress")], "counters": counters}
    finally:
        for fd in [*loaded.values(), counters]:
            os.close(fd)


def mac(text: str) -> bytes:
    return bytes(int(b, 16) for b in text.split(":"))


def eth(payload: bytes, ethertype: int, dst: str = MAC_B, src: str = MAC_A, vlan: int | None = None) -> bytes:
    tag = struct.pack("!HH", 0x8100, vlan) if vlan is not None else b""
    return mac(dst) + mac(src) + tag + struct.pack("!H", ethertype) + payload


def ip4(proto: int, l4: bytes, src: str = "10.1.0.5", dst: str = "10.2.0.5", frag: int = 0) -> bytes:
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), 1, frag, 64, proto, 0,
                         ipaddress.IPv4Address(src).packed, ipaddress.IPv4Address(dst).packed)
    return eth(header + l4, 0x0800)


def ip6(proto: int, l4: bytes, src: str = "2001:db8:2::5", exts: tuple[tuple[int, bytes], ...] = ()) -> bytes:
    """IPv6 with extension headers ``exts`` = (header type, its body after next-header and length)."""
    chain, body = [*(t for t, _ in exts), proto], b""
    for (_, ext), following in zip(exts, chain[1:], strict=True):
        body += bytes([following, (len(ext) + 2) // 8 - 1]) + ext
    first = chain[0]
    header = struct.pack("!IHBB16s16s", 6 << 28, len(body) + len(l4), first, 64,
                         ipaddress.IPv6Address(src).packed, ipaddress.IPv6Address("2001:db8:9::9").packed)
    return eth(header + body + l4, 0x86DD)


def tcp(dport: int) -> bytes:
    return struct.pack("!HHIIBBHHH", 40000, dport, 0, 0, 0x50, 0x02, 1024, 0, 0)


def udp(dport: int) -> bytes:
    return struct.pack("!HHHH", 40000, dport, 12, 0) + b"test"


ICMP = b"\x08\x00\x00\x00\x00\x01\x00\x01"


def run(acl: ModuleType, prog: int, frame: bytes, iif: int = 0, ifindex: int = 1) -> int:
    """The program's return value on ``frame`` (ctx: ingress_ifindex ``iif``, device ``ifindex``)."""
    _data, data_addr = acl._ptr(frame)
    _out, out_addr = acl._ptr(len(frame) + 256)
    ctx = bytearray(192)  # struct __sk_buff
    struct.pack_into("=II", ctx, 36, iif, ifindex)
    _ctx, ctx_addr = acl._ptr(bytes(ctx))
    _, attr = acl.bpf_attr(CMD_TEST_RUN, struct.pack("=IIIIQQIIIIQQ", prog, 0, len(frame), len(frame) + 256,
                                                     data_addr, out_addr, 1, 0, len(ctx), 0, ctx_addr, 0))
    return int(struct.unpack_from("=I", attr, 4)[0])


def counts(acl: ModuleType, fd: int) -> dict[str, int]:
    ncpu = acl.possible_cpus()
    rids = [f"{chain}#{i}" for chain, rules in RULES.items() for i in range(len(rules))]
    out = {}
    for slot, rid in enumerate(rids):
        value = acl.map_lookup(fd, struct.pack("=I", slot), 8 * ncpu)
        if packets := sum(struct.unpack(f"={ncpu}Q", value)):
            out[rid] = packets
    return out


def test_l2_chain(acl: ModuleType, programs: dict[str, Any]) -> None:
    """MAC, VLAN range (tag in the frame) and MAC range rules, in order; other frames pass uncounted."""
    l2, before = programs["l2"], counts(acl, programs["counters"])
    frame = ip4(17, udp(9))[14:]  # an IPv4 packet
    cases = [
        (eth(frame, 0x0800, src="02:00:00:00:00:01", vlan=150), DROP),  # the MAC rule comes first
        (eth(frame, 0x0800, vlan=150), DROP),
        (eth(frame, 0x0800, vlan=200), PASS),
        (eth(frame, 0x0800, dst="01:80:c2:00:00:0e"), DROP),
        (eth(frame, 0x0800, dst="01:80:c2:00:00:10"), PASS),
        (eth(frame, 0x0800), PASS),
        (b"\x00" * 13, PASS),  # shorter than an Ethernet header
    ]
    assert [run(acl, l2, f, ifindex=1) for f, _ in cases[:-1]] == [v for _, v in cases[:-1]]
    with pytest.raises(OSError):  # the kernel does not run a program on less than a header; nothing counted
        run(acl, l2, cases[-1][0])
    after = counts(acl, programs["counters"])
    assert {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)} == {
        "acl_left_in#0": 1, "acl_left_in#1": 1, "acl_left_in#2": 1}


def test_forward_chain(acl: ModuleType, programs: dict[str, Any]) -> None:
    """Routed packets (an input interface) leaving through lo: IPv6 prefixes, TCP and UDP ports over IPv4 and
    over IPv6 behind extension headers, later fragments (no ports), an accept before a drop, the output
    interface; the router's own packets are not the forward chain's."""
    fwd, eth1, eth2, before = programs["fwd"], IF["eth1"], IF["eth2"], counts(acl, programs["counters"])
    hbh, dst_opts = (0, bytes(6)), (60, bytes(14))
    cases = [
        (ip6(17, udp(9), src="2001:db8:1::5"), eth1, DROP, "acl_forward#0"),
        (ip6(17, udp(9), src="2001:db8:1::5"), eth2, PASS, None),  # that rule is for eth1 only
        (ip4(6, tcp(22)), eth1, DROP, "acl_forward#1"),
        (ip6(6, tcp(22), exts=(hbh, dst_opts)), eth1, DROP, "acl_forward#1"),
        (ip6(6, tcp(22), exts=((44, struct.pack("!HI", 0, 7)),)), eth1, DROP, "acl_forward#1"),  # first fragment
        (ip6(6, tcp(22), exts=((44, struct.pack("!HI", 8 << 3, 7)),)), eth1, PASS, None),  # a later one
        (ip4(6, tcp(22), frag=100), eth1, PASS, None),  # a later IPv4 fragment: no ports
        (ip4(6, tcp(22)), 0, PASS, None),  # the router's own packet
        (ip4(17, udp(1500)), eth1, PASS, "acl_forward#2"),  # accepted by the range before the drop of 1500
        (ip4(17, udp(2001)), eth1, PASS, None),
        (ip4(17, udp(9), dst="10.9.3.4"), eth2, DROP, "acl_forward#5"),  # no input interface named: every one
        (ip4(17, udp(9), dst="10.9.3.4"), eth1, DROP, "acl_forward#5"),
    ]
    got = [(run(acl, fwd, f, iif=i), r) for f, i, _, r in cases]
    assert [g for g, _ in got] == [v for _, _, v, _ in cases]
    want: dict[str, int] = {}
    for *_, rid in cases:
        if rid:
            want[rid] = want.get(rid, 0) + 1
    after = counts(acl, programs["counters"])
    assert {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)} == want


def test_rate_limit(acl: ModuleType, programs: dict[str, Any]) -> None:
    """``limit rate over 1/second``: as nft's limit, a bucket of 5 packets (the default burst), full at first;
    the packets over it are the rule's (dropped, counted), the others go on to the next rules."""
    fwd, before = programs["fwd"], counts(acl, programs["counters"]).get("acl_forward#4", 0)
    verdicts = [run(acl, fwd, ip4(1, ICMP), iif=IF["eth1"]) for _ in range(8)]
    assert verdicts == [PASS] * 5 + [DROP] * 3
    assert counts(acl, programs["counters"])["acl_forward#4"] - before == 3
    assert run(acl, fwd, ip4(1, ICMP), iif=IF["eth2"]) == PASS  # the rule is for eth1 only
