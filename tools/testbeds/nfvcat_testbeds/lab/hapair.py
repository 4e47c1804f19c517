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

A rolling upgrade (``LabMembers``, the pair as the ``Members`` of nfvcat.cloud.rolling): each router's role is
read from its console (the hook's keepalived notify script writes ``NFVCAT-VRRP state=...`` there), a
handover stops keepalived cleanly and an upgrade brings the router back as a rebuilt server comes up, from
its day-0 rendered again.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import shutil
import signal
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from subprocess import Popen

from nfvcat.cloud import rolling
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
    started: dict[str, int] = field(default_factory=dict)  # bytes of each router's console at its keepalived's start

    def vnf(self, router: str) -> Vnf:
        return self.chain.vnfs[SHORT[router]]

    def day0(self, router: str) -> Day0:
        return self.chain.day0[SHORT[router]]

    def mac(self, router: str, port: str) -> str:
        return next(p.mac for p in self.day0(router).ports if p.name == f"{router}_{port}_port")

    def holds_vips(self, router: str) -> bool:
        out = self.chain.sh(SHORT[router], "ip -o -4 addr show").stdout
        return f"{LEFT_VIP}/32" in out and f"{RIGHT_VIP}/32" in out

    def console_since_start(self, router: str) -> str:
        """What the router's console got since its keepalived last started (the lab prints no kernel line at a
        restart, so this stands for the console since the guest's last boot)."""
        return self.vnf(router).console.read_bytes()[self.started.get(router, 0):].decode(errors="replace")

    def role(self, router: str) -> str | None:
        """The VRRP role the router's console announced since its last start (``rolling.role``)."""
        return rolling.role(self.console_since_start(router))

    def host_gateway_mac(self) -> str:
        """The MAC address the host has for the left VIP (its gateway)."""
        out = self.chain.sh("h", f"ip neigh show {LEFT_VIP}").stdout
        m = re.search(r"lladdr (\S+)", out)
        return m.group(1) if m else ""

    def start_keepalived(self, router: str) -> Popen[bytes]:
        """keepalived in the router's namespace, from the configuration its day-0 wrote (foreground, VRRP only).
        Its log goes to its output only (``--no-syslog``): there is no syslog socket here, and with
        ``--log-console`` glibc's fallback (LOG_CONS) would write each message at the start of the console file,
        over what the guest wrote there."""
        vnf = self.vnf(router)
        conf = vnf.root / "etc/keepalived/keepalived.conf"
        if not conf.is_file():
            raise RuntimeError(f"{router}: day-0 wrote no {conf}")
        self.started[router] = vnf.console.stat().st_size
        proc = self.chain.lab.spawn(vnf.wrap(["keepalived", "--dont-fork", "--log-console", "--no-syslog", "--vrrp",
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

    def restart(self, router: str) -> None:
        """The router comes back as after a reboot: no VIPs, links up, no pid file left in /run, keepalived
        started again; returns once keepalived is started, whatever role it takes."""
        short = SHORT[router]
        self.chain.sh(short, f"ip addr del {LEFT_VIP}/32 dev left; ip addr del {RIGHT_VIP}/32 dev right; "
                             "ip link set left up && ip link set right up", check=False)
        for stale in self.vnf(router).run_dir.glob("*.pid"):  # /run is empty after a reboot
            stale.unlink()
        self.start_keepalived(router)

    def restore(self, router: str, timeout: float) -> None:
        """The router comes back as after a reboot (``restart``) and, with the higher priority, takes the VIPs
        back; returns when the other router gave them up and the host's gateway is this router."""
        self.restart(router)
        others = [r for r in SHORT if r != router]
        self.wait(f"{router} master again", lambda: self.holds_vips(router)
                  and not any(self.holds_vips(r) for r in others), timeout)
        self.wait("traffic through the VIPs", self.reaches_sink, timeout)
        self.wait(f"the host's gateway is {router}", lambda: self.host_gateway_mac() == self.mac(router, "left"),
                  timeout)


def apply_day0(pair: Pair, router: str) -> None:
    """The router's rendered day-0 applied as cloud-init applies it at a first boot: its files written, its sysctl
    files and network data applied, its setup service run (vrouter-setup writes keepalived.conf; its systemctl
    calls are recorded in ``pair.systemctl_calls``, keepalived is started by the caller)."""
    short = SHORT[router]
    vnf = pair.vnf(router)
    vnf.prepare()
    # systemd of the namespace: vrouter-setup's systemctl calls are recorded
    calls = vnf.root / ".systemctl.calls"
    calls.write_text("")
    shim = vnf.shim / "systemctl"
    shim.write_text("#!/bin/sh\n# nfvcat day-0 tier: the test starts the daemons\n"
                    f"echo \"$*\" >> {calls}\n")
    shim.chmod(0o755)
    install(pair.chain, short)
    run_services(pair.chain, short)
    pair.systemctl_calls[router] = calls.read_text().splitlines()


def rebuild(pair: Pair, router: str) -> None:
    """The router's server rebuilt with the day-0 rendered again (the new version's): Nova powers the guest off
    cleanly (keepalived stops as in ``Pair.stop``, if it still runs) and boots it again with the same ports (MAC
    and IP addresses); its data links are down meanwhile, it comes back without addresses, VIPs or anything in
    /run, cloud-init applies the day-0 and keepalived starts. Returns once keepalived is started."""
    short = SHORT[router]
    if router in pair.keepalived:
        pair.stop(router)
    pair.chain.sh(short, "ip link set left down && ip link set right down && "
                         "ip addr flush dev left && ip addr flush dev right")
    run_dir = pair.vnf(router).run_dir
    for item in list(run_dir.iterdir()):
        shutil.rmtree(item) if item.is_dir() and not item.is_symlink() else item.unlink()
    ports = {f"{p.name}.mac_address": p.mac for p in pair.day0(router).ports}
    pair.chain.day0[short] = render("vrouter-ha-pair", parameters={**pair_parameters(pair.advert), **ports},
                                    server=router)
    apply_day0(pair, router)
    pair.restart(router)


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
    for router in SHORT:
        apply_day0(pair, router)
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


@contextlib.contextmanager
def probes(pair: Pair, log: Path) -> Iterator[Path]:
    """Pings from the host to the sink through the VIPs every PROBE_INTERVAL (``ping -D`` into ``log``) while the
    block runs; stopped after it."""
    chain = pair.chain
    log.write_text("")
    ping = chain.lab.spawn(["ip", "netns", "exec", chain.ns["h"], "ping", "-D", "-n", "-i", str(PROBE_INTERVAL),
                            SINK], log)
    try:
        yield log
    finally:
        chain.lab.stop(ping)


def replies_flow(log: Path) -> bool:
    """The last reply in the ping log came less than 0.2 s ago."""
    replies = reply_times(log.read_text())
    return bool(replies) and replies[-1][1] > time.time() - 0.2


def gap_and_lost(log: Path) -> tuple[float, int]:
    """The longest gap between two consecutive replies (s) and the probes without a reply, between the first
    reply of the ping log and its last."""
    replies = reply_times(log.read_text())
    if len(replies) < 2:
        raise RuntimeError(f"ping got {len(replies)} replies:\n{log.read_text()[-800:]}")
    gaps = [b[1] - a[1] for a, b in itertools.pairwise(replies)]
    return max(gaps), replies[-1][0] - replies[0][0] + 1 - len(replies)


def failover(pair: Pair, mode: str, log: Path, timeout: float) -> Sample:
    """One failover of router A to router B with traffic through the VIPs; router A is restored after."""
    with probes(pair, log):
        time.sleep(1.0)
        t0 = time.monotonic()
        pair.crash("router_a") if mode == "crash" else pair.stop("router_a")
        takeover = pair.wait("router B takes the VIPs", lambda: pair.holds_vips("router_b"), timeout)
        pair.wait("replies through router B", lambda: replies_flow(log) and time.monotonic() - t0 > takeover + 0.5,
                  timeout)
        if pair.host_gateway_mac() != pair.mac("router_b", "left"):
            raise RuntimeError(f"the host's gateway MAC is {pair.host_gateway_mac()}, not router B's "
                               f"{pair.mac('router_b', 'left')}")
    outage, lost = gap_and_lost(log)
    pair.restore("router_a", timeout)
    return Sample(mode, outage, lost, takeover)


class LabMembers:
    """The pair as the ``Members`` of a rolling upgrade (nfvcat.cloud.rolling), router A and router B:

    - ``roles``: each router's console since its keepalived last started, read by ``rolling.role`` (the lab
      prints no kernel line at a restart, so ``Pair.started`` marks where the console of the running guest begins);
    - ``handover``: ``Pair.stop``, keepalived's SIGTERM, as the clean shutdown of the server by Nova: keepalived
      announces priority 0 and the other router takes over at once;
    - ``upgrade``: ``rebuild``, the router back with its day-0 rendered again; it returns once keepalived is
      started, without waiting for a role (router A, the higher priority, takes the master role back by itself);
    - ``rejoined``: a role announced on the router's console since its upgrade;
    - ``placement``: always holds (``[]``): the lab has no compute hosts and no server group to check.

    ``events`` records each handover and upgrade in order, with the roles read just before it.
    """

    def __init__(self, pair: Pair) -> None:
        self.pair = pair
        self.names = list(SHORT)
        self.upgraded: set[str] = set()
        self.events: list[tuple[str, str, dict[str, str | None]]] = []  # (handover|upgrade, router, roles)

    def roles(self) -> dict[str, str | None]:
        return {r: self.pair.role(r) for r in self.names}

    def handover(self, name: str) -> None:
        self.events.append(("handover", name, self.roles()))
        self.pair.stop(name)

    def upgrade(self, name: str) -> None:
        self.events.append(("upgrade", name, self.roles()))
        rebuild(self.pair, name)
        self.upgraded.add(name)

    def rejoined(self, name: str) -> bool:
        return name in self.upgraded and self.pair.role(name) is not None

    def placement(self) -> list[str]:
        return []


def summary(samples: list[Sample]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for mode in dict.fromkeys(s.mode for s in samples):
        mine = [s for s in samples if s.mode == mode]
        out[mode] = {"samples": len(mine), "median_outage_s": statistics.median(s.outage for s in mine),
                     "min_outage_s": min(s.outage for s in mine), "max_outage_s": max(s.outage for s in mine),
                     "median_lost": statistics.median(s.lost for s in mine),
                     "median_takeover_s": statistics.median(s.takeover for s in mine)}
    return out
