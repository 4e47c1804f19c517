"""The dev cloud's real compute host (hypervisor: libvirt) without starting it: the inventory kind, the accelerator
choice, the machine's CPU sets and the configuration its nova-compute and Open vSwitch agent get."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nfvcat.catalog import inventory
from nfvcat.core.errors import UserError
from nfvcat_testbeds.devcloud import accel, computes, realhost
from nfvcat_testbeds.devcloud.state import State

ROOT = Path(__file__).resolve().parents[2]
SECRETS = ('{"db": "x", "admin": "x", "glance": "x", "placement": "x", "nova": "x", "neutron": "x", "heat": "x", '
           '"tacker": "x"}')


def test_a_libvirt_host_needs_no_cells_a_simulated_one_does() -> None:
    inv = inventory.from_data({"kind": "nfvcat/inventory", "hosts": [{"name": "real", "hypervisor": "libvirt"}]})
    assert (inv.hosts[0].hypervisor, inv.hosts[0].cells) == ("libvirt", [])
    with pytest.raises(UserError, match="numa_cells"):
        inventory.from_data({"kind": "nfvcat/inventory", "hosts": [{"name": "sim"}]})
    with pytest.raises(UserError, match="hypervisor"):
        inventory.from_data({"kind": "nfvcat/inventory", "hosts": [{"name": "x", "hypervisor": "xen"}]})


def test_qemu_without_hardware_virtualisation_whatever_dev_kvm_says(tmp_path: Path) -> None:
    assert accel.virt_type(cpuinfo="flags\t: fpu sse2 hypervisor\n")[0] == "qemu"
    kind, why = accel.virt_type(cpuinfo="flags\t: fpu svm\n", device=str(tmp_path / "kvm"))
    assert kind == "qemu" and "no " + str(tmp_path / "kvm") in why
    # a device that is no KVM: the one-instruction guest cannot run, so no kvm
    fake = tmp_path / "notkvm"
    fake.write_text("")
    kind, why = accel.virt_type(cpuinfo="flags\t: fpu vmx\n", device=str(fake))
    assert kind == "qemu" and "did not halt" in why


def test_this_machine_is_judged_by_its_flags() -> None:
    flags = accel.cpu_flags()
    kind, why = accel.virt_type()
    assert (kind == "qemu") == (not flags & {"vmx", "svm"}), why


def test_cpu_sets_room_for_a_guest_and_its_replacement_the_rest_shared() -> None:
    assert realhost.cpu_sets([3, 0, 1, 2]) == ([0, 1], [2, 3])
    assert realhost.cpu_sets([1, 0]) == ([], [0, 1])  # this kind of machine: no shared CPU left
    with pytest.raises(UserError, match="2 CPUs or more"):
        realhost.cpu_sets([0])
    shared, dedicated = realhost.cpu_sets()
    assert sorted(shared + dedicated) == realhost.online_cpus()


def test_real_host_configuration(tmp_path: Path) -> None:
    state = State(tmp_path)
    (tmp_path / "secrets.json").write_text(SECRETS)
    inv = inventory.load(str(ROOT / "tools/testbeds/nfvcat_testbeds/devcloud/inventory.yaml"))
    real = next(c for c in computes.site_layout(inv) if c.real)
    nova = computes.nova_conf(state, real).read_text()
    shared, dedicated = realhost.cpu_sets()
    assert "compute_driver = nfvcat_devcloud.LibvirtDriver" in nova
    assert f"virt_type = {accel.virt_type()[0]}" in nova
    assert f"connection_uri = qemu:///system?socket={tmp_path}/run/libvirt-devcloud-real/libvirt-sock" in nova
    assert f"cpu_shared_set = {','.join(map(str, shared))}" in nova
    assert f"cpu_dedicated_set = {','.join(map(str, dedicated))}" in nova
    assert "[nova_sys_admin]\nhelper_command = " in nova
    agent = computes.agent_confs(state, real)["ovs"].read_text()
    assert "firewall_driver = openvswitch" in agent and "extensions = qos" in agent
    assert "local_ip = 169.254.199.12" in agent and "of_listen_address = 127.0.0.1" in agent
    simulated = computes.agent_confs(state, computes.site_layout(inv)[1])["ovs"].read_text()
    assert "firewall_driver = noop" in simulated and "local_ip = 169.254.199.11" in simulated


def test_libvirtd_runs_in_the_hosts_namespace_with_its_own_state(tmp_path: Path) -> None:
    lv = realhost.Libvirt(State(tmp_path), "devcloud-real")
    argv = lv.argv()
    assert argv[:4] == ["ip", "netns", "exec", "nfvcat-devcloud-real"]
    for target in ("/etc/libvirt", "/run/libvirt", "/var/lib/libvirt"):
        assert f" {target} " in argv[-1]
    assert argv[-1].endswith("-p /run/libvirt/libvirtd.pid")


def test_the_environment_file_names_the_dev_clouds_flavor_and_networks() -> None:
    import yaml

    env = yaml.safe_load(realhost.environment_files()["chain-vrouter"].read_text())["parameters"]
    assert env["flavor"] == realhost.FLAVOR
    assert {env["mgmt_network"], env["left_network"], env["right_network"]} == set(realhost.NETWORKS)


def _ini(path: Path) -> Any:
    import configparser

    cp = configparser.ConfigParser(interpolation=None)
    cp.read(path)
    return cp


def test_the_metadata_path_of_the_real_host(tmp_path: Path) -> None:
    """DHCP agent on the real host's own br-int and OVSDB, isolated metadata through haproxy to the metadata
    agent's socket, the metadata agent to Nova's metadata API on the loopback with the secret Nova checks."""
    from nfvcat_testbeds.devcloud import configs, metadata, services
    from nfvcat_testbeds.devcloud.state import PORTS

    state = State(tmp_path)
    (tmp_path / "secrets.json").write_text(SECRETS)
    inv = inventory.load(str(ROOT / "tools/testbeds/nfvcat_testbeds/devcloud/inventory.yaml"))
    layout = computes.site_layout(inv)
    real = next(c for c in layout if c.real)
    dhcp = _ini(metadata.dhcp_agent_conf(state, real))
    assert (dhcp["DEFAULT"]["host"], dhcp["DEFAULT"]["interface_driver"]) == ("devcloud-real", "openvswitch")
    assert dhcp["DEFAULT"]["ovs_use_veth"] == "true" and dhcp["DEFAULT"]["enable_isolated_metadata"] == "true"
    assert dhcp["ovs"]["integration_bridge"] == real.integration_bridge == "br-int2"
    assert dhcp["ovs"]["ovsdb_connection"] == f"unix:{real.ovs_run(state) / 'db.sock'}"
    meta = _ini(metadata.metadata_agent_conf(state, real))
    assert meta["DEFAULT"]["metadata_proxy_socket"] == dhcp["DEFAULT"]["metadata_proxy_socket"]
    assert (meta["DEFAULT"]["nova_metadata_host"], meta["DEFAULT"]["nova_metadata_port"]) == (
        "127.0.0.1", str(PORTS["nova_metadata"]))
    (tmp_path / "etc/nova").mkdir(parents=True, exist_ok=True)
    nova = _ini(configs.nova(state, inv))
    assert nova["neutron"]["service_metadata_proxy"] == "true"
    assert nova["neutron"]["metadata_proxy_shared_secret"] == meta["DEFAULT"]["metadata_proxy_shared_secret"] != ""
    server = _ini(configs.neutron(state)["server"])
    assert server["DEFAULT"]["network_auto_schedule"] == "false"
    # the DHCP agent in the host's network namespace (its veth must be there, beside the host's datapath), reaching
    # RabbitMQ through the relay; the simulated hosts have none of it
    path = {s.name: s for s in services.metadata_path(state, real)}
    agent = path["neutron-dhcp-agent@devcloud-real"].argv
    assert agent[:2] == ["nsenter", "--net=/run/netns/nfvcat-devcloud-real"]
    assert path["neutron-metadata-agent@devcloud-real"].argv[0].endswith("/neutron-metadata-agent")
    assert all(services.metadata_path(state, c) == [] for c in layout if not c.real)
    inv_file = ROOT / "tools/testbeds/nfvcat_testbeds/devcloud/inventory.yaml"
    started = [s.name for s in services.compute(state, real, inv_file)]
    assert set(path) <= set(started)
    # the relay of the host's namespace comes up before the agents that reach RabbitMQ through it
    assert started.index("amqp-relay-netns@devcloud-real") < started.index("neutron-dhcp-agent@devcloud-real")


def test_dhcp_on_the_management_network_only() -> None:
    assert {name for name, spec in realhost.NETWORKS.items() if spec[3]} == {"devcloud-mgmt"}


def test_the_real_hosts_guests_compute_their_own_checksums() -> None:
    """The userspace datapath does not complete checksums a guest leaves to its virtio NIC: each virtio NIC of the
    real host's guests goes to libvirt with the host-side offloads off (a driver element kept or added)."""
    import xml.etree.ElementTree as ET

    from nova.virt.libvirt import config

    from nfvcat_testbeds.devcloud.libvirtdriver import HOST_OFFLOADS_OFF, without_host_offloads

    def nic(model: str, driver_name: str | None = None) -> Any:
        n = config.LibvirtConfigGuestInterface()
        n.net_type, n.model, n.mac_addr, n.target_dev, n.driver_name = ("ethernet", model, "fa:16:3e:00:00:01",
                                                                        "tap0", driver_name)
        return n

    for driver_name in (None, "vhost"):
        dom = ET.fromstring(without_host_offloads(nic("virtio", driver_name)).to_xml())
        assert dom.find("./driver/host").attrib == HOST_OFFLOADS_OFF and HOST_OFFLOADS_OFF["csum"] == "off"
        assert dom.find("./driver").get("name") == driver_name and dom.find("./target").get("dev") == "tap0"
    assert ET.fromstring(without_host_offloads(nic("e1000")).to_xml()).find("./driver") is None


def test_a_guest_tap_left_down_is_brought_up() -> None:
    """taps_up reads each tap's flags in the host's namespace, brings up those without UP and names them; a tap
    that is up, or does not exist, is left alone."""
    import subprocess

    from nfvcat_testbeds.devcloud.libvirtdriver import taps_up

    links = {"tapup": "<BROADCAST,MULTICAST,PROMISC,UP,LOWER_UP>", "tapdown": "<BROADCAST,MULTICAST,PROMISC>"}
    calls: list[list[str]] = []

    def run(argv: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        calls.append(argv)
        name = argv[-1] if argv[-2] == "dev" else argv[-2]
        if "show" in argv:
            found = name in links
            out = f"7: {name}: {links[name]} mtu 1500 qdisc noqueue state DOWN" if found else ""
            return subprocess.CompletedProcess(argv, 0 if found else 1, out, "" if found else "Cannot find device")
        links[name] = links[name].replace(">", ",UP>")
        return subprocess.CompletedProcess(argv, 0, "", "")

    assert taps_up(["tapup", "tapdown", "tapgone"], "nfvcat-h", run=run) == ["tapdown"]
    assert ["ip", "-n", "nfvcat-h", "link", "set", "dev", "tapdown", "up"] in calls
    assert not [c for c in calls if "set" in c and c[-2] != "tapdown"]
    assert taps_up(["tapup", "tapdown"], None, run=run) == []  # now up; the machine's namespace: no -n
    assert calls[-1] == ["ip", "-o", "link", "show", "dev", "tapdown"]
