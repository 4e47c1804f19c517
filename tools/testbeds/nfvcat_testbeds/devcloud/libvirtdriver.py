"""The real host's compute driver: Nova's libvirt driver, with one compatibility fix for Debian 12's libvirt and
one for the host's userspace datapath.

Loaded by nova-compute as ``nfvcat_devcloud.LibvirtDriver`` (the shim, :mod:`nfvcat_testbeds.devcloud.shim`); only this
module and :mod:`nfvcat_testbeds.devcloud.fakevirt` run inside nova-compute.

For a UEFI guest (``hw_firmware_type=uefi``, the product images) Nova 34 asks libvirt to pick the firmware
(``<os firmware='efi'>``, the secure-boot choice as a firmware feature) and also writes ``<loader secure='no'/>``;
libvirt 9.0 (Debian 12) refuses the domain: "loader attribute 'secure' cannot be specified when firmware
autoselection is enabled". Below the libvirt Nova's CI runs (its next minimum, 10.0.0), the loader attribute is
dropped; the firmware feature still says whether secure boot is on.

The host's Open vSwitch is a userspace datapath reading the guests' taps through packet sockets: a packet a guest
sends with its checksum left to the device (virtio's checksum offload, what Linux does for its own TCP and UDP)
leaves the switch with that checksum unfilled, and the receiver drops it. Measured: the guest's DNS query to the
DHCP server's address showed "bad udp cksum" on its tap and never reached the server's namespace; the guest's
requests to the metadata service timed out (ARP and DHCP, whose checksums dhclient computes itself, passed).
OVS-DPDK's vhost-user completes such checksums; this datapath does not, so each virtio NIC of the real host's guests
is given without the host-side offloads (``<driver><host csum='off' .../>``: the guest computes its checksums and
segments itself). What the guest receives is unchanged.

The same datapath can leave a guest's tap down. os-vif adds the OVS port before libvirt creates the tap; when the
tap appears, ovs-vswitchd opens it and turns promiscuous mode on by writing back the whole flags word it has cached
(OVS netdev-linux ``update_flags``). If it cached the flags before libvirt brought the tap up, the write takes the
tap down again. Seen once in the dev cloud's integration tier: the guest's management tap stayed down, so the guest
got no DHCP lease and its cloud-init fell back to no datasource (ovs-vswitchd logged "Network is down" for that tap
as it added it, which it does for no other guest's). So once the guest exists, each of its taps is brought up where
it is down (:func:`taps_up`), and nova-compute logs a warning naming it.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from typing import Any

from nova.virt.libvirt import config, driver
from oslo_log import log as logging

LOG = logging.getLogger(__name__)
NETNS_ENV = "NFVCAT_DEVCLOUD_NETNS"  # the network namespace of the host's libvirtd (its guests' taps), if any

LOADER_SECURE_WITH_AUTOSELECTION = (10, 0, 0)
HOST_OFFLOADS_OFF = {"csum": "off", "gso": "off", "tso4": "off", "tso6": "off", "ecn": "off", "ufo": "off"}


def without_host_offloads(nic: Any) -> Any:
    """A virtio NIC's configuration whose XML turns the device's offloads of the guest's transmit side off."""
    if nic.model != "virtio":
        return nic
    formatted: Callable[..., Any] = nic.format_dom

    def format_dom(*args: Any, **kwargs: Any) -> Any:
        dom = formatted(*args, **kwargs)
        drv = dom.find("driver")
        if drv is None:
            drv = dom.makeelement("driver", {})
            model = dom.find("model")
            dom.insert(list(dom).index(model) + 1 if model is not None else len(dom), drv)
        host = drv.find("host")
        if host is None:
            host = drv.makeelement("host", {})
            drv.insert(0, host)
        for key, value in HOST_OFFLOADS_OFF.items():
            host.set(key, value)
        return dom

    nic.format_dom = format_dom
    return nic


def taps_up(names: list[str], netns: str | None,
            run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run) -> list[str]:
    """Each tap of ``names`` (in ``netns``) administratively up; returns those that were down. A tap that does not
    exist (a guest not started) is left alone."""
    where = ["-n", netns] if netns else []
    were_down = []
    for name in names:
        shown = run(["ip", *where, "-o", "link", "show", "dev", name], capture_output=True, text=True, check=False)
        flags = shown.stdout.partition("<")[2].partition(">")[0].split(",")
        if shown.returncode != 0 or "UP" in flags:
            continue
        run(["ip", *where, "link", "set", "dev", name, "up"], capture_output=True, text=True, check=True)
        were_down.append(name)
    return were_down


class LibvirtDriver(driver.LibvirtDriver):
    def _get_guest_config(self, *args: Any, **kwargs: Any) -> Any:
        guest = super()._get_guest_config(*args, **kwargs)
        if guest.os_firmware == "efi" and not self._host.has_min_version(LOADER_SECURE_WITH_AUTOSELECTION):
            guest.os_loader_secure = None
        for dev in guest.devices:
            if isinstance(dev, config.LibvirtConfigGuestInterface):
                without_host_offloads(dev)
        return guest

    def _create_guest_with_network(self, context: Any, xml: str, instance: Any, network_info: Any, *args: Any,
                                   **kwargs: Any) -> Any:
        guest = super()._create_guest_with_network(context, xml, instance, network_info, *args, **kwargs)
        taps = [vif["devname"] for vif in network_info or [] if vif.get("devname")]
        for name in taps_up(taps, os.environ.get(NETNS_ENV) or None):
            LOG.warning("tap %s of instance %s was down once plugged (the userspace datapath's flags race); "
                        "brought it up", name, instance.uuid)
        return guest
