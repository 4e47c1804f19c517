"""The real host's compute driver: Nova's libvirt driver, with one compatibility fix for Debian 12's libvirt and
one for the host's userspace datapath.

Loaded by nova-compute as ``nfvcat_devcloud.LibvirtDriver`` (the shim, :mod:`nfvcat.lab.devcloud.shim`); only this
module and :mod:`nfvcat.lab.devcloud.fakevirt` run inside nova-compute.

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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nova.virt.libvirt import config, driver

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


class LibvirtDriver(driver.LibvirtDriver):
    def _get_guest_config(self, *args: Any, **kwargs: Any) -> Any:
        guest = super()._get_guest_config(*args, **kwargs)
        if guest.os_firmware == "efi" and not self._host.has_min_version(LOADER_SECURE_WITH_AUTOSELECTION):
            guest.os_loader_secure = None
        for dev in guest.devices:
            if isinstance(dev, config.LibvirtConfigGuestInterface):
                without_host_offloads(dev)
        return guest
