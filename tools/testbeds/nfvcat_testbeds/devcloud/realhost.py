"""The dev cloud's real compute host (an inventory host with ``hypervisor: libvirt``): this machine under Nova's
libvirt driver, QEMU guests that really boot.

- Where it runs: its network namespace (:mod:`nfvcat_testbeds.devcloud.hostnet`, as every host off the main switch)
  holds its Open vSwitch datapath (``ovs-vswitchd``, userspace: the kernel has no OVS module), its OVS and DHCP
  agents, and libvirtd with its guests. nova-compute and the metadata agent run beside the other hosts'; os-vif
  plugs each VIF into the host's br-int through OVSDB's Unix socket, libvirt creates the tap in the namespace.
- libvirtd is Debian's, with its own configuration, sockets and state, bind-mounted over ``/etc/libvirt``,
  ``/run/libvirt``, ``/var/lib/libvirt``, ``/var/log/libvirt`` and ``/var/cache/libvirt`` in its private mount
  namespace: a libvirt of the machine, if any, is left alone. Guests run as root without a security driver
  (a dev cloud, not a multi-tenant host), their consoles logged to files Nova reads (``stdio_handler = file``).
- ``virt_type``: ``kvm`` only where KVM can boot a guest (:mod:`nfvcat_testbeds.devcloud.accel`), else ``qemu`` (TCG).
- CPUs are the machine's: room for two FLAVOR guests comes first (``cpu_dedicated_set``), since Heat creates a
  server's replacement (an upgrade's new user data, a heal) before it deletes the server it replaces, and a
  host that holds one pinned guest only answers "No valid host" to every replacement; the online CPUs left, if
  any, are shared (``cpu_shared_set``: the guests' emulator threads; on a 2-CPU machine there are none and they
  float over each guest's own pCPU). Guest memory on 2 MiB huge pages reserved at ``up``
  (:mod:`nfvcat_testbeds.devcloud.host`) for two guests too, given back at ``down``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from nfvcat.core.errors import EXIT_ENGINE, UserError
from nfvcat_testbeds.devcloud import hostnet
from nfvcat_testbeds.devcloud.state import State

# The flavor the real host takes for the vRouter (the catalog's nfv.dpdk, 4 pinned vCPUs and 4 GiB on 1 GiB
# pages, does not fit a 2-CPU machine with 2 MiB pages): same shape, the machine's size. Created by `up`;
# templates name it through the dev cloud's environment files (ENV_DIR), never the catalog.
FLAVOR = "devcloud.vrouter"
FLAVOR_SIZE = {"vcpus": 1, "ram": 1024, "disk": 4}
FLAVOR_SPECS = {"hw:cpu_policy": "dedicated", "hw:mem_page_size": "2MB", "hw:numa_nodes": "1",
                "aggregate_instance_extra_specs:nfv_class": "libvirt"}
# The real host's chain networks (the environment files name them): VLANs like net-provider's nfv-mgmt and
# nfv-dpdk-left/right, with no gateway (the vRouter is it), on physnet_mgmt, the site profile's plain-OVS physnet:
# the real host's ports are taps on plain OVS (vif_type ovs, which is what check expects there; an OVS-DPDK
# physnet would expect vhostuser). DHCP (the last field) on the management network only: it is the one cloud-init
# configures by DHCP to reach the metadata service (the real host's DHCP agent serves it, lab.devcloud.metadata);
# the data networks have fixed addresses only (Nova's network_data.json says ipv4, not ipv4_dhcp), so no guest
# waits for a lease there (Debian's dhclient: 300 s an interface) before its day-0 runs.
NETWORKS = {"devcloud-mgmt": ("physnet_mgmt", 390, "172.31.0.0/24", True),
            "devcloud-left": ("physnet_mgmt", 391, "10.212.0.0/24", False),
            "devcloud-right": ("physnet_mgmt", 392, "10.213.0.0/24", False)}
GUEST_SLOTS = 2  # FLAVOR guests the real host holds at once: one and the replacement Heat creates first
GUEST_PAGES = 512 * GUEST_SLOTS + 128  # 2 MiB pages for guests of the real host: FLAVOR's 512 each, and headroom
ENV_DIR = Path(__file__).with_name("environments")
LIBVIRT_DIRS = {"etc": "/etc/libvirt", "run": "/run/libvirt", "lib": "/var/lib/libvirt", "log": "/var/log/libvirt",
                "cache": "/var/cache/libvirt"}


def is_real(spec: Any) -> bool:
    return getattr(spec, "hypervisor", "simulated") == "libvirt"


def online_cpus() -> list[int]:
    from nfvcat.catalog.inventory import parse_cpu_spec

    return sorted(parse_cpu_spec(Path("/sys/devices/system/cpu/online").read_text().strip()))


def cpu_sets(cpus: list[int] | None = None) -> tuple[list[int], list[int]]:
    """(shared, dedicated) of the machine: the last GUEST_SLOTS online CPUs dedicated to pinned guests (a FLAVOR
    guest and its replacement, which Heat creates before it deletes the first), the others shared (none on a
    machine of GUEST_SLOTS CPUs)."""
    cpus = online_cpus() if cpus is None else sorted(cpus)
    if len(cpus) < GUEST_SLOTS:
        raise UserError(f"devcloud: a real compute host needs {GUEST_SLOTS} CPUs or more (a pinned guest and its "
                        f"replacement); this machine has {len(cpus)}", EXIT_ENGINE)
    return cpus[:-GUEST_SLOTS], cpus[-GUEST_SLOTS:]


class Libvirt:
    """The libvirtd of one real host: its directories, configuration and connection URI."""

    def __init__(self, state: State, host: str) -> None:
        self.state = state
        self.host = host
        self.dirs = {"etc": state.etc / f"libvirt-{host}", "run": state.run / f"libvirt-{host}",
                     "lib": state.lib / f"libvirt-{host}", "log": state.log / f"libvirt-{host}",
                     "cache": state.lib / f"libvirt-{host}-cache"}

    @property
    def socket(self) -> Path:
        return self.dirs["run"] / "libvirt-sock"

    @property
    def uri(self) -> str:
        return f"qemu:///system?socket={self.socket}"

    def write_config(self) -> None:
        for d in self.dirs.values():
            d.mkdir(parents=True, exist_ok=True)
        for target in LIBVIRT_DIRS.values():  # bind-mount targets must exist
            Path(target).mkdir(parents=True, exist_ok=True)
        etc = self.dirs["etc"]
        (etc / "libvirtd.conf").write_text(
            'unix_sock_group = "root"\nunix_sock_rw_perms = "0770"\nauth_unix_ro = "none"\nauth_unix_rw = "none"\n'
            'log_outputs = "3:stderr"\n')
        (etc / "qemu.conf").write_text(
            'user = "root"\ngroup = "root"\ndynamic_ownership = 0\nremember_owner = 0\nsecurity_driver = "none"\n'
            'namespaces = []\nstdio_handler = "file"\n')

    def argv(self) -> list[str]:
        binds = " && ".join(f"mount --bind {self.dirs[k]} {target}" for k, target in LIBVIRT_DIRS.items())
        # `ip netns exec` gives the command a mount namespace of its own (slave of the machine's): the binds stay
        # there, and so do libvirtd's QEMU children
        return [*hostnet.in_netns(self.host), "sh", "-c",
                f"{binds} && exec /usr/sbin/libvirtd -f {LIBVIRT_DIRS['etc']}/libvirtd.conf "
                f"-p {LIBVIRT_DIRS['run']}/libvirtd.pid"]

    def virsh(self, *args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
        res = subprocess.run(["virsh", "-c", self.uri, *args], capture_output=True, text=True, timeout=60,
                             check=False)
        if check and res.returncode != 0:
            raise UserError(f"devcloud: virsh {' '.join(args)}: {res.stderr.strip()}", EXIT_ENGINE)
        return res

    def domains(self) -> list[str]:
        """Every domain libvirtd knows (running or defined)."""
        if not self.socket.exists():
            return []
        res = self.virsh("list", "--all", "--name")
        return [n for n in res.stdout.split() if n] if res.returncode == 0 else []

    def destroy_all(self) -> list[str]:
        """Destroy and undefine every domain (``down``: QEMU runs in a session of its own and would outlive
        libvirtd)."""
        gone = []
        for name in self.domains():
            self.virsh("destroy", name)
            self.virsh("undefine", "--nvram", name)
            gone.append(name)
        return gone


def nova_sections(state: State, host: str, virt_type: str, shared: list[int], dedicated: list[int],
                  reserved_pages: int) -> dict[str, dict[str, Any]]:
    """What a real host's nova-compute configuration adds to (or changes in) a simulated host's."""
    helper = str(state.venv_bin / "privsep-helper")
    libvirt: dict[str, Any] = {"virt_type": virt_type, "connection_uri": Libvirt(state, host).uri,
                               "images_type": "qcow2", "inject_partition": -2}
    if virt_type == "qemu":
        # TCG: no host CPU to pass through or model from; QEMU's default model (qemu64), with the guest NUMA
        # topology Nova gives it
        libvirt["cpu_mode"] = "none"
    return {
        "DEFAULT": {"compute_driver": "nfvcat_devcloud.LibvirtDriver", "force_raw_images": False,
                    "instances_path": str(state.lib / "nova" / "computes" / host / "instances")},
        "compute": {"cpu_shared_set": ",".join(map(str, shared)), "cpu_dedicated_set": ",".join(map(str, dedicated)),
                    "reserved_huge_pages": [f"node:0,size:2048,count:{reserved_pages}"] if reserved_pages else []},
        "libvirt": libvirt,
        "vnc": {"enabled": False},
        "serial_console": {"enabled": False},
        **{section: {"helper_command": helper} for section in
           ("nova_sys_admin", "vif_plug_ovs_privileged", "vif_plug_linux_bridge_privileged", "privsep_osbrick")},
    }


def environment_files() -> dict[str, Path]:
    """The dev cloud's Heat environment files for its real host, by chain (e.g. chain-vrouter)."""
    return {p.name.removesuffix(".env.yaml"): p for p in sorted(ENV_DIR.glob("*.env.yaml"))}


def ensure_flavor(conn: Any) -> str:
    """The flavor FLAVOR on the cloud (find or create; extra specs set)."""
    flavor = conn.compute.find_flavor(FLAVOR, ignore_missing=True)
    if flavor is None:
        flavor = conn.compute.create_flavor(name=FLAVOR, is_public=True, **FLAVOR_SIZE)
    have = dict(conn.compute.fetch_flavor_extra_specs(flavor).extra_specs or {})
    if any(have.get(k) != v for k, v in FLAVOR_SPECS.items()):
        conn.compute.create_flavor_extra_specs(flavor, FLAVOR_SPECS)
    return str(flavor.id)


def ensure_networks(conn: Any) -> list[str]:
    """NETWORKS on the cloud (find or create, shared), each with one subnet, DHCP on or off as NETWORKS says (an
    existing subnet is updated). Returns the names of those with DHCP."""
    dhcp = []
    for name, (physnet, vlan, cidr, with_dhcp) in NETWORKS.items():
        net = conn.network.find_network(name)
        if net is None:
            net = conn.network.create_network(name=name, provider_network_type="vlan", is_shared=True,
                                              provider_physical_network=physnet, provider_segmentation_id=vlan)
        subnets = list(conn.network.subnets(network_id=net.id))
        if not subnets:
            conn.network.create_subnet(network_id=net.id, name=name, ip_version=4, cidr=cidr,
                                       is_dhcp_enabled=with_dhcp, gateway_ip=None)
        for sub in subnets:
            if sub.is_dhcp_enabled != with_dhcp:
                conn.network.update_subnet(sub, is_dhcp_enabled=with_dhcp)
        if with_dhcp:
            dhcp.append(name)
    return dhcp
