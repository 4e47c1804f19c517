"""The real host's compute driver: Nova's libvirt driver, with one compatibility fix for Debian 12's libvirt.

Loaded by nova-compute as ``nfvcat_devcloud.LibvirtDriver`` (the shim, :mod:`nfvcat.lab.devcloud.shim`); only this
module and :mod:`nfvcat.lab.devcloud.fakevirt` run inside nova-compute.

For a UEFI guest (``hw_firmware_type=uefi``, the product images) Nova 34 asks libvirt to pick the firmware
(``<os firmware='efi'>``, the secure-boot choice as a firmware feature) and also writes ``<loader secure='no'/>``;
libvirt 9.0 (Debian 12) refuses the domain: "loader attribute 'secure' cannot be specified when firmware
autoselection is enabled". Below the libvirt Nova's CI runs (its next minimum, 10.0.0), the loader attribute is
dropped; the firmware feature still says whether secure boot is on.
"""

from __future__ import annotations

from typing import Any

from nova.virt.libvirt import driver

LOADER_SECURE_WITH_AUTOSELECTION = (10, 0, 0)


class LibvirtDriver(driver.LibvirtDriver):
    def _get_guest_config(self, *args: Any, **kwargs: Any) -> Any:
        guest = super()._get_guest_config(*args, **kwargs)
        if guest.os_firmware == "efi" and not self._host.has_min_version(LOADER_SECURE_WITH_AUTOSELECTION):
            guest.os_loader_secure = None
        return guest
