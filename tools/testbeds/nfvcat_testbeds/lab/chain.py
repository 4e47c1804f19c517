"""The namespace chain of the day-0 tier, built from the catalog's rendered day-0 data only:

    site A host -- vRouter -- IPsec gateway A == transit == IPsec gateway B -- site B host

Each VNF gets its interfaces by the MAC addresses of its rendered network_data.json, its addresses from
the same file (what cloud-init would do), its sysctl files and its setup service (the ExecStart of the
unit runcmd enables) from the rendered cloud-config. Nothing of the VNF configuration is written here.
"""

from __future__ import annotations

import ipaddress
import json
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nfvcat.day0.render import Day0, render
from nfvcat_testbeds.lab.netns import (
    Lab,
    Vnf,
    acl_counters,
    enabled_services,
    kernel_esp_available,
    run,
    start_charon,
    sysctl_files,
)
from nfvcat_testbeds.lab.netns import write_files as write_cloud_files

PSK = "nfvcat-day0-test-psk-0123456789abcdef"
SITE_A, SITE_A_HOST, VR_LEFT = "10.10.1.0/24", "10.10.1.2", "10.10.1.1"
VR_RIGHT, GWA_LAN = "10.10.2.1", "10.10.2.2"
GWA_WAN, GWB_WAN = "172.31.0.1", "172.31.0.2"
GWB_LAN, SITE_B_HOST = "10.20.1.1", "10.20.1.2"


def vrouter_parameters(acl: dict[str, list[str]] | None = None) -> dict[str, str]:
    """The vRouter's parameters in the chain; ``acl`` gives ACL parameters (acl_left_l2, acl_right_l2,
    acl_forward: lists of rules) instead of the template's defaults."""
    return {"mgmt_port.fixed_ips.0.ip_address": "192.168.150.1", "left_fixed_ip": VR_LEFT,
            "right_fixed_ip": VR_RIGHT, "static_routes": f"10.20.0.0/16 {GWA_LAN}",
            **{name: json.dumps(rules) for name, rules in (acl or {}).items()}}


def gateway_parameters(side: str, udp_encap: bool) -> dict[str, str]:
    common = {"name": f"ipsec-gw-{side}", "psk": PSK, "udp_encap": str(udp_encap).lower(),
              "mgmt_port.fixed_ips.0.ip_address": "192.168.150.2" if side == "a" else "192.168.150.3"}
    if side == "a":
        return {**common, "role": "initiator", "peer_address": GWB_WAN, "wan_fixed_ip": GWA_WAN,
                "lan_fixed_ip": GWA_LAN, "local_subnets": "10.10.0.0/16", "remote_subnets": "10.20.0.0/16",
                "static_routes": f"{SITE_A} {VR_RIGHT}"}
    return {**common, "role": "responder", "peer_address": GWA_WAN, "wan_fixed_ip": GWB_WAN,
            "lan_fixed_ip": GWB_LAN, "local_subnets": "10.20.0.0/16", "remote_subnets": "10.10.0.0/16"}


@dataclass
class Chain:
    lab: Lab
    workdir: Path
    kernel_esp: bool
    ns: dict[str, str] = field(default_factory=dict)
    vnfs: dict[str, Vnf] = field(default_factory=dict)
    day0: dict[str, Day0] = field(default_factory=dict)
    ifname: dict[tuple[str, str], str] = field(default_factory=dict)  # (vnf, port) -> interface
    timings: dict[str, float] = field(default_factory=dict)

    def sh(self, who: str, script: str, check: bool = True, timeout: float = 60) -> Any:
        return self.lab.sh(self.ns[who], script, check=check, timeout=timeout)

    def vnf_sh(self, who: str, script: str, check: bool = True, timeout: float = 60) -> Any:
        return run(self.vnfs[who].wrap(["sh", "-c", script]), check=check, timeout=timeout)


def _port(day0: Day0, name: str) -> Any:
    return next(p for p in day0.ports if p.name == name)


def apply_network_data(chain: Chain, who: str) -> None:
    """What cloud-init does with network_data.json: address every link found by MAC address."""
    nd = chain.day0[who].network_data()
    macs = {link["id"]: link["ethernet_mac_address"] for link in nd["links"]}
    names = {}
    for line in chain.sh(who, "ip -o link").stdout.splitlines():
        parts = line.split()
        if "link/ether" in parts:
            names[parts[parts.index("link/ether") + 1]] = parts[1].rstrip(":").split("@")[0]
    for net in nd["networks"]:
        ifname = names.get(macs[net["link"]])
        if ifname is None or net["type"] != "ipv4":
            continue
        prefix = ipaddress.ip_network(f"0.0.0.0/{net['netmask']}").prefixlen
        chain.sh(who, f"ip addr add {net['ip_address']}/{prefix} dev {ifname}")
        for route in net.get("routes", []):
            dest = ipaddress.ip_network(f"{route['network']}/{route['netmask']}")
            chain.sh(who, f"ip route replace {dest} via {route['gateway']}")


def install(chain: Chain, who: str) -> None:
    vnf = chain.vnfs[who]
    vnf.prepare()
    cc = chain.day0[who].cloud_config()
    write_cloud_files(cc, vnf.root)
    for conf in sysctl_files(vnf.root):  # net.* keys are per namespace
        chain.sh(who, f"sysctl -q -p {conf}")
    apply_network_data(chain, who)


def run_services(chain: Chain, who: str) -> None:
    vnf = chain.vnfs[who]
    for command in enabled_services(chain.day0[who].cloud_config(), vnf.root):
        script = vnf.root / command.lstrip("/")
        proc = run(vnf.wrap(["sh", str(script)]), check=False, timeout=120)
        if proc.returncode != 0:
            raise RuntimeError(f"{who}: {command} failed ({proc.returncode}): {proc.stderr.strip()[-600:]}")


def build(lab: Lab, workdir: Path, kernel_esp: bool | None = None, charon_extra: str = "",
          responder_delay: float | None = None, tunnel_timeout: float | None = 30,
          vnf_parameters: dict[str, str] | None = None) -> Chain:
    """Namespaces, links, rendered day-0 applied, charon per gateway; returns when the tunnel is up.
    With ``responder_delay`` the initiator gateway is set up first and the responder that many seconds later
    (a peer that boots late); with ``tunnel_timeout=None`` it returns without waiting for the tunnel.
    ``vnf_parameters`` are added to the vRouter's day-0 parameters (e.g. empty ACL lists)."""
    if kernel_esp is None:
        kernel_esp = kernel_esp_available()
    chain = Chain(lab, workdir, kernel_esp)
    t0 = time.monotonic()
    chain.day0["vr"] = render("vnf-vrouter", parameters={**vrouter_parameters(), **(vnf_parameters or {})})
    chain.day0["ga"] = render("vnf-ipsec-gw", parameters=gateway_parameters("a", udp_encap=not kernel_esp))
    chain.day0["gb"] = render("vnf-ipsec-gw", parameters=gateway_parameters("b", udp_encap=not kernel_esp))
    chain.timings["render"] = time.monotonic() - t0
    for who in ("sa", "vr", "ga", "gb", "sb"):
        chain.ns[who] = lab.ns(who)
    for who in ("vr", "ga", "gb"):
        chain.vnfs[who] = Vnf(chain.ns[who], workdir / who)
    vr, ga, gb = chain.day0["vr"], chain.day0["ga"], chain.day0["gb"]
    lab.link(chain.ns["sa"], "eth0", chain.ns["vr"], "vr-left", None, _port(vr, "left_port").mac)
    lab.link(chain.ns["vr"], "vr-right", chain.ns["ga"], "ga-lan", _port(vr, "right_port").mac,
             _port(ga, "lan_port").mac)
    lab.link(chain.ns["ga"], "ga-wan", chain.ns["gb"], "gb-wan", _port(ga, "wan_port").mac, _port(gb, "wan_port").mac)
    lab.link(chain.ns["gb"], "gb-lan", chain.ns["sb"], "eth0", _port(gb, "lan_port").mac, None)
    chain.ifname.update({("vr", "left"): "vr-left", ("vr", "right"): "vr-right", ("ga", "lan"): "ga-lan",
                         ("ga", "wan"): "ga-wan", ("gb", "wan"): "gb-wan", ("gb", "lan"): "gb-lan"})
    chain.sh("sa", f"ip addr add {SITE_A_HOST}/24 dev eth0 && ip route add default via {VR_LEFT}")
    chain.sh("sb", f"ip addr add {SITE_B_HOST}/24 dev eth0 && ip route add default via {GWB_LAN}")
    for who in ("vr", "ga", "gb"):
        install(chain, who)
    t1 = time.monotonic()
    run_services(chain, "vr")
    chain.timings["vrouter setup"] = time.monotonic() - t1
    for who in ("gb", "ga"):  # charon runs from boot on (Debian's strongswan.service), without connections
        shim = chain.vnfs[who].shim / "systemctl"
        shim.write_text("#!/bin/sh\n# nfvcat day-0 tier: charon of this namespace runs already\n"
                        "echo \"systemctl $* (charon started by the test)\"\n")
        shim.chmod(0o755)
        start_charon(lab, chain.vnfs[who], kernel_esp, charon_extra)
    t2 = time.monotonic()
    if responder_delay is None:  # normally the responder is ready first
        for who in ("gb", "ga"):
            run_services(chain, who)
    else:  # two machines: the initiator's day-0 runs on while the responder's starts later
        errors: list[BaseException] = []

        def initiator() -> None:
            try:
                run_services(chain, "ga")
            except BaseException as exc:
                errors.append(exc)

        thread = threading.Thread(target=initiator, daemon=True)
        thread.start()
        time.sleep(responder_delay)
        t2 = time.monotonic()
        run_services(chain, "gb")
        thread.join(timeout=(tunnel_timeout or 0) + 130)
        if errors:
            raise errors[0]
    if tunnel_timeout is not None:
        wait_tunnel(chain, timeout=tunnel_timeout)
        chain.timings["tunnel up"] = time.monotonic() - t2
    return chain


def reconfigure_vrouter(chain: Chain, acl: dict[str, list[str]] | None = None) -> Day0:
    """Render the vRouter again with other ACL parameters (same ports and MAC addresses), write its files
    and run its setup service again, as a redeployment with the new parameters would."""
    macs = {f"{p.name}.mac_address": p.mac for p in chain.day0["vr"].ports}
    chain.day0["vr"] = render("vnf-vrouter", parameters={**vrouter_parameters(acl), **macs})
    write_cloud_files(chain.day0["vr"].cloud_config(), chain.vnfs["vr"].root)
    run_services(chain, "vr")
    return chain.day0["vr"]


def sas(chain: Chain, who: str) -> str:
    return str(chain.vnf_sh(who, "swanctl --list-sas --raw").stdout)


def wait_tunnel(chain: Chain, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if "state=INSTALLED" in sas(chain, "ga") and "state=INSTALLED" in sas(chain, "gb"):
            return
        time.sleep(0.1)
    log = (chain.vnfs["ga"].root / ".charon.log").read_text(errors="replace")[-2000:]
    raise RuntimeError(f"IPsec tunnel not up after {timeout} s; gateway A's charon log:\n{log}")


# --- a line of routers: the 1-VNF and 2-VNF vRouter chains (and the plain kernel forwarder they compare to) ---
#
#     source -- vRouter 1 -- ... -- vRouter N -- sink        segment k (1..N+1) is 10.30.k.0/24
#
LINE_NET = "10.30"


def line_address(segment: int, host: int) -> str:
    return f"{LINE_NET}.{segment}.{host}"


def line_vrouter_parameters(index: int, length: int, extra: dict[str, str] | None = None) -> dict[str, str]:
    """Day-0 parameters of vRouter ``index`` (1-based) of ``length``: its addresses and static routes."""
    routes = []
    if index < length:
        routes.append(f"{line_address(length + 1, 0)}/24 {line_address(index + 1, 2)}")
    if index > 1:
        routes.append(f"{line_address(1, 0)}/24 {line_address(index, 1)}")
    params = {"name": f"vrouter-{index}", "mgmt_port.fixed_ips.0.ip_address": f"192.168.150.{10 + index}",
              "left_fixed_ip": line_address(index, 2), "right_fixed_ip": line_address(index + 1, 1),
              "static_routes": ",".join(routes)}
    params.update(extra or {})
    return params


@dataclass
class Line:
    """``source`` and ``sink`` namespaces with ``length`` routers between them (VNF names ``vr1``..)."""

    chain: Chain
    length: int
    plain: bool  # kernel forwarding only, no VNF day-0

    @property
    def source_ip(self) -> str:
        return line_address(1, 1)

    @property
    def sink_ip(self) -> str:
        return line_address(self.length + 1, 2)

    @property
    def first_hop_mac(self) -> str:
        """The MAC address frames from the source are sent to (the first router's left port)."""
        out = self.chain.sh("r1", "cat /sys/class/net/left/address").stdout.strip()
        return str(out)

    @property
    def routers(self) -> list[str]:
        return [f"r{i}" for i in range(1, self.length + 1)]


def build_line(lab: Lab, workdir: Path, length: int, vnf_parameters: dict[str, str] | None = None,
               plain: bool = False, vnf: str = "vnf-vrouter", rendered: dict[str, Day0] | None = None) -> Line:
    """``length`` vRouters in series, each from its own rendered day-0 data (``vnf_parameters`` added to
    every one's, e.g. empty ACL lists; or ``rendered`` already, by ``r1``..); with ``plain`` namespaces that
    only forward (the baseline)."""
    if length < 1:
        raise ValueError("a line needs at least one router")
    chain = Chain(lab, workdir, kernel_esp=False)
    t0 = time.monotonic()
    if not plain:
        for i in range(1, length + 1):
            chain.day0[f"r{i}"] = (rendered or {}).get(f"r{i}") or render(
                vnf, parameters=line_vrouter_parameters(i, length, vnf_parameters))
    chain.timings["render"] = time.monotonic() - t0
    for who in ("src", *[f"r{i}" for i in range(1, length + 1)], "dst"):
        chain.ns[who] = lab.ns(who)
    names = ["src", *[f"r{i}" for i in range(1, length + 1)], "dst"]
    for k in range(len(names) - 1):
        left, right = names[k], names[k + 1]
        mac1 = _port(chain.day0[left], "right_port").mac if left in chain.day0 else None
        mac2 = _port(chain.day0[right], "left_port").mac if right in chain.day0 else None
        lab.link(chain.ns[left], "eth0" if left == "src" else "right", chain.ns[right],
                 "eth0" if right == "dst" else "left", mac1, mac2)
    line = Line(chain, length, plain)
    chain.sh("src", f"ip addr add {line.source_ip}/24 dev eth0 && ip route add default via {line_address(1, 2)}")
    chain.sh("dst", f"ip addr add {line.sink_ip}/24 dev eth0 && "
                    f"ip route add default via {line_address(length + 1, 1)}")
    t1 = time.monotonic()
    for i in range(1, length + 1):
        who = f"r{i}"
        if plain:
            params = line_vrouter_parameters(i, length)
            routes = " && ".join(f"ip route add {r.split()[0]} via {r.split()[1]}"
                                 for r in params["static_routes"].split(",") if r)
            chain.sh(who, f"sysctl -q -w net.ipv4.ip_forward=1 && "
                          f"ip addr add {params['left_fixed_ip']}/24 dev left && "
                          f"ip addr add {params['right_fixed_ip']}/24 dev right" + (f" && {routes}" if routes else ""))
        else:
            chain.vnfs[who] = Vnf(chain.ns[who], workdir / who)
            install(chain, who)
            run_services(chain, who)
            chain.ifname.update({(who, "left"): "left", (who, "right"): "right"})
    chain.timings["vrouter setup"] = time.monotonic() - t1
    return line


VROUTER_ACL = "usr/local/sbin/vrouter-acl"  # the vRouter's ACL compiler, under its VNF's root
ACL_TABLES = (("netdev", "vrouter_l2"), ("inet", "vrouter_l3"))  # its nftables datapath


def vnf_acl_counters(lab: Lab, ns: str, root: Path) -> dict[str, int]:
    """Packets per ACL rule id of a vRouter (namespace ``ns``, files under ``root``), whichever datapath
    holds its rules: the eBPF programs' counters and those of the tables that are loaded."""
    return acl_counters(lab, ns, ACL_TABLES, root / VROUTER_ACL)


def load_acl(chain: Chain, *options: str) -> str:
    """The chain's vRouter loads its rendered rules again with its own ``vrouter-acl --load`` (``options``:
    e.g. ``--datapath nft``); its one-line report."""
    root = chain.vnfs["vr"].root
    return str(chain.sh("vr", f"python3 {root / VROUTER_ACL} --left {chain.ifname[('vr', 'left')]} "
                              f"--right {chain.ifname[('vr', 'right')]} --load {' '.join(options)} "
                              f"{root}/etc/vrouter/acl.rules").stdout.strip())


def rendered_acl_rules(path: Path) -> list[tuple[str, str]]:
    """(ACL chain, rule) in order, from the rules file the vRouter's day-0 produced (/etc/vrouter/acl.rules:
    ``[CHAIN]`` lines, then that chain's rules; the input of vrouter-acl). A rule's id in the kernel (the
    comment of its map elements or rule) is ``CHAIN#INDEX``, INDEX counted per chain."""
    rules: list[tuple[str, str]] = []
    current = None
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if m := re.fullmatch(r"\[(\S+)\]", line):
            current = m.group(1)
        elif current and line and not line.startswith("#"):
            rules.append((current, line))
    return rules


def acl_rule_ids(rules: list[tuple[str, str]]) -> list[str]:
    """``CHAIN#INDEX`` of each rule of ``rendered_acl_rules``, as vrouter-acl names them in the kernel."""
    seen: dict[str, int] = {}
    ids = []
    for chain, _ in rules:
        ids.append(f"{chain}#{seen.get(chain, 0)}")
        seen[chain] = seen.get(chain, 0) + 1
    return ids
