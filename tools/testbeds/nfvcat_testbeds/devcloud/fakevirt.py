"""The dev cloud's simulated hypervisor: ``nova.virt.fake.FakeDriver`` reporting one host of an nfvcat inventory.

Nova only loads drivers from ``nova.virt``: ``nfvcat devcloud up`` writes a one-line shim
``nova/virt/nfvcat_devcloud.py`` into the venv (see :mod:`nfvcat_testbeds.devcloud.shim`), so ``compute_driver =
nfvcat_devcloud.InventoryDriver``. Only this module runs inside nova-compute.

What it reports: the host's NUMA topology (cells, thread siblings, dedicated and shared CPU sets, 4K/2M/1G
pages), PCI devices (PFs and VFs with NUMA node, physnet's PF netdev as ``parent_ifname``), VCPU/PCPU/MEMORY_MB
/DISK_GB inventory for Placement. Scheduling, claims, pinning, page and PCI allocation stay Nova's code.
With ``NFVCAT_DEVCLOUD_CONFIG_DRIVE=1`` spawn writes the config drive Nova would build into the instance
directory (Nova's InstanceMetadata + ConfigDriveBuilder). Each OVS VIF (vif_type ``ovs`` or ``vhostuser``) is
plugged into its host's integration bridge as os-vif would (an ``internal`` or vhost-user port, named by Neutron's
devname, with ``external-ids`` iface-id, attached-mac, iface-status and vm-uuid), so the Open vSwitch agent wires
it (local VLAN, port ACTIVE) and extensions such as networking-sfc program flows for it; unplugged on destroy.
Nothing else is spawned: no guest is behind those ports.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import time
import uuid
from typing import Any

import os_resource_classes as orc
import os_traits
from nova import conf
from nova.pci import utils as pci_utils
from nova.virt import fake

from nfvcat.catalog import inventory
from nfvcat.plan import hoststate

CONF = conf.CONF
LOG = logging.getLogger(__name__)
INVENTORY_ENV = "NFVCAT_DEVCLOUD_INVENTORY"
NODE_NAMESPACE = uuid.UUID("4f1c6c2e-7d0b-4d55-9d8e-6f3a1f0c2b11")
_BOOT = time.time()


def node_uuid(nodename: str) -> str:
    """A node UUID stable across restarts (nova-compute refuses a new one for a known node)."""
    return str(uuid.uuid5(NODE_NAMESPACE, nodename))


def _vf_index(address: str) -> int:
    slot_fn = address.split(":")[2]
    slot, fn = slot_fn.split(".")
    return (int(slot, 16) - 2) * 8 + int(fn)


def _fake_mac(address: str, pf_interface: bool = False) -> str:
    digits = address.replace(":", "").replace(".", "")[-8:]
    raw = int(digits, 16) & 0xFFFFFFFF
    return "fa:16:3e:" + ":".join(f"{(raw >> s) & 0xFF:02x}" for s in (16, 8, 0))


# Nova reads these from sysfs for VFs; answer from the inventory's address scheme instead.
pci_utils.get_mac_by_pci_address = _fake_mac
pci_utils.get_vf_num_by_pci_address = _vf_index


def pci_devices(spec: inventory.HostSpec) -> list[dict[str, Any]]:
    """The devices as libvirt's driver reports them in ``pci_passthrough_devices``."""
    out: list[dict[str, Any]] = []
    for d in spec.devices:
        pf_type = "type-PF" if d.vfs else "type-PCI"
        out.append({"address": d.address, "vendor_id": d.vendor_id, "product_id": d.product_id,
                    "dev_type": pf_type, "parent_addr": None, "numa_node": d.numa_node,
                    "label": f"label_{d.vendor_id}_{d.product_id}",
                    "dev_id": "pci_" + d.address.replace(":", "_").replace(".", "_")})
        if d.vfs:
            for addr in d.vf_addresses():
                vf: dict[str, Any] = {
                    "address": addr, "vendor_id": d.vfs.vendor_id, "product_id": d.vfs.product_id,
                    "dev_type": "type-VF", "parent_addr": d.address, "numa_node": d.numa_node,
                    "label": f"label_{d.vfs.vendor_id}_{d.vfs.product_id}",
                    "dev_id": "pci_" + addr.replace(":", "_").replace(".", "_")}
                if d.device:
                    vf["parent_ifname"] = d.device
                out.append(vf)
    return out


def load_host(path: str, name: str | None) -> inventory.HostSpec:
    hosts = inventory.load(path).hosts
    for h in hosts:
        if h.name == name:
            return h
    return hosts[0]


class InventoryDriver(fake.FakeDriver):
    capabilities = {**fake.FakeDriver.capabilities, "supports_pcpus": True, "supports_socket_pci_numa_affinity": True}

    def __init__(self, virtapi: Any, read_only: bool = False) -> None:
        super().__init__(virtapi, read_only)
        self.spec = load_host(os.environ[INVENTORY_ENV], CONF.host)
        self.topology = hoststate.numa_topology(self.spec)
        self.vcpus = sum(len(c.shared) for c in self.spec.cells)
        self.pcpus = sum(len(c.dedicated) for c in self.spec.cells)
        self.memory_mb = sum(c.memory_mb for c in self.spec.cells)
        self.local_gb = 2000
        self.resources = fake.Resources(vcpus=self.vcpus + self.pcpus, memory_mb=self.memory_mb,
                                        local_gb=self.local_gb)
        self.host_status_base["numa_topology"] = self.topology._to_json()
        self._pci_json = json.dumps(pci_devices(self.spec))

    def init_host(self, host: str) -> None:
        self._host = host
        self._set_nodes([host])

    def get_available_resource(self, nodename: str) -> dict[str, Any]:
        status: dict[str, Any] = super().get_available_resource(nodename)
        if not status:
            return status
        cpu_info = json.loads(status["cpu_info"])
        threads = max((len(s) for c in self.spec.cells for s in c.siblings), default=1)
        cores = sum(len(c.siblings) for c in self.spec.cells) // max(len(self.spec.cells), 1)
        cpu_info["topology"] = {"sockets": len(self.spec.cells), "cores": cores, "threads": threads}
        status["cpu_info"] = json.dumps(cpu_info)
        status["vcpus"] = self.vcpus  # as libvirt: len(cpu_shared_set) (the scheduler's CPUWeigher reads it)
        status["numa_topology"] = self.topology._to_json()
        status["pci_passthrough_devices"] = self._pci_json
        status["uuid"] = node_uuid(nodename)
        return status

    def get_nodenames_by_uuid(self, refresh: bool = False) -> dict[str, str]:
        return {node_uuid(n): n for n in self.get_available_nodes()}

    def get_console_output(self, context: Any, instance: Any) -> str:
        """Nothing boots here, so there is no console: Nova answers 501 rather than fake.FakeDriver's canned
        lines, which a reader of the log (``instantiate`` waiting for a VNF's ready line) would take as real."""
        raise NotImplementedError("the dev cloud's simulated hypervisor boots nothing: no console log")

    def get_host_uptime(self) -> str:
        return f"up {int(time.time() - _BOOT)} seconds"

    def update_provider_tree(self, provider_tree: Any, nodename: str, allocations: Any = None) -> None:
        inv = provider_tree.data(nodename).inventory
        ratios = self._get_allocation_ratios(inv)

        def one(total: int, ratio: float, reserved: int) -> dict[str, Any]:
            return {"total": total, "min_unit": 1, "max_unit": total, "step_size": 1,
                    "allocation_ratio": ratio, "reserved": reserved}

        inventory_: dict[str, Any] = {
            orc.MEMORY_MB: one(self.memory_mb, ratios[orc.MEMORY_MB], CONF.reserved_host_memory_mb),
            orc.DISK_GB: one(self.local_gb, ratios[orc.DISK_GB], self._get_reserved_host_disk_gb_from_config()),
        }
        if self.vcpus:
            inventory_[orc.VCPU] = one(self.vcpus, ratios[orc.VCPU], 0)
        if self.pcpus:
            inventory_[orc.PCPU] = one(self.pcpus, 1.0, 0)
        provider_tree.update_inventory(nodename, inventory_)
        # as the libvirt driver does: Nova turns hw:cpu_thread_policy=isolate into a forbidden HW_CPU_HYPERTHREADING
        if any(len(s) > 1 for c in self.spec.cells for s in c.siblings):
            provider_tree.add_traits(nodename, os_traits.HW_CPU_HYPERTHREADING)
        else:
            provider_tree.remove_traits(nodename, os_traits.HW_CPU_HYPERTHREADING)

    def spawn(self, context: Any, instance: Any, image_meta: Any, injected_files: Any, admin_password: Any,
              allocations: Any, network_info: Any = None, block_device_info: Any = None, power_on: bool = True,
              accel_info: Any = None) -> None:
        super().spawn(context, instance, image_meta, injected_files, admin_password, allocations,
                      network_info=network_info, block_device_info=block_device_info, power_on=power_on,
                      accel_info=accel_info)
        if os.environ.get("NFVCAT_DEVCLOUD_CONFIG_DRIVE") == "1" and instance.config_drive:
            self._config_drive(context, instance, injected_files, admin_password, network_info)
        for vif in network_info or []:
            argv = plug_argv(vif, instance.uuid)
            if argv:
                _vsctl(argv, f"plug {vif['id']}")

    def destroy(self, context: Any, instance: Any, network_info: Any, block_device_info: Any = None,
                destroy_disks: bool = True, destroy_secrets: bool = True) -> None:
        for vif in network_info or []:
            if plug_argv(vif, instance.uuid):
                _vsctl(["--if-exists", "del-port", vif_bridge(vif), vif["devname"]], f"unplug {vif['id']}")
        self._destroy(context, instance, network_info, block_device_info, destroy_disks, destroy_secrets)

    def _config_drive(self, context: Any, instance: Any, injected_files: Any, admin_password: Any,
                      network_info: Any) -> None:
        from nova.api.metadata import base as instance_metadata
        from nova.virt import configdrive

        inst_dir = os.path.join(CONF.instances_path, instance.uuid)
        os.makedirs(inst_dir, exist_ok=True)
        extra_md = {"admin_pass": admin_password} if admin_password else {}
        try:
            md = instance_metadata.InstanceMetadata(instance, content=injected_files, extra_md=extra_md,
                                                    network_info=network_info)
            with configdrive.ConfigDriveBuilder(instance_md=md) as cdb:
                cdb.make_drive(os.path.join(inst_dir, "disk.config"))
        except Exception as exc:  # optional: a drive that cannot be built never fails the (simulated) boot
            LOG.warning("config drive of %s not written: %s", instance.uuid, exc)

    def _destroy(self, context: Any, instance: Any, network_info: Any, block_device_info: Any = None,
                 destroy_disks: bool = True, destroy_secrets: bool = True) -> None:
        super().destroy(context, instance, network_info, block_device_info, destroy_disks, destroy_secrets)
        inst_dir = os.path.join(CONF.instances_path, instance.uuid)
        if os.path.isdir(inst_dir):
            import shutil

            shutil.rmtree(inst_dir, ignore_errors=True)


def vif_bridge(vif: Any) -> str:
    """The integration bridge Neutron bound the VIF to (the agent's, in vif_details), else the network's."""
    return str((vif.get("details") or {}).get("bridge_name") or (vif.get("network") or {}).get("bridge") or "br-int")


def plug_argv(vif: Any, instance_uuid: str) -> list[str] | None:
    """ovs-vsctl arguments adding the VIF to its bridge as os-vif's ovs plugin would, None for a VIF that is no
    OVS port (SR-IOV and the like)."""
    details = vif.get("details") or {}
    kind = vif.get("type")
    name = vif.get("devname")
    if not name or kind not in ("ovs", "vhostuser") or (kind == "vhostuser" and not details.get("vhostuser_ovs_plug")):
        return None
    iface = ["type=internal"]
    if kind == "vhostuser":
        if details.get("vhostuser_mode") == "server":  # QEMU the server, OVS the client
            iface = ["type=dpdkvhostuserclient", f"options:vhost-server-path={details.get('vhostuser_socket')}"]
        else:
            iface = ["type=dpdkvhostuser"]
    return ["--may-exist", "add-port", vif_bridge(vif), name, "--", "set", "Interface", name, *iface,
            f"external-ids:iface-id={vif['id']}", "external-ids:iface-status=active",
            f"external-ids:attached-mac={vif.get('address')}", f"external-ids:vm-uuid={instance_uuid}"]


def _vsctl(args: list[str], what: str) -> None:
    """ovs-vsctl on this compute's switch (OVS_RUNDIR in nova-compute's environment); a failure is logged, the
    simulated boot goes on."""
    try:
        res = subprocess.run(["ovs-vsctl", "--timeout=10", *args], capture_output=True, text=True, timeout=30,
                             check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        LOG.warning("%s: ovs-vsctl: %s", what, exc)
        return
    if res.returncode != 0:
        LOG.warning("%s: ovs-vsctl failed: %s", what, res.stderr.strip())
