"""The vRouter HA pair of the day-0 tier, from the catalog's rendered day-0 data of templates/heat/vrouter-ha-pair:

    host (10.40.1.10) -- bridge -- router A / router B -- bridge -- sink (10.40.2.10)

The host's gateway is the left VIP, the sink's the right VIP. Each router gets its interfaces by the MAC
addresses of its rendered network_data.json, its addresses from the same file, its sysctl files and its
setup service (vrouter-setup, which writes /etc/keepalived/keepalived.conf and asks systemd to start
keepalived); keepalived then runs in the router's namespace from that file, as the unit would start it.
Nothing of the VRRP configuration is written here.

A failover sample: ping from the host to the sink every 10 ms through the VIPs, stop the master (``crash``:
its data links go down and keepalived is killed, as when its server dies; ``stop``: keepalived stops
cleanly, announcing priority 0), wait until the backup holds both VIPs and replies come back; the
outage is the longest gap between two consecutive replies.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import signal
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from subprocess import Popen

from nfvcat.day0.render import Day0, render
from nfvcat_testbeds.lab.chain import Chain, install, run_services
from nfvcat_testbeds.lab.netns import Lab, Vnf, pids

HOST, SINK = "10.40.1.10", "10.40.2.10"
LEFT_VIP, RIGHT_VIP = "10.40.1.254", "10.40.2.254"
ADDRESSES = {"router_a": ("10.40.1.2", "10.40.2.2", "192.168.150.21"),
             "router_b": ("10.40.1.3", "10.40.2.3", "192.168.150.22")}
SHORT = {"router_a": "ra", "router_b": "rb"}
PROBE_INTERVAL = 0.01  # s between pings


def pair_parameters(advert_interval: float) -> dict[str, str]:
    """Parameters of the pair template in the lab, with the values Heat would resolve from the other ports
    (the VIP ports' and each router's peer's address) given as facts."""
    params = {"left_vip": LEFT_VIP, "right_vip": RIGHT_VIP, "advert_interval": f"{advert_interval:g}",
              "left_vip_port.fixed_ips.0.ip_address": LEFT_VIP,
              "right_vip_port.fixed_ips.0.ip_address": RIGHT_VIP}
    for router, (left, right, mgmt) in ADDRESSES.items():
        params[f"{router}_left_ip"] = left
        params[f"{router}_right_ip"] = right
        params[f"{router}_left_port.fixed_ips.0.ip_address"] = left
        params[f"{router}_mgmt_port.fixed_ips.0.ip_address"] = mgmt
    return params


@dataclass
class Pair:
    chain: Chain
    advert: float = 1.0  # s: advert_interval of the rendered day-0
    keepalived: dict[str, Popen[bytes]] = field(default_factory=dict)
    systemctl_calls: dict[str, list[str]] = field(default_factory=dict)

    def vnf(self, router: str) -> Vnf:
        return self.chain.vnfs[SHORT[router]]

    def day0(self, router: str) -> Day0:
        return self.chain.day0[SHORT[router]]

    def mac(self, router: str, port: str) -> str:
        return next(p.mac for p in self.day0(router).ports if p.name == f"{router}_{port}_port")

    def holds_vips(self, router: str) -> bool:
        out = self.chain.sh(SHORT[router], "ip -o -4 addr show").stdout
        return f"{LEFT_VIP}/32" in out and f"{RIGHT_VIP}/32" in out

    def host_gateway_mac(self) -> str:
        """The MAC address the host has for the left VIP (its gateway)."""
        out = self.chain.sh("h", f"ip neigh show {LEFT_VIP}").stdout
        m = re.search(r"lladdr (\S+)", out)
        return m.group(1) if m else ""

    def start_keepalived(self, router: str) -> Popen[bytes]:
        """keepalived in the router's namespace, from the configuration its day-0 wrote (foreground, VRRP only)."""
        vnf = self.vnf(router)
        conf = vnf.root / "etc/keepalived/keepalived.conf"
        if not conf.is_file():
            raise RuntimeError(f"{router}: day-0 wrote no {conf}")
        proc = self.chain.lab.spawn(vnf.wrap(["keepalived", "--dont-fork", "--log-console", "--vrrp",
                                              "--use-file", "/etc/keepalived/keepalived.conf"]),
                                    vnf.root / ".keepalived.log")
        self.keepalived[router] = proc
        return proc

    def wait(self, what: str, predicate: object, timeout: float) -> float:
        """Seconds until ``predicate()`` holds; RuntimeError with the routers' logs after ``timeout``."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if callable(predicate) and predicate():
                return time.monotonic() - t0
            time.sleep(0.02)
        logs = "\n".join(f"--- {r}\n" + (self.vnf(r).root / ".keepalived.log").read_text(errors="replace")[-1500:]
                         for r in ADDRESSES)
        raise RuntimeError(f"{what}: not after {timeout} s\n{logs}")

    def reaches_sink(self) -> bool:
        return self.chain.sh("h", f"ping -n -c 1 -W 0.3 {SINK}", check=False).returncode == 0

    def crash(self, router: str) -> None:
        """The router's server dies: its data links go down, then its keepalived is killed."""
        self.chain.sh(SHORT[router], "ip link set left down && ip link set right down")
        proc = self.keepalived.pop(router)
        # every process of the router's namespace (keepalived and its VRRP child) at once: no clean-up, no
        # priority-0 advert
        ns = self.chain.ns[SHORT[router]]
        for pid in pids(ns):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait(10)
        self.chain.lab.forget(proc)  # killed on purpose: the session lab's stray check must not count it
        deadline = time.monotonic() + 10
        while pids(ns):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{router}: processes left after SIGKILL")
            time.sleep(0.02)

    def stop(self, router: str) -> None:
        """keepalived of the router stops cleanly (SIGTERM: it announces priority 0 and drops the VIPs)."""
        self.chain.lab.stop(self.keepalived.pop(router))

    def restore(self, router: str, timeout: float) -> None:
        """The router comes back as after a reboot (no VIPs, links up, keepalived again) and, with the higher
        priority, takes the VIPs back; returns when the other router gave them up and the host's gateway
        is this router."""
        short = SHORT[router]
        self.chain.sh(short, f"ip addr del {LEFT_VIP}/32 dev left; ip addr del {RIGHT_VIP}/32 dev right; "
                             "ip link set left up && ip link set right up", check=False)
        for stale in self.vnf(router).run_dir.glob("*.pid"):  # /run is empty after a reboot
            stale.unlink()
        self.start_keepalived(router)
        others = [r for r in SHORT if r != router]
        self.wait(f"{router} master again", lambda: self.holds_vips(router)
                  and not any(self.holds_vips(r) for r in others), timeout)
        self.wait("traffic through the VIPs", self.reaches_sink, timeout)
        self.wait(f"the host's gateway is {router}", lambda: self.host_gateway_mac() == self.mac(router, "left"),
                  timeout)


def build(lab: Lab, workdir: Path, advert_interval: float, suffix: str = "") -> Pair:
    """Namespaces (their short names end in ``suffix``: several pairs in one lab), bridges, both routers'
    rendered day-0 applied, keepalived started; returns when router A holds the VIPs and the host reaches
    the sink through them."""
    chain = Chain(lab, workdir, kernel_esp=False)
    pair = Pair(chain, advert_interval)
    t0 = time.monotonic()
    params = pair_parameters(advert_interval)
    for router, short in SHORT.items():
        chain.day0[short] = render("vrouter-ha-pair", parameters=params, server=router)
    chain.timings["render"] = time.monotonic() - t0
    for who in ("h", "ra", "rb", "s"):
        chain.ns[who] = lab.ns(f"{who}{suffix}")
    for router, short in SHORT.items():
        chain.vnfs[short] = Vnf(chain.ns[short], workdir / short)
        lab.link(chain.ns["h"], f"h-{short}", chain.ns[short], "left", None, pair.mac(router, "left"))
        lab.link(chain.ns[short], "right", chain.ns["s"], f"s-{short}", pair.mac(router, "right"), None)
    for who, address, gateway in (("h", HOST, LEFT_VIP), ("s", SINK, RIGHT_VIP)):
        chain.sh(who, f"ip link add br0 type bridge && ip link set br0 up && "
                      f"for i in {who}-ra {who}-rb; do ip link set $i master br0; done && "
                      f"ip addr add {address}/24 dev br0 && ip route add default via {gateway}")
    t1 = time.monotonic()
    for router, short in SHORT.items():
        vnf = chain.vnfs[short]
        vnf.prepare()
        # systemd of the namespace: vrouter-setup's systemctl calls are recorded, keepalived started below
        shim = vnf.shim / "systemctl"
        shim.write_text("#!/bin/sh\n# nfvcat day-0 tier: the test starts the daemons\n"
                        f"echo \"$*\" >> {vnf.root / '.systemctl.calls'}\n")
        shim.chmod(0o755)
        install(chain, short)
        run_services(chain, short)
        pair.systemctl_calls[router] = (vnf.root / ".systemctl.calls").read_text().splitlines()
    chain.timings["vrouter setup"] = time.monotonic() - t1
    t2 = time.monotonic()
    for router in SHORT:
        pair.start_keepalived(router)
    pair.wait("router A master", lambda: pair.holds_vips("router_a"), 10 + 5 * advert_interval)
    pair.wait("traffic through the VIPs", pair.reaches_sink, 10)
    chain.timings["VRRP master"] = time.monotonic() - t2
    return pair


@dataclass
class Sample:
    mode: str  # crash | stop
    outage: float  # s: longest gap between two consecutive replies
    lost: int  # probes without a reply
    takeover: float  # s from the failure until the backup held both VIPs (polled every 20 ms)


def reply_times(log: str) -> list[tuple[int, float]]:
    """(icmp_seq, time) of each reply in ``ping -D`` output."""
    out = []
    for m in re.finditer(r"^\[(\d+\.\d+)\] \d+ bytes from \S+ icmp_seq=(\d+)", log, re.M):
        out.append((int(m.group(2)), float(m.group(1))))
    return out


def failover(pair: Pair, mode: str, log: Path, timeout: float) -> Sample:
    """One failover of router A to router B with traffic through the VIPs; router A is restored after."""
    chain = pair.chain
    log.write_text("")
    ping = chain.lab.spawn(["ip", "netns", "exec", chain.ns["h"], "ping", "-D", "-n", "-i", str(PROBE_INTERVAL),
                            SINK], log)
    try:
        time.sleep(1.0)
        t0 = time.monotonic()
        pair.crash("router_a") if mode == "crash" else pair.stop("router_a")
        takeover = pair.wait("router B takes the VIPs", lambda: pair.holds_vips("router_b"), timeout)
        pair.wait("replies through router B", lambda: len(reply_times(log.read_text())) > 0
                  and reply_times(log.read_text())[-1][1] > time.time() - 0.2
                  and time.monotonic() - t0 > takeover + 0.5, timeout)
        if pair.host_gateway_mac() != pair.mac("router_b", "left"):
            raise RuntimeError(f"the host's gateway MAC is {pair.host_gateway_mac()}, not router B's "
                               f"{pair.mac('router_b', 'left')}")
    finally:
        chain.lab.stop(ping)
    replies = reply_times(log.read_text())
    if len(replies) < 2:
        raise RuntimeError(f"ping got {len(replies)} replies:\n{log.read_text()[-800:]}")
    gaps = [b[1] - a[1] for a, b in itertools.pairwise(replies)]
    lost = replies[-1][0] - replies[0][0] + 1 - len(replies)
    pair.restore("router_a", timeout)
    return Sample(mode, max(gaps), lost, takeover)


def summary(samples: list[Sample]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for mode in dict.fromkeys(s.mode for s in samples):
        mine = [s for s in samples if s.mode == mode]
        out[mode] = {"samples": len(mine), "median_outage_s": statistics.median(s.outage for s in mine),
                     "min_outage_s": min(s.outage for s in mine), "max_outage_s": max(s.outage for s in mine),
                     "median_lost": statistics.median(s.lost for s in mine),
                     "median_takeover_s": statistics.median(s.takeover for s in mine)}
    return out
