"""VM tier: the vRouter VNF, the catalog's product image (images/vrouter: Debian 12, Linux 6.1), booted from the
config drive of its rendered day-0 with the template's 20 ACL rules. Its setup loads the ACL as eBPF
programs, attached as clsact filters (that kernel has no tcx), and the routed traffic through it is filtered
by them: a UDP datagram to port 161 (an acl_forward rule) does not arrive, one to port 9999 does, a slow
ping passes the ICMP rate limit.

    source (netns) -- br-left -- vRouter (VM) -- br-right -- sink (netns)
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nfvcat.day0.configdrive import build_iso
from nfvcat.day0.render import render
from nfvcat.packaging.images import obtain as lab_images
from nfvcat_testbeds.lab import chain as c
from nfvcat_testbeds.lab.netns import Lab
from nfvcat_testbeds.lab.qemu import Nic, Vm, boot
from nfvcat_testbeds.lab.vmpair import bridges, site
from tests.day0 import traffic as t

IMAGE = "vrouter"
# the product image under TCG on a loaded 2-core machine (a wait limit, not a timed assertion)
TIMEOUT = float(os.environ.get("NFVCAT_VM_TIMEOUT", "1500"))


@pytest.fixture(scope="module")
def router(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Vm, str, str, t.Listener]]:
    image = lab_images.image(IMAGE, lambda msg: print(f"[day0] {msg}", flush=True))
    work = Path(tmp_path_factory.mktemp("vrouter-vm"))
    net = bridges(lab, "vrnet", ("br-mgmt", "br-left", "br-right"))
    src = site(lab, net, "vrsrc", "br-left", c.SITE_A_HOST, c.VR_LEFT)
    sink = site(lab, net, "vrsink", "br-right", c.GWA_LAN, c.VR_RIGHT)
    listener = t.Listener(lab, sink, work / "sink.log", ["udp/9999", "udp/161"])
    day0 = render("vnf-vrouter", parameters=c.vrouter_parameters())
    iso = work / "vrouter.iso"
    build_iso(day0, iso)
    mac = {p.name: p.mac for p in day0.ports}
    nics = [Nic("vr-mgmt", mac["mgmt_port"], "br-mgmt"), Nic("vr-left", mac["left_port"], "br-left"),
            Nic("vr-right", mac["right_port"], "br-right")]
    vm = boot(lab, image, Vm("vrouter", net, work, nics, iso))
    yield vm, src, sink, listener


def test_the_vrouter_image_runs_its_acl_as_ebpf_and_filters_routed_traffic(
        router: tuple[Vm, str, str, t.Listener], lab: Lab) -> None:
    vm, src, _sink, listener = router
    ready = vm.wait_for(r"NFVCAT-VROUTER-READY [^\r\n]*", TIMEOUT).group(0)
    print(f"[day0] {ready} ({time.monotonic() - vm.started:.0f} s after QEMU start)")
    assert "datapath bpf: eBPF programs (tc) at tc ingress of" in ready, ready
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # the first datagrams wait for ARP on both sides
        t.udp_send(lab, src, c.GWA_LAN, 9999, "warmup")
        if listener.received("warmup"):
            break
    else:
        pytest.fail(f"nothing routed through the vRouter in 60 s; console tail: {vm.console_text()[-800:]}")
    t.udp_send(lab, src, c.GWA_LAN, 161, "snmp-probe", count=3)
    t.udp_send(lab, src, c.GWA_LAN, 9999, "permitted", count=3)
    assert listener.received("permitted") == 3
    assert listener.received("snmp-probe") == 0, "acl_forward#3 (udp dport 161 from the left) let it through"
    ping = lab.sh(src, f"ping -c 3 -i 0.3 -W 2 {c.GWA_LAN}", check=False)
    assert " 0% packet loss" in ping.stdout, ping.stdout
    # the hook's own view of cloud-init once it is over (hooks/vrouter 2.2.0): done, from the config drive
    status = vm.wait_for(r"NFVCAT-CLOUD-INIT status: (\S+) datasource: ([^\r\n]*)", TIMEOUT)
    print(f"[day0] {status.group(0).strip()} ({time.monotonic() - vm.started:.0f} s after QEMU start)")
    assert (status.group(1), status.group(2).strip()) == ("done", "config-disk (/dev/sr0)"), status.group(0)
