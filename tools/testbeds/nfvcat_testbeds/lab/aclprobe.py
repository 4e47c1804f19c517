"""What traffic proves each rule of the vRouter's ACL (hooks/vrouter: acl_left_l2, acl_right_l2, acl_forward): one
parser of a rule into the probe that exercises it, shared by the day-0 lab's per-rule tests (tests/day0) and the
ACL probes through a cloud (:mod:`nfvcat_testbeds.targets.cloudacl`).

A probe has a kind (what field it sets), the value the rule matches, the side whose input the rule filters, and
the class of the rule: ``dropped`` (traffic it matches never arrives), ``rate-limited`` (what arrives is bounded
by its rate) or ``unknown`` (no probe: a new kind of rule).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DROPPED, RATE_LIMITED, UNKNOWN = "dropped", "rate-limited", "unknown"
KINDS = ("ether saddr", "ether daddr", "vlan id", "ip saddr", "multicast", "tcp dport", "udp dport", "icmp limit")
LIMIT = re.compile(r"\blimit rate over (\d+)/second(?: burst (\d+) packets)?")


@dataclass(frozen=True)
class RuleProbe:
    chain: str  # the ACL chain or Heat parameter the rule is in
    index: int  # its position in that chain
    rule: str
    side: str  # "left" or "right": the port whose input it filters
    kind: str  # one of KINDS, or "" (no probe known)
    value: str  # what the rule matches: a MAC, a VLAN id, a prefix, a port, a rate in packets per second
    burst: int = 5  # rate limits: the token bucket's burst in packets (nft's default 5)

    @property
    def klass(self) -> str:
        if self.kind == "icmp limit":
            return RATE_LIMITED
        return DROPPED if self.kind else UNKNOWN

    @property
    def rule_id(self) -> str:
        return f"{self.chain}#{self.index}"


def kind(rule: str) -> tuple[str, str, int]:
    """(kind, matched value, burst) of one rule; ("", "", 0) for a rule no probe knows."""
    if m := re.search(r"ether saddr (\S+)", rule):
        return "ether saddr", m.group(1), 0
    if m := re.search(r"ether daddr (\S+)", rule):
        return "ether daddr", m.group(1), 0
    if m := re.search(r"vlan id (\d+)", rule):
        return "vlan id", m.group(1), 0
    if m := re.search(r"ip saddr (\S+)", rule):
        return "ip saddr", m.group(1), 0
    if m := re.search(r"ip daddr (224\.0\.0\.0/4)", rule):
        return "multicast", m.group(1), 0
    if m := re.search(r"tcp dport (\d+)", rule):
        return "tcp dport", m.group(1), 0
    if m := re.search(r"udp dport (\d+)", rule):
        return "udp dport", m.group(1), 0
    if "ip protocol icmp" in rule and (m := LIMIT.search(rule)):
        return "icmp limit", m.group(1), int(m.group(2) or 5)
    return "", "", 0


def side(chain: str, rule: str, left: str = "@LEFT@", right: str = "@RIGHT@") -> str | None:
    """The side whose input ``rule`` filters: its chain's (acl_left_*, acl_right_*) or its ``iifname``'s."""
    for name, iface in (("left", left), ("right", right)):
        if re.search(rf"_{name}_", f"_{chain}_") or re.search(rf'iifname "?{re.escape(iface)}(?![\w-])', rule):
            return name
    return None


def probes(chains: dict[str, list[str]], left: str = "@LEFT@", right: str = "@RIGHT@") -> list[RuleProbe]:
    """Every rule of ``chains`` (chain or parameter name -> rules in order) with its probe; a rule of no side
    is kept with side "" (its probe cannot be aimed)."""
    out = []
    for chain, rules in chains.items():
        for i, rule in enumerate(rules):
            k, value, burst = kind(rule)
            out.append(RuleProbe(chain, i, rule, side(chain, rule, left, right) or "", k, value, burst or 5))
    return out
