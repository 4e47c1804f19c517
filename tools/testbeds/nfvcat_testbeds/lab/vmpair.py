"""Two IPsec gateway VMs of the VM tier, each booted from its own config drive, with a site host
namespace behind each:

    site A (netns) -- br-lana -- gateway A (VM) -- br-wan -- gateway B (VM) -- br-lanb -- site B (netns)

Bridges and taps live in one namespace of the lab, so nothing touches the host's own networking.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nfvcat.day0.render import render
from nfvcat.packaging.images.build import Built
from nfvcat_testbeds.lab import chain as c
from nfvcat_testbeds.lab.netns import Lab
from nfvcat_testbeds.lab.qemu import Nic, Vm, boot

SITE_A_VM_HOST = "10.10.2.10"

MakeIso = Callable[[dict[str, str], Path], None]


@dataclass
class Pair:
    vms: dict[str, Vm]
    net: str
    site_a: str
    site_b: str
    workdir: Path


IMAGE = "ipsec-gw"  # the catalog image the gateways boot (images/ipsec-gw)


def default_iso(params: dict[str, str], iso: Path) -> None:
    """The gateway's config drive with the lab's probe (``nfvcat_testbeds.lab.probe``) merged into its user data."""
    from nfvcat.day0.configdrive import build_iso
    from nfvcat_testbeds.lab import probe

    day0 = render("vnf-ipsec-gw", parameters=params)
    day0.added_cloud_configs = [(probe.FILENAME, probe.CLOUD_CONFIG)]
    build_iso(day0, iso)


# Both gateways boot together, as a stack deploys them: hooks/ipsec-gw (1.0.1) re-initiates until its CHILD_SA
# is installed, so the responder may load its connection late. NFVCAT_VM_STAGGER=<console regex> boots
# gateway A only once gateway B's console shows it (the way 1.0.0 of the hook had to be tested).
STAGGER: str | None = None


def bridges(lab: Lab, name: str, names: tuple[str, ...]) -> str:
    """A lab namespace ``name`` holding the bridges ``names`` (up), where VMs' taps and hosts attach."""
    net = lab.ns(name)
    for br in names:
        lab.sh(net, f"ip link add {br} type bridge && ip link set {br} up")
    return net


def site(lab: Lab, net: str, name: str, bridge: str, address: str, gateway: str) -> str:
    """A host namespace ``name`` whose eth0 (``address``/24, default route via ``gateway``) is a port of
    ``bridge`` in the namespace ``net``."""
    ns = lab.ns(name)
    port = f"{name}-port"
    lab.link(ns, "eth0", net, port)
    lab.sh(net, f"ip link set {port} master {bridge}")
    lab.sh(ns, f"ip addr add {address}/24 dev eth0 && ip route add default via {gateway}")
    return ns


def boot_pair(lab: Lab, image: Built, workdir: Path, make_iso: MakeIso = default_iso,
              stagger: str | None = STAGGER, stagger_timeout: float = 600) -> Pair:
    net = bridges(lab, "vmnet", ("br-wan", "br-lana", "br-lanb", "br-mgmt"))
    sa = site(lab, net, "vsa", "br-lana", SITE_A_VM_HOST, c.GWA_LAN)
    sb = site(lab, net, "vsb", "br-lanb", c.SITE_B_HOST, c.GWB_LAN)
    vms: dict[str, Vm] = {}
    for side in ("b", "a"):
        if side == "a" and stagger:
            vms["b"].wait_for(stagger, stagger_timeout)
        params = c.gateway_parameters(side, udp_encap=False)  # the guest kernel has ESP
        iso = workdir / f"gw-{side}.iso"
        make_iso(params, iso)
        mac = {p.name: p.mac for p in render("vnf-ipsec-gw", parameters=params).ports}
        nics = [Nic(f"gw{side}-mgmt", mac["mgmt_port"], "br-mgmt"), Nic(f"gw{side}-wan", mac["wan_port"], "br-wan"),
                Nic(f"gw{side}-lan", mac["lan_port"], "br-lan" + side)]
        vms[side] = boot(lab, image, Vm(f"gw-{side}", net, workdir, nics, iso))
    return Pair({"a": vms["a"], "b": vms["b"]}, net, sa, sb, workdir)
