"""vrouter-acl, the ACL compiler the vrouter hook writes into the guest: run as the guest runs it (python3
on a rules file), from the hook's own write_files. Loading the output into a kernel and sending packets
through it is the day-0 tier's work (tests/day0/test_acl_order.py, test_netns_chain.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from nfvcat.day0.userdata import file_content

HOOK = Path(__file__).resolve().parents[2] / "hooks" / "vrouter" / "user-data.yaml"
SOURCE = HOOK.parent / "vrouter-acl"


@pytest.fixture(scope="module")
def compiler(tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = {f["path"]: f for f in yaml.safe_load(HOOK.read_text())["write_files"]}
    item = files["/usr/local/sbin/vrouter-acl"]
    assert item["permissions"] == "0755"
    path = Path(tmp_path_factory.mktemp("hook")) / "vrouter-acl"
    assert item["encoding"] == "gz+b64"  # hooks/vrouter/vrouter-acl, compressed
    assert file_content(item) == SOURCE.read_bytes(), (
        "hooks/vrouter/user-data.yaml does not hold hooks/vrouter/vrouter-acl: run nfvcat.day0.userdata.embed")
    path.write_bytes(file_content(item))
    return path


def compile_acl(compiler: Path, tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    rules = tmp_path / "acl.rules"
    rules.write_text(text)
    return subprocess.run([sys.executable, str(compiler), "--left", "vr-left", "--right", "vr-right", str(rules)],
                          capture_output=True, text=True, check=False)


def output(compiler: Path, tmp_path: Path, text: str) -> str:
    proc = compile_acl(compiler, tmp_path, text)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def chain_body(nft: str, chain: str) -> list[str]:
    m = re.search(rf"\n  chain {chain} {{\n(.*?)\n  }}", nft, re.S)
    assert m, nft
    return [line.strip() for line in m.group(1).splitlines() if not line.strip().startswith(("type ", "#"))]


def elements(nft: str, name: str) -> list[str]:
    m = re.search(rf"\n  map {name} {{\n.*?elements = {{\n(.*?)\n    }}", nft, re.S)
    assert m, f"no map {name} in\n{nft}"
    return [e.strip().rstrip(",") for e in m.group(1).splitlines()]


def test_the_hook_renders_its_rules_file_and_setup_compiles_it() -> None:
    data = yaml.safe_load(HOOK.read_text())
    files = {f["path"]: f["content"] for f in data["write_files"]}
    rules = files["/etc/vrouter/acl.rules.in"]
    assert [line.strip() for line in rules.splitlines() if line.strip().startswith("[")] == [
        "[acl_left_in]", "[acl_right_in]", "[acl_forward]"]
    setup = files["/usr/local/sbin/vrouter-setup"]
    assert 'vrouter-acl" --left "$LEFT" --right "$RIGHT" /etc/vrouter/acl.rules > /etc/vrouter/acl.nft' in setup
    assert ('ACL_LOADED=$(python3 "$(dirname "$0")/vrouter-acl" --left "$LEFT" --right "$RIGHT" '
            '--load /etc/vrouter/acl.rules)') in setup


def test_one_map_per_kind_and_the_rate_limit_stays_a_rule(compiler: Path, tmp_path: Path) -> None:
    nft = output(compiler, tmp_path, """[acl_left_in]
  ether saddr 02:00:00:0b:ad:01 counter drop
  ether saddr 02:00:00:0b:ad:02 counter drop
  vlan id 4000 counter drop
[acl_forward]
  iifname vr-left ip saddr 192.0.2.0/24 counter drop
  iifname vr-left tcp dport 23 counter drop
  iifname vr-left udp dport 161 counter drop
  iifname vr-left ip protocol icmp limit rate over 1000/second counter drop
  iifname vr-right ip saddr 198.51.100.0/24 counter drop
""")
    assert chain_body(nft, "acl_left_in") == ["ether saddr vmap @acl_left_in_1", "vlan id vmap @acl_left_in_2"]
    assert elements(nft, "acl_left_in_1") == ['02:00:00:0b:ad:01 comment "acl_left_in#0" : drop',
                                              '02:00:00:0b:ad:02 comment "acl_left_in#1" : drop']
    assert "acl_right_in" not in nft, "no rules, no hook"
    assert chain_body(nft, "acl_forward") == ["iifname vmap @acl_forward_6"]
    assert elements(nft, "acl_forward_6") == ['"vr-left" : goto acl_forward_if1', '"vr-right" : goto acl_forward_if2']
    assert chain_body(nft, "acl_forward_if1") == [
        "ip saddr vmap @acl_forward_if1_3", "meta l4proto . th dport vmap @acl_forward_if1_4",
        'iifname vr-left ip protocol icmp limit rate over 1000/second counter drop comment "acl_forward#3"']
    assert elements(nft, "acl_forward_if1_4") == ['6 . 23 comment "acl_forward#1" : drop',
                                                  '17 . 161 comment "acl_forward#2" : drop']
    assert elements(nft, "acl_forward_if2_5") == ['198.51.100.0/24 comment "acl_forward#4" : drop']
    for name in re.findall(r"\n  map (\S+) {", nft):  # every element counts, but the dispatch's
        block = nft.split(f"map {name} {{", 1)[1].split("\n  }", 1)[0]
        assert ("\n    counter" in block) == (name != "acl_forward_6"), name
    assert nft.index("delete table netdev vrouter_l2") < nft.index("table netdev vrouter_l2 {")


def test_first_match_wins_within_a_map(compiler: Path, tmp_path: Path) -> None:
    """An earlier entry keeps its whole key; a later overlapping one only what is left, or nothing."""
    nft = output(compiler, tmp_path, """[acl_forward]
  ip saddr 10.1.0.0/16 counter drop
  ip saddr 10.0.0.0/8 counter accept
  ip saddr 10.1.2.0/24 counter accept
""")
    assert elements(nft, "acl_forward_1") == [
        '10.1.0.0/16 comment "acl_forward#0" : drop',
        '10.0.0.0/16 comment "acl_forward#1" : accept',
        '10.2.0.0-10.255.255.255 comment "acl_forward#1" : accept']
    assert "# acl_forward#2 is covered by earlier rules of its kind: it can never match" in nft
    assert "flags interval" in nft


def test_kinds_keep_their_order(compiler: Path, tmp_path: Path) -> None:
    """Interleaved kinds with different verdicts: one lookup per run of a kind, runs in rule order."""
    nft = output(compiler, tmp_path, """[acl_left_in]
  ether saddr 02:00:00:0b:ad:01 counter accept
  vlan id 4000 counter drop
  ether saddr 02:00:00:0b:ad:02 counter drop
  vlan id 4001 counter drop
""")
    assert chain_body(nft, "acl_left_in") == [
        "ether saddr vmap @acl_left_in_1", "vlan id vmap @acl_left_in_2", "ether saddr vmap @acl_left_in_3",
        "vlan id vmap @acl_left_in_4"]
    assert elements(nft, "acl_left_in_1") == ['02:00:00:0b:ad:01 comment "acl_left_in#0" : accept']
    assert elements(nft, "acl_left_in_3") == ['02:00:00:0b:ad:02 comment "acl_left_in#2" : drop']


def test_several_fields_are_one_concatenated_key(compiler: Path, tmp_path: Path) -> None:
    nft = output(compiler, tmp_path, """[acl_forward]
  ip saddr 10.0.0.0/8 tcp dport { 22, 80-88 } counter drop
  tcp dport 22 ip saddr 10.9.0.0/16 counter accept comment "never: the first covers it"
  ip saddr 10.0.0.0/8 udp dport 53 accept
""")
    assert chain_body(nft, "acl_forward") == ["ip saddr . meta l4proto . th dport vmap @acl_forward_1"]
    assert elements(nft, "acl_forward_1") == [
        '10.0.0.0/8 . 6 . 22 comment "acl_forward#0" : drop',
        '10.0.0.0/8 . 6 . 80-88 comment "acl_forward#0" : drop',
        '10.0.0.0/8 . 17 . 53 comment "acl_forward#2" : accept']
    assert "# acl_forward#1 is covered" in nft


def test_rules_no_map_holds_stay_rules_in_place(compiler: Path, tmp_path: Path) -> None:
    nft = output(compiler, tmp_path, """[acl_forward]
  iifname vr-left ip saddr 192.0.2.0/24 counter drop
  ip saddr != 10.0.0.0/8 log prefix "acl " drop
  ct state invalid counter drop comment "no ct in the fast path"
  ip saddr 198.51.100.0/24 drop
  iifname "vr-*" tcp dport 23 drop
""")
    kept = ['ip saddr != 10.0.0.0/8 log prefix "acl " counter drop comment "acl_forward#1"',
            'ct state invalid counter drop comment "acl_forward#2 no ct in the fast path"']
    wildcard = 'iifname "vr-*" tcp dport 23 counter drop comment "acl_forward#4"'  # not one interface: everywhere
    assert chain_body(nft, "acl_forward_if1") == ["ip saddr vmap @acl_forward_if1_1", *kept,
                                                  "ip saddr vmap @acl_forward_if1_2", wildcard]
    assert chain_body(nft, "acl_forward") == ["iifname vmap @acl_forward_3", *kept, "ip saddr vmap @acl_forward_4",
                                              wildcard]


def test_rules_without_interface_go_to_every_branch(compiler: Path, tmp_path: Path) -> None:
    nft = output(compiler, tmp_path, """[acl_forward]
  ip daddr 224.0.0.0/4 drop
  iifname vr-left tcp dport 23 drop
  iifname vr-right tcp dport 25 drop
""")
    assert chain_body(nft, "acl_forward_if1") == ["ip daddr vmap @acl_forward_if1_1",
                                                  "meta l4proto . th dport vmap @acl_forward_if1_2"]
    assert elements(nft, "acl_forward_if2_3") == ['224.0.0.0/4 comment "acl_forward#0" : drop']
    assert chain_body(nft, "acl_forward") == ["iifname vmap @acl_forward_5", "ip daddr vmap @acl_forward_6"]


@pytest.mark.parametrize("text, message", [
    ("ether saddr 02:00:00:00:00:01 drop\n", "acl.rules:1: a rule before any [chain] line"),
    ("[acl_backward]\n", "acl.rules:1: unknown chain 'acl_backward'"),
])
def test_bad_input_is_one_line(compiler: Path, tmp_path: Path, text: str, message: str) -> None:
    proc = compile_acl(compiler, tmp_path, text)
    assert proc.returncode != 0
    assert proc.stderr.strip().endswith(message) and "Traceback" not in proc.stderr, proc.stderr


def test_protocol_names_without_etc_protocols(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default image has no /etc/protocols (no netbase): getprotobyname() knows no name there, and
    ``tcp dport 23`` was kept as a rule of its own (and held the eBPF datapath back). The common names are
    the compiler's own, with the numbers /etc/protocols gives where it exists."""
    import importlib.machinery
    import importlib.util
    import socket

    loader = importlib.machinery.SourceFileLoader("vrouter_acl", str(SOURCE))
    spec = importlib.util.spec_from_loader("vrouter_acl", loader)
    assert spec is not None
    acl = importlib.util.module_from_spec(spec)
    loader.exec_module(acl)
    for name, number in acl.PROTOCOLS.items():
        try:
            assert socket.getprotobyname(name) == number, name
        except OSError:
            assert name == "icmpv6"  # nft's name, not /etc/protocols' (ipv6-icmp)

    def nothing(name: str) -> int:
        raise OSError("protocol not found")

    monkeypatch.setattr(acl.socket, "getprotobyname", nothing)
    key, boxes, verdict = acl.parse("tcp dport 23 counter drop")
    assert (key, boxes, verdict) == (("meta l4proto", "th dport"), [((6, 6), (23, 23))], "drop")
    assert acl.parse("ip protocol icmp counter drop")[1] == [((1, 1),)]
