"""The dev cloud's compute layout from an inventory and the site profile, without starting anything."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nfvcat import catalog
from nfvcat.catalog import inventory, site
from nfvcat.core.errors import UserError
from nfvcat_testbeds.devcloud import computes, configs
from nfvcat_testbeds.devcloud.state import State

ROOT = Path(__file__).resolve().parents[2]


def test_default_inventory_hosts_and_switches() -> None:
    inv = inventory.load(str(ROOT / "tools/testbeds/nfvcat_testbeds/devcloud/inventory.yaml"))
    hosts = computes.site_layout(inv)
    assert [(c.name, c.vswitch, c.main_switch, c.real) for c in hosts] == [
        ("devcloud-smt", "ovs-dpdk", True, False), ("devcloud-nosmt", "ovs", False, False),
        ("devcloud-real", "ovs", False, True)]
    assert hosts[2].spec.cells == []
    assert hosts[0].bridges() == {"physnet_dpdk": "br-dpdk", "physnet_mgmt": "br-mgmt"}
    assert hosts[1].bridges() == {"physnet_mgmt": "br-mgmt1"} and hosts[1].integration_bridge == "br-int1"
    smt = [len(s) for c in hosts[0].spec.cells for s in c.siblings]
    nosmt = [len(s) for c in hosts[1].spec.cells for s in c.siblings]
    assert set(smt) == {2} and set(nosmt) == {1}


def test_each_host_tunnels_from_its_own_endpoint_beside_its_own_switch(tmp_path: Path) -> None:
    from nfvcat_testbeds.devcloud import hostnet, services

    state = State(tmp_path)
    (tmp_path / "secrets.json").write_text('{"db": "x", "admin": "x", "glance": "x", "placement": "x", '
                                           '"nova": "x", "neutron": "x", "heat": "x", "tacker": "x"}')
    inv_file = ROOT / "tools/testbeds/nfvcat_testbeds/devcloud/inventory.yaml"
    hosts = computes.site_layout(inventory.load(str(inv_file)))
    assert [c.tunnel_ip for c in hosts] == ["169.254.199.10", "169.254.199.11", "169.254.199.12"]
    assert [c.netns for c in hosts] == [None, "nfvcat-devcloud-nosmt", "nfvcat-devcloud-real"]
    assert [c.phy_bridge for c in hosts] == ["br-phy", "br-phy1", "br-phy2"]
    assert len({c.phy_bridge for c in hosts} | {b for c in hosts for b in c.bridges().values()}) == 7
    # every link a host has to the machine's bridges: a kernel name (15 characters at most), each its own
    links = [n for c in hosts for i in [None, *range(len(c.spec.ovs_physnets))]
             for n in hostnet.link_names(c.position, i)]
    assert len(set(links)) == len(links) == 2 * (3 + 4) and max(map(len, links)) <= 15
    assert [hostnet.segment(p) for p in (None, "physnet_mgmt", "physnet_dpdk")] == ["nfvcat-ul", "nfvcat-mgmt",
                                                                                   "nfvcat-dpdk"]
    for c in hosts:
        agent = computes.agent_confs(state, c)["ovs"].read_text()
        assert f"local_ip = {c.tunnel_ip}\n" in agent and "of_listen_address = 127.0.0.1\n" in agent
        started = {s.name: s for s in services.compute(state, c, inv_file)}
        ovs_agent = started[c.service("neutron-openvswitch-agent")].argv
        vswitchd = [s for s in services.switch(state, c) if s.name.startswith("ovs-vswitchd")]
        if c.netns is None:  # the main switch's host: the machine's namespace, the main switch (services.infra)
            assert ovs_agent[0].endswith("/neutron-openvswitch-agent") and vswitchd == []
            assert not any(n.startswith("amqp-relay") for n in started)
            continue
        # the agent checks its local_ip among its namespace's addresses: it runs there, RabbitMQ through the relay
        assert ovs_agent[:2] == hostnet.nsenter(c.name) == ["nsenter", f"--net=/run/netns/{c.netns}"]
        names = list(started)
        assert names.index(c.service("amqp-relay-netns")) < names.index(c.service("neutron-openvswitch-agent"))
        [switch] = vswitchd  # real netdevs (no dummy override), in the namespace
        assert switch.argv[:4] == ["ip", "netns", "exec", c.netns] and not any("dummy" in a for a in switch.argv)


def test_one_ovs_dpdk_host_at_most() -> None:
    inv = inventory.from_data({"kind": "nfvcat/inventory", "hosts": [
        {"name": f"h{i}", "role": "ovs-dpdk", "numa_cells": [{"id": 0, "memory_mb": 1024}]} for i in range(2)]})
    with pytest.raises(UserError, match="one OVS-DPDK switch"):
        computes.layout(inv, {"ovs-dpdk": "ovs-dpdk"})


def test_per_host_configuration(tmp_path: Path) -> None:
    state = State(tmp_path)
    (tmp_path / "secrets.json").write_text('{"db": "x", "admin": "x", "glance": "x", "placement": "x", '
                                           '"nova": "x", "neutron": "x", "heat": "x", "tacker": "x"}')
    inv = inventory.load(str(ROOT / "tools/testbeds/nfvcat_testbeds/devcloud/inventory.yaml"))
    nosmt = computes.site_layout(inv)[1]
    text = computes.nova_conf(state, nosmt).read_text()
    assert "host = devcloud-nosmt" in text and "cpu_dedicated_set = 2,3,4,5,6,7,8,9,10,11,14," in text
    assert "report_in_placement = true" in text and text.count("device_spec = ") == 4  # 2 NICs, 2 QAT PFs
    agent = computes.agent_confs(state, nosmt)["ovs"].read_text()
    assert "bridge_mappings = physnet_mgmt:br-mgmt1" in agent and "of_listen_port = 6634" in agent
    nova = configs.nova(state, inv).read_text()
    assert 'alias = {"device_type": "type-VF", "name": "qat-vf", "product_id": "37c9", "vendor_id": "8086"}' in nova
    assert "AggregateInstanceExtraSpecsFilter" in nova and "pci_in_placement = true" in nova


def test_vlan_ranges_and_host_kinds_from_the_site_profile() -> None:
    assert configs.vlan_ranges() == "physnet_dpdk:200:299,physnet_mgmt:300:399,physnet_sriov:100:199"
    profile = site.of_catalog(catalog.find_root())
    assert profile.vswitch("ovs-dpdk") == "ovs-dpdk" and profile.vswitch("compute") == "ovs"
    assert [a["name"] for a in profile.pci_aliases()] == ["qat-vf"]


def _ini(path: Path) -> Any:
    import configparser

    cp = configparser.ConfigParser()
    cp.read(path)
    return cp


@pytest.mark.parametrize("enabled", [True, False])
def test_networking_sfc_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, enabled: bool) -> None:
    monkeypatch.setenv(configs.SFC_ENV, "1" if enabled else "0")
    state = State(tmp_path)
    (tmp_path / "secrets.json").write_text('{"db": "x", "admin": "x", "glance": "x", "placement": "x", '
                                           '"nova": "x", "neutron": "x", "heat": "x", "tacker": "x"}')
    (tmp_path / "etc/neutron").mkdir(parents=True)
    server = _ini(configs.neutron(state)["server"])
    plugins = server["DEFAULT"]["service_plugins"].split(",")
    assert ("flow_classifier" in plugins and "sfc" in plugins) is enabled
    assert (server.has_section("sfc") and server["sfc"]["drivers"] == "ovs"
            and server["flowclassifier"]["drivers"] == "ovs") is enabled
    inv = inventory.load(str(ROOT / "tools/testbeds/nfvcat_testbeds/devcloud/inventory.yaml"))
    for c in computes.site_layout(inv):
        agent = _ini(computes.agent_confs(state, c)["ovs"])
        extensions = (agent["agent"].get("extensions") or "").split(",")
        assert ("sfc" in extensions and agent["agent"]["tunnel_types"] == "vxlan") is enabled
        assert ("qos" in extensions) is c.real
        assert agent["ovs"]["tunnel_bridge"] == f"br-tun{c.suffix}"
        sriov = _ini(computes.agent_confs(state, c)["sriov"])
        assert "extensions" not in sriov["agent"]


def test_networking_sfc_migrations_after_neutrons(tmp_path: Path) -> None:
    from nfvcat_testbeds.devcloud import bootstrap

    (tmp_path / "secrets.json").write_text('{"db": "x", "admin": "x", "glance": "x", "placement": "x", '
                                           '"nova": "x", "neutron": "x", "heat": "x", "tacker": "x"}')
    steps = [argv for key, group in bootstrap.db_syncs(State(tmp_path)).items() if "neutron" in key
             for argv, _ in group]
    assert len(steps) == 2 and steps[0][-2:] == ["upgrade", "heads"]
    assert steps[1][-4:] == ["--subproject", "networking-sfc", "upgrade", "head"]


def test_the_simulated_hypervisor_plugs_ovs_vifs_as_os_vif_would() -> None:
    from nfvcat_testbeds.devcloud import fakevirt

    base = {"id": "p1", "address": "fa:16:3e:00:00:01", "devname": "vhup1", "network": {"bridge": "br-int"}}
    vhu = {**base, "type": "vhostuser", "details": {"vhostuser_ovs_plug": True, "vhostuser_mode": "server",
                                                     "vhostuser_socket": "/run/vhu/vhup1", "bridge_name": "br-int1"}}
    argv = fakevirt.plug_argv(vhu, "i1")
    assert argv is not None and argv[:4] == ["--may-exist", "add-port", "br-int1", "vhup1"]
    assert "type=dpdkvhostuserclient" in argv and "options:vhost-server-path=/run/vhu/vhup1" in argv
    assert {"external-ids:iface-id=p1", "external-ids:attached-mac=fa:16:3e:00:00:01",
            "external-ids:iface-status=active", "external-ids:vm-uuid=i1"} <= set(argv)
    ovs = fakevirt.plug_argv({**base, "type": "ovs", "devname": "tapp1", "details": {}}, "i1")
    assert ovs is not None and ovs[2:4] == ["br-int", "tapp1"] and "type=internal" in ovs
    assert fakevirt.plug_argv({**base, "type": "hw_veb", "details": {}}, "i1") is None  # SR-IOV: no OVS port
