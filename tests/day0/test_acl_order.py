"""Namespace tier: the vRouter's ACL, as eBPF programs and as nftables verdict maps, keeps first-match-wins
where entries overlap across kinds and within a kind, with different verdicts. Every probe's counter deltas
(which rule counted it, for all rules at once) are the same with the eBPF programs and the compiled maps as
with the same rules walked one by one in plain chains (the ACL before vrouter 2.0.0), and the ones written
here."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from nfvcat_testbeds.lab import chain as c
from tests.day0 import traffic as t

N = 3
ACL = {
    "acl_left_l2": [
        "ether saddr 02:00:00:0b:ad:01 counter accept",
        "vlan id 4000 counter drop",
        "ether saddr 02:00:00:0b:ad:02 counter drop",
    ],
    "acl_right_l2": [],
    "acl_forward": [
        "iifname @LEFT@ ip saddr 10.77.1.64/26 counter accept",
        "iifname @LEFT@ ip saddr 10.77.1.0/24 counter drop",
        "iifname @LEFT@ udp dport 7002 counter accept",
        "iifname @LEFT@ ip daddr 10.10.2.2 counter drop",
        "iifname @LEFT@ ip daddr 10.10.2.0/24 counter accept",
        "ip saddr 10.78.0.0/16 counter drop",
        "iifname @RIGHT@ ip saddr 10.78.0.0/16 counter accept",
    ],
}
# probe: (side, frame fields) -> the one rule that counts it
PROBES = [
    ("left", {"src_mac": "02:00:00:0b:ad:01", "vlan": 4000}, "acl_left_in#0"),  # accept before the VLAN drop
    ("left", {"src_mac": "02:00:00:0b:ad:02", "vlan": 4000}, "acl_left_in#1"),  # VLAN drop before the MAC drop
    ("left", {"src_mac": "02:00:00:0b:ad:02"}, "acl_left_in#2"),
    ("left", {"src_ip": "10.77.1.70"}, "acl_forward#0"),  # in the /26 accept, before the /24 drop
    ("left", {"src_ip": "10.77.1.5"}, "acl_forward#1"),
    ("left", {"dport": 7002}, "acl_forward#2"),  # port accept before the address drop
    ("left", {}, "acl_forward#3"),
    ("left", {"dst_ip": "10.10.2.3"}, "acl_forward#4"),  # the /24 accept around the /32 drop
    ("left", {"src_ip": "10.78.0.9", "dst_ip": c.SITE_B_HOST}, "acl_forward#5"),  # no interface, from the left
    ("right", {"src_ip": "10.78.0.9"}, "acl_forward#5"),  # and from the right: #6 can never match
]


def walk_acl(chain: c.Chain) -> str:
    """The same rules as plain chain rules (one by one, first match wins), each with its id as comment."""
    rules = {k: [r.replace("@LEFT@", "vr-left").replace("@RIGHT@", "vr-right") for r in v] for k, v in ACL.items()}

    def body(name: str, hook: str, key: str) -> str:
        lines = "".join(f'    {r} comment "{name}#{i}"\n' for i, r in enumerate(rules[key]))
        return f"  chain {name} {{\n    {hook}\n{lines}  }}\n"

    return ("table netdev vrouter_l2\ndelete table netdev vrouter_l2\ntable inet vrouter_l3\n"
            "delete table inet vrouter_l3\ntable netdev vrouter_l2 {\n"
            + body("acl_left_in", 'type filter hook ingress device "vr-left" priority -500; policy accept;',
                   "acl_left_l2")
            + "}\ntable inet vrouter_l3 {\n"
            + body("acl_forward", "type filter hook forward priority filter; policy accept;", "acl_forward")
            + "}\n")


@pytest.fixture(scope="module")
def compiled(chain: c.Chain) -> Iterator[Path]:
    c.reconfigure_vrouter(chain, ACL)
    # the probe to 10.10.2.3 (no such host) must leave the router: the eBPF programs see routed packets as they
    # leave, where the forward hook saw them before the next hop's address was resolved
    mac = chain.lab.sh(chain.ns["ga"], "cat /sys/class/net/ga-lan/address").stdout.strip()
    chain.sh("vr", f"ip neigh replace 10.10.2.3 lladdr {mac} dev vr-right nud permanent")
    try:
        yield chain.vnfs["vr"].root / "etc/vrouter/acl.nft"
    finally:
        chain.sh("vr", "ip neigh del 10.10.2.3 dev vr-right")
        c.reconfigure_vrouter(chain, None)  # the template's defaults again, for the other tests


def probe_deltas(chain: c.Chain) -> list[dict[str, int]]:
    vr = chain.day0["vr"]
    router_mac = {p.name: p.mac for p in vr.ports}
    sides = {"left": (chain.ns["sa"], "eth0", router_mac["left_port"], c.SITE_A_HOST, c.GWA_LAN),
             "right": (chain.ns["ga"], "ga-lan", router_mac["right_port"], c.GWA_LAN, c.SITE_A_HOST)}
    out = []
    for side, fields, _ in PROBES:
        ns, ifname, dst_mac, src_ip, dst_ip = sides[side]
        own_mac = chain.lab.sh(ns, f"cat /sys/class/net/{ifname}/address").stdout.strip()
        args: dict[str, object] = {"dst_mac": dst_mac, "src_mac": own_mac, "src_ip": src_ip, "dst_ip": dst_ip,
                                   "dport": 9999, "payload": b"acl-order", **fields}
        before = c.vnf_acl_counters(chain.lab, chain.ns["vr"], chain.vnfs["vr"].root)
        t.send_frames(chain.lab, ns, ifname, [t.udp_frame(**args)] * N)  # type: ignore[arg-type]
        after = c.vnf_acl_counters(chain.lab, chain.ns["vr"], chain.vnfs["vr"].root)
        out.append({rid: after[rid] - before.get(rid, 0) for rid in after if after[rid] != before.get(rid, 0)})
    return out


def test_compiled_maps_count_like_the_chain_walk(chain: c.Chain, compiled: Path, tmp_path: Path) -> None:
    """The same probes through the eBPF programs (what the vRouter's setup loaded on this kernel: tcx), the
    same programs as clsact filters, the nftables maps and the plain chain walk: the same rule counts each
    probe, in all four."""
    text = compiled.read_text()
    assert "# acl_forward#6 is covered by earlier rules of its kind: it can never match" in text
    assert json.loads(chain.sh("vr", f"python3 {chain.vnfs['vr'].root / c.VROUTER_ACL} --counters").stdout), \
        "the vRouter's setup did not load the eBPF datapath on this kernel"
    with_bpf = probe_deltas(chain)
    # the same programs as clsact filters, as kernels without tcx (Debian 12's 6.1) run them
    assert c.load_acl(chain, "--datapath bpf --attach tc").startswith("vrouter-acl: datapath bpf: eBPF programs (tc)")
    try:
        with_tc = probe_deltas(chain)
        assert c.load_acl(chain, "--datapath nft").startswith("vrouter-acl: datapath nft")
        with_maps = probe_deltas(chain)
        walk = tmp_path / "walk.nft"
        walk.write_text(walk_acl(chain))
        chain.sh("vr", f"nft -f {walk}")
        with_walk = probe_deltas(chain)
    finally:
        assert c.load_acl(chain).startswith("vrouter-acl: datapath bpf: eBPF programs (tcx)")
    assert with_maps == with_walk
    assert with_bpf == with_walk
    assert with_tc == with_walk
    assert with_walk == [{rid: N} for _, _, rid in PROBES]
