"""``nfvcat devcloud up | down | status``: start, stop and report the private OpenStack."""

from __future__ import annotations

import concurrent.futures
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from nfvcat.catalog import inventory as inventory_mod
from nfvcat.core.errors import EXIT_ENGINE, UserError
from nfvcat.core.waiting import TimedOut, until
from nfvcat_testbeds.devcloud import (
    accel,
    bootstrap,
    computes,
    configs,
    host,
    hostnet,
    procs,
    realhost,
    services,
    shim,
    tacker,
)
from nfvcat_testbeds.devcloud import metadata as guest_metadata
from nfvcat_testbeds.devcloud.services import Service
from nfvcat_testbeds.devcloud.state import REGION, State

DEFAULT_INVENTORY = Path(__file__).with_name("inventory.yaml")


class Progress:
    def __init__(self, out: TextIO, quiet: bool = False) -> None:
        self.out = out
        self.quiet = quiet
        self.t0 = time.monotonic()

    def say(self, text: str) -> None:
        if not self.quiet:
            print(f"[{time.monotonic() - self.t0:6.1f}s] {text}", file=self.out, flush=True)


def _log_of(state: State, svc: Service) -> Path:
    return state.log / f"{svc.log or svc.name}.log"


def _fail(state: State, svc: Service, why: str) -> UserError:
    log = _log_of(state, svc)
    if not log.exists():
        log = procs.logfile(state, svc.name)
    return UserError(f"devcloud: {svc.name} {why}; last lines of {log}:\n{procs.tail(log)}", EXIT_ENGINE)


def wait_ready(state: State, svc: Service, timeout: float) -> None:
    def ready() -> bool:
        if svc.ready():
            return True
        if not procs.pid_of(state, svc.name):
            tail_src = procs.logfile(state, svc.name)
            raise UserError(f"devcloud: {svc.name} exited during start; last lines of {tail_src}:\n"
                            f"{procs.tail(tail_src)}\n-- {_log_of(state, svc)}:\n{procs.tail(_log_of(state, svc), 10)}",
                            EXIT_ENGINE)
        return False

    try:
        until(ready, bool, timeout=timeout, what=f"devcloud {svc.name}", first=0.1, most=1.0)
    except TimedOut:
        raise _fail(state, svc, f"did not come up within {timeout:.0f} s") from None


def start_all(state: State, group: list[Service], progress: Progress, timeout: float = 180) -> None:
    started = []
    for svc in group:
        was = procs.pid_of(state, svc.name)
        procs.start(state, svc.name, svc.argv, svc.env)
        started.append((svc, was))
    for svc, was in started:
        t = time.monotonic()
        wait_ready(state, svc, timeout)
        progress.say(f"{svc.name:28} {'already up' if was else 'up'} ({time.monotonic() - t:.1f}s)")


def apis_all(state: State) -> list[Service]:
    """Every API and engine process: OpenStack's (services) and Tacker's (tacker, which builds on services)."""
    return [*services.apis(state), *tacker.processes(state)]


def all_services(state: State, dpdk: bool, inv: Path) -> list[Service]:
    hosts = computes.site_layout(inventory_mod.load(str(inv)))
    return [*services.infra(state, dpdk), *[s for c in hosts for s in services.switch(state, c)],
            services.keystone(state), *apis_all(state),
            *[s for c in hosts for s in [*services.hypervisor(state, c), *services.compute(state, c, inv)]]]


def inventory_of(state: State) -> Path:
    """The inventory `up` was given (a copy in the state directory), else the default one."""
    return state.inventory if state.inventory.is_file() else DEFAULT_INVENTORY


def _run(argv: list[str], what: str, env: dict[str, str] | None = None, timeout: float = 600) -> str:
    import os

    res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})},
                         check=False)
    if res.returncode != 0:
        tail = "\n".join((res.stderr or res.stdout).splitlines()[-15:])
        raise UserError(f"devcloud: {what} failed ({' '.join(argv[:3])} ...):\n{tail}", EXIT_ENGINE)
    return res.stdout


def up(state: State, inv_path: Path | None, out: TextIO = sys.stderr, quiet: bool = False) -> dict[str, Any]:
    progress = Progress(out, quiet)
    state.ensure()
    inv_file = (inv_path or DEFAULT_INVENTORY).resolve()
    inv = inventory_mod.load(str(inv_file))
    hosts = computes.site_layout(inv)
    running = [n for n in procs.running(state) if "@" in n]
    wanted = {c.service("nova-compute") for c in hosts}
    stray = sorted(n for n in running if n.startswith("nova-compute@") and n not in wanted)
    if stray:
        raise UserError(f"devcloud: running with another inventory ({', '.join(stray)}): `devcloud down` first",
                        EXIT_ENGINE)
    copy = state.inventory
    if inv_file != copy.resolve():
        shutil.copyfile(inv_file, copy)
    inv_file = copy
    first = not state.marker("bootstrap").exists()
    shim.install()

    real = [c for c in hosts if c.real]
    why_no_dpdk = host.reserve_hugepages(state, guest_pages=realhost.GUEST_PAGES * len(real))
    dpdk = why_no_dpdk is None
    progress.say("OVS-DPDK: huge pages reserved" if dpdk else f"OVS-DPDK off ({why_no_dpdk}): plain userspace OVS")

    # configuration, always rewritten
    configs.keystone(state)
    configs.glance(state)
    configs.placement(state)
    configs.nova(state, inv)
    configs.neutron(state)
    configs.heat(state)
    tacker.config(state)
    bootstrap.prepare_infra(state)
    bootstrap.ovs_databases(hosts, state)

    infra = services.infra(state, dpdk)
    everything = all_services(state, dpdk, inv_file)
    if not first and all(procs.pid_of(state, s.name) for s in everything) and all(s.ready() for s in everything):
        progress.say("already up")
        real_host_flavor(state, real, accel.virt_type() if real else ("", ""), progress)
        vim = register_vim(state, progress)
        return {"already_up": True, **vim, "dpdk": dpdk, "seconds": time.monotonic() - progress.t0,
                "hosts": [c.name for c in hosts], "tunnel_endpoints": {c.name: c.tunnel_ip for c in hosts}}

    virt = accel.virt_type() if real else ("", "")
    hostnet.ensure_segments(physnets(hosts))
    for c in hosts:
        if hostnet.ensure_host(c.netns, c.position, c.spec.ovs_physnets):
            progress.say(f"{c.name}: namespace {c.netns} made anew (left by a dev cloud that was not brought down)")
    if not any(procs.pid_of(state, c.service("neutron-dhcp-agent")) for c in real):
        for ns in guest_metadata.remove_orphans():
            progress.say(f"DHCP namespace {ns} removed (its port's device was gone)")
    progress.say("hosts: " + "; ".join(f"{c.name} namespace {c.netns or '(the machine)'} tunnel endpoint "
                                        f"{c.tunnel_ip}" for c in hosts) + f"; underlay {hostnet.UNDERLAY}, "
                 + ", ".join(f"{p} {hostnet.segment(p)}" for p in physnets(hosts)))
    for c in real:
        realhost.Libvirt(state, c.name).write_config()
        shared, dedicated = realhost.cpu_sets()
        progress.say(f"{c.name}: this machine under libvirt, virt_type {virt[0]} ({virt[1]}); CPUs shared "
                     f"{shared}, dedicated {dedicated}")
    start_all(state, infra[:3], progress)
    bootstrap.databases(state)
    start_all(state, infra[3:] + [s for c in hosts for s in services.switch(state, c)], progress)
    if dpdk:
        bootstrap.ovs_dpdk(state)
    bootstrap.bridges(state, hosts)
    progress.say("ovs bridges ready")

    syncs = {name: steps for name, steps in {**bootstrap.db_syncs(state), "tacker": tacker.db_sync(state)}.items()
             if not state.marker(f"dbsync-{name}").exists()}
    if syncs:
        with concurrent.futures.ThreadPoolExecutor(len(syncs)) as pool:
            futures = {pool.submit(_run_steps, steps): name for name, steps in syncs.items()}
            for fut in concurrent.futures.as_completed(futures):
                fut.result()
                state.marker(f"dbsync-{futures[fut]}").touch()
                progress.say(f"{futures[fut] + ' db sync':28} done")

    start_all(state, [services.keystone(state)], progress)
    if not state.marker("bootstrap").exists():
        bootstrap.identity(state)
        state.marker("bootstrap").touch()
    bootstrap.catalog(state)
    progress.say("keystone catalog, service users and roles ready")
    bootstrap.clouds_yaml(state)

    start_all(state, apis_all(state), progress)
    # nova-compute refuses to start again without the node identity it had: keep it stable, from the host name
    from nfvcat_testbeds.devcloud.fakevirt import node_uuid

    for c in hosts:
        c.state_path(state).mkdir(parents=True, exist_ok=True)
        (c.state_path(state) / "compute_id").write_text(node_uuid(c.name) + "\n")
    per_host: dict[str, float] = {}
    for c in hosts:
        t = time.monotonic()
        start_all(state, services.hypervisor(state, c), progress)
        start_all(state, services.compute(state, c, inv_file), progress)
        per_host[c.name] = time.monotonic() - t
    bootstrap.wait_computes(state, hosts, progress.say)
    bootstrap.aggregates(state, hosts)
    bootstrap.quotas(state)
    progress.say("host aggregates: " + "; ".join(f"{c.name} {c.spec.aggregate_metadata}" for c in hosts))
    real_hosts = real_host_flavor(state, real, virt, progress)
    vim = register_vim(state, progress)
    return {"already_up": False, **vim, "dpdk": dpdk, "first_start": first, "seconds": time.monotonic() - progress.t0,
            "hosts": [c.name for c in hosts], "tunnel_endpoints": {c.name: c.tunnel_ip for c in hosts},
            "inventory": str(inv_file), "real_hosts": real_hosts}


def physnets(hosts: list[computes.Compute]) -> list[str]:
    """The physnets of the hosts' switches, each once (each a Linux bridge between those hosts, hostnet)."""
    return sorted({p for c in hosts for p in c.spec.ovs_physnets})


def real_host_flavor(state: State, real: list[computes.Compute], virt: tuple[str, str],
                     progress: Progress) -> list[dict[str, Any]]:
    """The flavor and networks real hosts take (realhost: the catalog's flavors are too large for this machine,
    its networks have DHCP) and what each real host is."""
    if not real:
        return []
    import openstack

    conn = openstack.connect(auth=bootstrap.admin_auth(state), region_name=REGION, identity_api_version="3")
    realhost.ensure_flavor(conn)
    with_dhcp = realhost.ensure_networks(conn)
    envs = {k: str(v) for k, v in realhost.environment_files().items()}
    progress.say(f"flavor {realhost.FLAVOR}, networks {', '.join(realhost.NETWORKS)} for the real host(s); "
                 "environment files: "
                 f"{', '.join(envs.values())}")
    for c in real:
        guest_metadata.schedule(conn, state, c.name, with_dhcp)
        progress.say(f"{c.name}: DHCP and the metadata service on {', '.join(with_dhcp)}")
    shared, dedicated = realhost.cpu_sets()
    return [{"name": c.name, "virt_type": virt[0], "why": virt[1], "cpu_shared_set": shared,
             "cpu_dedicated_set": dedicated, "netns": c.netns, "flavor": realhost.FLAVOR,
             "networks": list(realhost.NETWORKS), "dhcp_networks": with_dhcp,
             "environments": envs} for c in real]



def register_vim(state: State, progress: Progress) -> dict[str, Any]:
    """The dev cloud as Tacker's default VIM (find or register), for v2 LCM grants."""
    from tackerclient.common import exceptions as tacker_exc

    try:
        auth = bootstrap.admin_auth(state)
        vim = tacker.register_vim(tacker.tacker_client(tacker.session(auth)), auth)
    except tacker_exc.TackerClientException as exc:
        raise UserError(f"devcloud: registering the dev cloud as Tacker's VIM failed: {exc}", EXIT_ENGINE) from None
    progress.say(f"Tacker default VIM {tacker.VIM_NAME} {'registered' if vim['registered'] else 'already registered'}"
                 f" ({vim['vim_id']})")
    return vim


def _run_steps(steps: list[tuple[list[str], str]]) -> None:
    for argv, what in steps:
        _run(argv, what)


TIERS = (  # stopped one tier after the other, each tier in parallel (name@host: every host's)
    ("nova-compute@", "neutron-openvswitch-agent@", "neutron-sriov-nic-agent@", "neutron-dhcp-agent@",
     "neutron-metadata-agent@", "nova-api-metadata", "heat-engine", "heat-api",
     "tacker-server", "tacker-conductor",
     "nova-conductor", "nova-scheduler", "nova-api", "neutron-api", "neutron-rpc-server", "neutron-periodic-workers",
     "glance", "placement", "keystone"),
    ("ovs-vswitchd", "ovs-vswitchd@", "libvirtd@", "amqp-relay@", "amqp-relay-netns@", "rabbitmq", "mariadb"),
    ("ovsdb-server", "ovsdb-server@", "epmd"),
)


def _tier_of(name: str) -> int | None:
    for i, tier in enumerate(TIERS):
        if name in tier or any(t.endswith("@") and name.startswith(t) for t in tier):
            return i
    return None


def down(state: State, wipe: bool = False, out: TextIO = sys.stderr, quiet: bool = False) -> dict[str, Any]:
    progress = Progress(out, quiet)
    stopped: list[str] = []
    if state.root.exists():
        layout = computes.site_layout(inventory_mod.load(str(inventory_of(state))))
        for c in layout:
            if c.real:
                for dom in realhost.Libvirt(state, c.name).destroy_all():
                    progress.say(f"{c.name}: libvirt domain {dom} destroyed")
        known = {s.name: s for s in all_services(state, False, inventory_of(state))}
        names = sorted(set(known) | {n for n in procs.running(state) if "@" in n})
        tiers: list[list[str]] = [[] for _ in TIERS]
        for n in names:
            t = _tier_of(n)
            tiers[0 if t is None else t].append(n)
        for tier in tiers:
            if not tier:
                continue
            with concurrent.futures.ThreadPoolExecutor(len(tier)) as pool:
                graces = [known[n].grace if n in known else 5.0 for n in tier]
                results = dict(zip(tier, pool.map(lambda n, g: procs.stop(state, n, grace=g), tier, graces),
                                   strict=True))
            for name in tier:
                if results[name]:
                    stopped.append(name)
                    progress.say(f"{name:28} stopped")
        for c in layout:
            if c.real:
                for ns in guest_metadata.cleanup(state, c.name):
                    progress.say(f"{c.name}: DHCP namespace {ns} removed")
            if hostnet.remove_host(c.netns, c.position, c.spec.ovs_physnets, c.phy_bridge):
                progress.say(f"{c.name}: {'namespace ' + c.netns if c.netns else 'links'} removed")
        for name in hostnet.remove_segments(physnets(layout)):
            progress.say(f"bridge {name} removed")
        for line in host.restore(state):
            progress.say(line)
    if wipe:
        if state.root.exists():
            shutil.rmtree(state.root)
            progress.say(f"wiped {state.root}")
        bootstrap.remove_clouds_yaml()
        shim.remove()
    return {"stopped": stopped, "wiped": wipe}


def status(state: State) -> list[dict[str, Any]]:
    rows = []
    for svc in all_services(state, False, inventory_of(state)):
        pid = procs.pid_of(state, svc.name) if state.root.exists() else None
        rows.append({"service": svc.name, "pid": pid, "state": "up" if pid and svc.ready() else
                     ("starting" if pid else "down")})
    return rows
