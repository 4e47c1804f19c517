"""The dev cloud's real host (hypervisor: libvirt): `nfvcat instantiate chain-vrouter` boots the product vRouter
under Nova's libvirt driver (QEMU) from Glance, day-0 from Nova's config drive, and waits for its ready line and
cloud-init's status (done) in Nova's console log; the guest's libvirt domain holds what Nova decided (pinned vCPU,
huge pages, one NUMA node) and its taps are OVS ports of the real host's br-int; `nfvcat terminate` leaves no
server, port, tap or libvirt domain. Then the same chain with `--day0 metadata`: no config drive, the day-0 from
the metadata service (the real host's DHCP agent, isolated metadata, Neutron's metadata agent, Nova's metadata
API), cloud-init done. Each step's time goes to standard error (under TCG the boot takes minutes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import nfvcat

ENV = "tools/testbeds/nfvcat_testbeds/devcloud/environments/chain-vrouter.env.yaml"
STACK = "real-vrouter"
pytestmark = pytest.mark.usefixtures("onboarded")


@pytest.fixture(scope="module")
def real(devcloud: None) -> Any:
    from nfvcat_testbeds.devcloud import endpoints
    from nfvcat_testbeds.devcloud.state import State, default_dir

    state = State(default_dir())
    return state, endpoints.real_host(state)


def took(what: str, t0: float) -> None:
    sys.stderr.write(f"[real host] {what}: {time.monotonic() - t0:.0f} s\n")


def dhcp_taps(conn: Any) -> set[str]:
    """The host ends of the DHCP agent's veths (``tap`` + the DHCP port's id, as Neutron names them)."""
    return {f"tap{p.id}"[:14] for p in conn.network.ports(device_owner="network:dhcp")}


def host_taps(host: Any, conn: Any) -> list[str]:
    """The guests' taps in the real host's namespace (not the DHCP server's)."""
    from nfvcat_testbeds.lab import netns

    links = netns.links(host.netns)
    assert links is not None, f"cannot read the real host's namespace {host.netns}"
    return [t for t in links if t.startswith("tap") and t not in dhcp_taps(conn)]


def down(host: Any, taps: set[str]) -> list[str]:
    """Those of ``taps`` that are not administratively up in the real host's namespace."""
    out = subprocess.run(["ip", "-n", host.netns, "-o", "link"], capture_output=True, text=True, check=True).stdout
    flags = {line.split(":")[1].strip().split("@")[0]: line.partition("<")[2].partition(">")[0].split(",")
             for line in out.splitlines()}
    return sorted(t for t in taps if "UP" not in flags.get(t, []))


def whose(state: Any, host: Any, conn: Any, taps: list[str]) -> dict[str, str]:
    """What each tap is: its link kind, the OVS interface's external ids (iface-id: the Neutron port) and that
    port's owner, if it still exists."""
    from nfvcat_testbeds.devcloud import computes

    env = {**os.environ, **computes.ovs_env(state, host)}
    found = {}
    for tap in taps:
        link = subprocess.run(["ip", "-n", host.netns, "-d", "-o", "link", "show", tap], capture_output=True,
                              text=True, check=False).stdout
        kind = next((w for w in ("veth", "tun") if f" {w} " in link), "?")
        ids = subprocess.run(["ovs-vsctl", "--timeout=10", "get", "interface", tap, "external_ids"],
                             capture_output=True, text=True, env=env, check=False).stdout.strip()
        port = next((p for p in conn.network.ports() if tap[3:] and p.id.startswith(tap[3:])), None)
        owner = f"port {port.id} of {port.device_owner} {port.device_id}" if port else "no Neutron port"
        found[tap] = f"{kind}; ovs {ids or '-'}; {owner}"
    return found


def assert_terminated(res: Any, conn: Any, state: Any, host: Any) -> None:
    """`nfvcat terminate --format json` succeeded and left nothing on the real host: no stack resource, libvirt
    domain, guest tap or test endpoint."""
    from nfvcat_testbeds.devcloud import endpoints, realhost

    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["left_behind"] == []
    assert realhost.Libvirt(state, host.name).domains() == []
    left = host_taps(host, conn)
    assert left == [], whose(state, host, conn, left)
    assert endpoints.leftovers(conn, state, host) == []


def status_line(console: str) -> tuple[str, str, str]:
    from nfvcat.day0.ready import cloud_init_status

    found = cloud_init_status(console)
    assert found is not None, console[-2000:]
    return found


def test_instantiate_boots_the_vrouter_on_the_real_host_and_waits_for_it(conn: Any, real: Any) -> None:
    from nfvcat.cloud.stacks import servers_of
    from nfvcat_testbeds.devcloud import realhost

    state, host = real
    before = host_taps(host, conn)
    assert before == [], f"guest taps on the real host before the chain: {whose(state, host, conn, before)}"
    t0 = time.monotonic()
    res = nfvcat("instantiate", "chain-vrouter", "--stack", STACK, "-e", ENV, "--no-check", timeout=1800)
    took("instantiate (stack, boot, ready line)", t0)
    sys.stderr.write(res.stderr[-1500:])
    assert res.returncode == 0, res.stderr[-3000:]
    assert "ready after" in res.stderr and "NFVCAT-VROUTER-READY" in res.stderr
    [(_, sid)] = servers_of(conn, STACK)
    server = conn.compute.get_server(sid)
    assert (server.status, server.compute_host) == ("ACTIVE", host.name)
    console = conn.compute.get_server_console_output(sid)["output"]
    assert "NFVCAT-VROUTER-READY" in console and "NFVCAT-CLOUD-INIT status: done" in res.stderr
    assert server.has_config_drive
    status, source, _ = status_line(console)
    assert (status, source) == ("done", "config-disk (/dev/sr0)"), source

    lv = realhost.Libvirt(state, host.name)
    [domain] = lv.domains()
    xml = ET.fromstring(lv.virsh("dumpxml", domain, check=True).stdout)
    assert xml.findtext("uuid") == sid
    _, dedicated = realhost.cpu_sets()
    pins = {int(p.get("cpuset", "-1")) for p in xml.findall("./cputune/vcpupin")}
    assert pins and pins <= set(dedicated), (pins, dedicated)
    assert xml.find("./memoryBacking/hugepages/page").get("size") == "2048"
    assert xml.find("./numatune/memnode") is not None
    assert any((d.find("source") is not None and d.find("source").get("file", "").endswith("disk.config"))
               for d in xml.findall("./devices/disk[@device='cdrom']")), "no config drive attached"
    taps = {i.find("target").get("dev") for i in xml.findall("./devices/interface")}
    ports = {p.id for p in conn.network.ports(device_id=sid)}
    assert len(taps) == len(ports) == 3 and taps <= set(host_taps(host, conn))
    assert down(host, taps) == []  # libvirtdriver.taps_up: the userspace datapath's flags race
    for port in conn.network.ports(device_id=sid):
        assert port.binding_vif_type == "ovs" and port.binding_host_id == host.name
        assert port.status == "ACTIVE"


GUEST_CHECKS = {"guest vCPU pins", "guest vCPU threads", "guest emulator threads", "guest huge pages",
                "guest NUMA memory"}
PINNING = "CPU pinning"  # judged on the real host's own topology (Nova's compute_nodes record), never unknown


def guest_rows() -> tuple[int, dict[str, dict[str, str]]]:
    res = nfvcat("check", STACK, "--host-access", "devcloud", "--format", "json")
    doc = json.loads(res.stdout)
    return res.returncode, {v["check"]: v for v in doc["verdicts"] if v["check"] in GUEST_CHECKS | {PINNING}}


def cpuset_file(tid: int) -> Path:
    """The cpuset.cpus of the cgroup a thread is in (cgroup v1 cpuset hierarchy, else the unified one)."""
    lines = Path(f"/proc/{tid}/cgroup").read_text().splitlines()
    v1 = [line.split(":", 2)[2] for line in lines if line.split(":")[1] == "cpuset"]
    if v1:
        return Path("/sys/fs/cgroup/cpuset") / v1[0].lstrip("/") / "cpuset.cpus"
    unified = next(line.split(":", 2)[2] for line in lines if line.startswith("0::"))
    return Path("/sys/fs/cgroup") / unified.lstrip("/") / "cpuset.cpus"


def test_check_reads_the_running_guest_and_fails_on_a_repinned_vcpu_thread(conn: Any, real: Any) -> None:
    """check compares the guest's domain XML and its QEMU threads' affinity with Nova's record; a vCPU thread
    moved by taskset (the fault) fails "guest vCPU threads", and passes again once put back."""
    from nfvcat.catalog.inventory import parse_cpu_spec
    from nfvcat.cloud.stacks import servers_of
    from nfvcat_testbeds.devcloud import guests, realhost

    state, host = real
    t0 = time.monotonic()
    _, rows = guest_rows()
    took("check with the running guest", t0)
    assert set(rows) == GUEST_CHECKS | {PINNING} and {r["status"] for r in rows.values()} == {"pass"}, rows
    assert "compute host's topology" in rows[PINNING]["detail"], rows[PINNING]
    [(_, sid)] = servers_of(conn, STACK)
    lv = realhost.Libvirt(state, host.name)
    name = lv.virsh("domname", sid, check=True).stdout.strip()
    pid = guests.qemu_pid(lv, name)
    assert pid is not None
    [(tid, pinned)] = [(tid, cpus) for tid, (name, cpus) in guests.threads(pid).items()
                       if guests.VCPU_THREAD.fullmatch(name)]
    elsewhere = min(set(realhost.online_cpus()) - pinned)
    # where libvirt keeps the thread in a cpuset cgroup of its pCPU (sched_setaffinity elsewhere: EINVAL), widen it
    # first, as a host's admin re-pinning by hand would (the dev cloud's libvirtd sees no cgroups: affinity only)
    cpuset = cpuset_file(tid)
    before = cpuset.read_text()
    widen = elsewhere not in parse_cpu_spec(before.strip())
    if widen:
        cpuset.write_text(",".join(map(str, realhost.online_cpus())))
    subprocess.run(["taskset", "-p", "-c", str(elsewhere), str(tid)], check=True, capture_output=True)
    try:
        rc, rows = guest_rows()
        assert rc != 0 and rows["guest vCPU threads"]["status"] == "FAIL", rows
        assert f"thread on {elsewhere}, pinned to {min(pinned)}" in rows["guest vCPU threads"]["detail"]
        assert rows["guest vCPU pins"]["status"] == "pass"  # the domain still says what Nova recorded
    finally:
        subprocess.run(["taskset", "-p", "-c", ",".join(map(str, sorted(pinned))), str(tid)], check=True,
                       capture_output=True)
        if widen:
            cpuset.write_text(before)
    _, rows = guest_rows()
    assert rows["guest vCPU threads"]["status"] == "pass", rows


def test_terminate_leaves_no_server_port_tap_or_domain(conn: Any, real: Any) -> None:
    """`nfvcat terminate` deletes the stack; no server is left on the real host, nor its domain, ports or taps."""
    state, host = real
    t0 = time.monotonic()
    res = nfvcat("terminate", STACK, "--format", "json")
    took("terminate", t0)
    assert_terminated(res, conn, state, host)
    assert not [s for s in conn.compute.servers(all_projects=True) if s.compute_host == host.name]


def test_day0_from_the_metadata_service_without_a_config_drive(conn: Any, real: Any) -> None:
    """`--day0 metadata` (use_config_drive false): no config drive on the server or in its domain; cloud-init got
    the day-0 from 169.254.169.254 (its subplatform says so) over the management network's DHCP server on the real
    host, ran the hook (the ready line) and finished with status done; terminate leaves nothing."""
    from nfvcat.cloud.stacks import servers_of
    from nfvcat_testbeds.devcloud import realhost

    state, host = real
    stack = f"{STACK}-md"
    mgmt = conn.network.find_network("devcloud-mgmt", ignore_missing=False)
    [dhcp] = list(conn.network.network_hosting_dhcp_agents(mgmt))
    assert (dhcp.host, dhcp.is_alive) == (host.name, True)
    t0 = time.monotonic()
    res = nfvcat("instantiate", "chain-vrouter", "--stack", stack, "-e", ENV, "--day0", "metadata", "--no-check",
                 timeout=1800)
    took("instantiate --day0 metadata (stack, boot, ready line, cloud-init status)", t0)
    sys.stderr.write(res.stderr[-1500:])
    try:
        assert res.returncode == 0, res.stderr[-3000:]
        [(_, sid)] = servers_of(conn, stack)
        server = conn.compute.get_server(sid)
        assert (server.status, server.compute_host) == ("ACTIVE", host.name)
        assert not server.has_config_drive
        lv = realhost.Libvirt(state, host.name)
        [domain] = lv.domains()
        xml = ET.fromstring(lv.virsh("dumpxml", domain, check=True).stdout)
        assert down(host, {i.find("target").get("dev") for i in xml.findall("./devices/interface")}) == []
        assert not [d for d in xml.findall("./devices/disk")
                    if (d.find("source") is not None and d.find("source").get("file", "").endswith("disk.config"))]
        console = conn.compute.get_server_console_output(sid)["output"]
        assert "NFVCAT-VROUTER-READY" in console
        status, source, line = status_line(console)
        assert (status, source) == ("done", "metadata (http://169.254.169.254)"), line
        assert line in res.stderr  # instantiate waited for it and said so
    finally:
        t0 = time.monotonic()
        out = nfvcat("terminate", stack, "--format", "json")
        took("terminate (metadata)", t0)
    assert_terminated(out, conn, state, host)
