"""The dev cloud's compute hosts: one simulated nova-compute per inventory host, with the Neutron agents each
needs (Open vSwitch agent, SR-IOV NIC agent) and its own virtual switch.

A host's virtual switch is its kind's in the site profile (``host_kinds.<role>.vswitch``): the first
``ovs-dpdk`` host gets the dev cloud's main switch (``run/ovs``, the DPDK build when huge pages could be
reserved: every normal port binds ``vhostuser``); every other host gets a plain userspace Open vSwitch of its
own (``run/ovs-<n>``: ports bind ``ovs``) in the host's network namespace, with bridge names suffixed by the
host's position. Every host tunnels VXLAN from an endpoint of its own (:mod:`nfvcat_testbeds.devcloud.hostnet`).
Each host has its own nova-compute configuration (``etc/nova/compute-<host>.conf``: host, node identity and
state path, CPU sets, ``[pci] device_spec``), its own agent configurations and an OpenFlow listen port of its
own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from nfvcat.catalog import inventory
from nfvcat.core.errors import UserError
from nfvcat.plan import hoststate
from nfvcat_testbeds.devcloud import accel, configs, hostnet, realhost
from nfvcat_testbeds.devcloud.state import HOST, State

OF_PORT_BASE = 6633


@dataclass
class Compute:
    spec: inventory.HostSpec
    position: int
    vswitch: str  # ovs-dpdk | ovs (the site profile's kind of this host)
    main_switch: bool  # the dev cloud's main switch (run/ovs), else one of its own

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def real(self) -> bool:
        """This machine under Nova's libvirt driver (nfvcat_testbeds.devcloud.realhost), not a simulated hypervisor."""
        return realhost.is_real(self.spec)

    @property
    def tunnel_ip(self) -> str:
        """The host's tunnel endpoint (the OVS agent's ``local_ip``): its own, on its br-phy (hostnet)."""
        return hostnet.tunnel_address(self.position)

    @property
    def netns(self) -> str | None:
        """The host's network namespace (hostnet), None for the main switch's host (the machine's)."""
        return None if self.main_switch else hostnet.netns(self.name)

    def in_netns(self) -> list[str]:
        """The argv prefix that runs a command where the host's switch is."""
        return [] if self.main_switch else hostnet.in_netns(self.name)

    @property
    def phy_bridge(self) -> str:
        """The bridge holding the host's tunnel endpoint, with its underlay link as port (hostnet)."""
        return f"br-phy{self.suffix}"

    @property
    def suffix(self) -> str:
        return "" if self.main_switch else str(self.position)

    def bridge(self, physnet: str) -> str:
        return f"br-{physnet.removeprefix('physnet_')}{self.suffix}"[:15]

    @property
    def integration_bridge(self) -> str:
        return f"br-int{self.suffix}"

    def bridges(self) -> dict[str, str]:
        return {p: self.bridge(p) for p in self.spec.ovs_physnets}

    def ovs_run(self, state: State) -> Path:
        return state.run / ("ovs" if self.main_switch else f"ovs-{self.position}")

    def ovs_db(self, state: State) -> Path:
        return state.lib / ("ovs" if self.main_switch else f"ovs-{self.position}") / "conf.db"

    def state_path(self, state: State) -> Path:
        """Nova's state_path of this compute (it keeps its node identity file, compute_id, there)."""
        return state.lib / "nova" / "computes" / self.name

    def service(self, binary: str) -> str:
        return f"{binary}@{self.name}"


def layout(inv: inventory.Inventory, vswitch_of: dict[str, str]) -> list[Compute]:
    """The computes of an inventory; ``vswitch_of`` maps a host role to its virtual switch kind."""
    out: list[Compute] = []
    main_taken = False
    for i, spec in enumerate(inv.hosts):
        kind = vswitch_of.get(spec.role, "ovs")
        main = kind == "ovs-dpdk" and not main_taken
        main_taken = main_taken or main
        out.append(Compute(spec, i, kind, main))
    extra_dpdk = [c.name for c in out if c.vswitch == "ovs-dpdk" and not c.main_switch]
    if extra_dpdk:
        raise UserError(f"{inv.path}: the dev cloud runs one OVS-DPDK switch; hosts {', '.join(extra_dpdk)} are "
                        "also of an ovs-dpdk kind (give them a role whose site-profile vswitch is ovs)")
    return out


def site_layout(inv: inventory.Inventory) -> list[Compute]:
    from nfvcat import catalog
    from nfvcat.catalog import site

    profile = site.of_catalog(catalog.find_root())
    return layout(inv, {h.role: profile.vswitch(h.role) for h in inv.hosts})


def nova_conf(state: State, c: Compute) -> Path:
    """The per-host part of nova-compute's configuration (read after nova.conf, so it wins)."""
    shared = sorted(x for cell in c.spec.cells for x in cell.shared)
    dedicated = sorted(x for cell in c.spec.cells for x in cell.dedicated)
    device_spec = [json.dumps(s, sort_keys=True) for s in map(hoststate.derived_device_spec, c.spec.devices) if s]
    inst = state.lib / "nova" / "instances"
    c.state_path(state).mkdir(parents=True, exist_ok=True)
    ini: configs.Ini = {
        "DEFAULT": {"host": c.name, "state_path": str(c.state_path(state)), "instances_path": str(inst),
                    "log_file": str(state.log / f"{c.service('nova-compute')}.log"),
                    "reserved_host_memory_mb": c.spec.reserved_host_memory_mb,
                    "cpu_allocation_ratio": c.spec.cpu_allocation_ratio,
                    "ram_allocation_ratio": c.spec.ram_allocation_ratio},
        "compute": {"cpu_shared_set": ",".join(map(str, shared)), "cpu_dedicated_set": ",".join(map(str, dedicated))},
        "pci": {"device_spec": device_spec, "report_in_placement": True},
        "os_vif_ovs": {"ovsdb_connection": f"unix:{c.ovs_run(state) / 'db.sock'}"},
    }
    if c.real:
        shared, dedicated = realhost.cpu_sets()
        total = int(Path("/proc/sys/vm/nr_hugepages").read_text().strip())
        extra = realhost.nova_sections(state, c.name, accel.virt_type()[0], shared, dedicated,
                                       max(0, total - realhost.GUEST_PAGES))
        for section, values in extra.items():
            ini[section] = {**ini.get(section, {}), **values}
        Path(ini["DEFAULT"]["instances_path"]).mkdir(parents=True, exist_ok=True)
    return configs.write_multi(state.etc / "nova" / f"compute-{c.name}.conf", ini)


def agent_base(state: State, c: Compute) -> tuple[configs.Ini, configs.Ini]:
    """What every Neutron agent of a host is configured with: (its sections, its privsep helpers)."""
    helper = f"{state.venv_bin / 'privsep-helper'}"
    agent_ini: configs.Ini = {
        "DEFAULT": {"host": c.name, "transport_url": configs.transport(), "debug": False, "use_stderr": False},
        "agent": {"root_helper": "", "root_helper_daemon": ""},
        "securitygroup": {"firewall_driver": "noop"},
        "oslo_concurrency": {"lock_path": str(state.lib / "neutron/lock")},
    }
    privsep = {f"privsep{suffix}": {"helper_command": helper} for suffix in
               ("", "_ovs_vsctl", "_link", "_dhcp_release", "_namespace", "_conntrack")}
    return agent_ini, privsep


def agent_confs(state: State, c: Compute) -> dict[str, Path]:
    d = state.etc / "neutron"
    agent_ini, privsep = agent_base(state, c)
    (state.run / "vhu" / c.name).mkdir(parents=True, exist_ok=True)
    extensions = [*(["qos"] if c.real else []), *(["sfc"] if configs.sfc_enabled() else [])]
    ovs = configs.write(d / f"openvswitch_agent-{c.name}.ini", {
        **agent_ini,
        # a real host enforces security groups and anti-spoofing (the openvswitch firewall: conntrack flows on
        # br-int) and applies QoS policies; a simulated host's ports have no guest behind them
        "securitygroup": {"firewall_driver": "openvswitch" if c.real else "noop"},
        # VXLAN from the host's own tunnel endpoint over the underlay (hostnet): project networks (a VNF's internal
        # virtual links, configs.neutron) reach across hosts; networking-sfc's agent extension programs br-int and
        # needs the tunnel bridge too (it fails to start without)
        "agent": {**agent_ini["agent"], "tunnel_types": "vxlan",
                  **({"extensions": ",".join(extensions)} if extensions else {})},
        "ovs": {"local_ip": c.tunnel_ip, "tunnel_bridge": f"br-tun{c.suffix}",
                "bridge_mappings": ",".join(f"{p}:{b}" for p, b in c.bridges().items()),
                "datapath_type": "netdev", "vhostuser_socket_dir": str(state.run / "vhu" / c.name),
                "ovsdb_connection": f"unix:{c.ovs_run(state) / 'db.sock'}", "of_listen_address": HOST,
                "of_listen_port": OF_PORT_BASE + c.position, "integration_bridge": c.integration_bridge},
        **privsep,
    })
    sriov_map = ",".join(f"{dev.physnet}:{dev.device}" for dev in c.spec.devices if dev.physnet and dev.device)
    sriov = configs.write(d / f"sriov_agent-{c.name}.ini", {
        **agent_ini, "sriov_nic": {"physical_device_mappings": sriov_map}, **privsep})
    return {"ovs": ovs, "sriov": sriov}


def ovs_env(state: State, c: Compute) -> dict[str, str]:
    run = c.ovs_run(state)
    return {"OVS_RUNDIR": str(run), "OVS_DBDIR": str(c.ovs_db(state).parent), "OVS_LOGDIR": str(state.log),
            "OVS_SYSCONFDIR": str(state.etc / "ovs"), "OVS_PKGDATADIR": "/usr/share/openvswitch"}
