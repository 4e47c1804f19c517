"""``nfvcat day0 render|configdrive``: the user data is the template's own str_replace resolved by Heat,
network_data.json matches it, and the ISO is Nova's config drive layout."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import yaml

from nfvcat_testbeds.lab import chain as c
from tests.conftest import ROOT, nfvcat

GW_A = [a for k, v in c.gateway_parameters("a", udp_encap=True).items() for a in ("-P", f"{k}={v}")]


def test_render_resolves_every_placeholder_of_the_hook(tmp_path: Path) -> None:
    proc = nfvcat("day0", "render", "vnf-ipsec-gw", *GW_A)
    assert proc.returncode == 0, proc.stderr
    ud = proc.stdout
    assert ud.startswith("#cloud-config\n")
    assert not re.findall(r"__[A-Z_]+__", ud.split("write_files:", 1)[1]), "a placeholder is left"
    hook = (ROOT / "hooks/ipsec-gw/user-data.yaml").read_text()
    # Outside the placeholders, the bytes are the hook's
    assert ud.splitlines()[:8] == hook.splitlines()[:8]
    data = yaml.safe_load(ud)
    files = {f["path"]: f for f in data["write_files"]}
    conf = files["/etc/swanctl/conf.d/nfvcat-s2s.conf"]["content"]
    assert f"local_addrs = {c.GWA_WAN}" in conf and f"remote_addrs = {c.GWB_WAN}" in conf
    assert "encap = yes" in conf and "start_action = start" in conf and "dpd_action = restart" in conf
    assert c.PSK in files["/etc/swanctl/conf.d/nfvcat-s2s-secrets.conf"]["content"]
    assert f"{c.SITE_A} {c.VR_RIGHT}" in files["/etc/ipsec-gw/routes"]["content"]
    # cloud-init's schema accepts the rendered user data
    (tmp_path / "user-data.yaml").write_text(ud)
    check = nfvcat("validate", str(tmp_path / "user-data.yaml"))
    assert check.returncode == 0, check.stdout + check.stderr


def test_network_data_matches_the_user_data_macs() -> None:
    args = [a for k, v in c.vrouter_parameters().items() for a in ("-P", f"{k}={v}")]
    ud = nfvcat("day0", "render", "vnf-vrouter", *args)
    nd = nfvcat("day0", "render", "vnf-vrouter", *args, "--what", "network_data")
    assert ud.returncode == 0 and nd.returncode == 0, ud.stderr + nd.stderr
    net = json.loads(nd.stdout)
    macs = [link["ethernet_mac_address"] for link in net["links"]]
    assert len(macs) == 3 and all(m.startswith("fa:16:3e:") for m in macs)
    assert f"LEFT_MAC={macs[1]}" in ud.stdout and f"RIGHT_MAC={macs[2]}" in ud.stdout
    nets = {n["link"]: n for n in net["networks"]}
    left = nets[net["links"][1]["id"]]
    assert left["type"] == "ipv4" and left["ip_address"] == c.VR_LEFT and left["netmask"] == "255.255.255.0"
    assert nets[net["links"][0]["id"]]["ip_address"] == "192.168.150.1"  # from -P mgmt_port.fixed_ips...
    again = nfvcat("day0", "render", "vnf-vrouter", *args, "--what", "network_data")
    assert again.stdout == nd.stdout, "deterministic"


def test_configdrive_is_novas_layout(tmp_path: Path) -> None:
    iso = tmp_path / "gw-a.iso"
    proc = nfvcat("day0", "configdrive", "vnf-ipsec-gw", *GW_A, "-o", str(iso))
    assert proc.returncode == 0, proc.stderr
    info = subprocess.run(["isoinfo", "-d", "-i", str(iso)], capture_output=True, text=True, check=True).stdout
    assert "Volume id: config-2" in info and "Joliet" in info and "Rock Ridge" in info
    listing = subprocess.run(["isoinfo", "-R", "-f", "-i", str(iso)], capture_output=True, text=True,
                             check=True).stdout.split()
    assert {"/openstack/latest/user_data", "/openstack/latest/meta_data.json",
            "/openstack/latest/network_data.json"} <= set(listing)
    ud = subprocess.run(["isoinfo", "-R", "-i", str(iso), "-x", "/openstack/latest/user_data"], capture_output=True,
                        check=True).stdout
    assert ud.decode() == nfvcat("day0", "render", "vnf-ipsec-gw", *GW_A).stdout


def test_errors_are_one_line() -> None:
    proc = nfvcat("day0", "render", "vnf-ipsec-gw", "-P", "peer_address=192.0.2.1")
    assert proc.returncode == 1
    assert proc.stderr.strip().count("\n") == 0 and "psk" in proc.stderr, proc.stderr
    proc = nfvcat("day0", "render", "vnf-vrouter")
    assert proc.returncode == 1 and "-P mgmt_port.fixed_ips.0.ip_address=" in proc.stderr, proc.stderr
    proc = nfvcat("day0", "render", "no-such-vnf")
    assert proc.returncode == 1 and "no-such-vnf: no such file, nor a heat entry" in proc.stderr


def test_two_servers_get_different_macs() -> None:
    """Like Neutron's: two gateways of one chain must not share MAC addresses on a common L2 segment."""
    from nfvcat.day0.render import render

    a = render("vnf-ipsec-gw", parameters=c.gateway_parameters("a", udp_encap=False))
    b = render("vnf-ipsec-gw", parameters=c.gateway_parameters("b", udp_encap=False))
    assert not {p.mac for p in a.ports} & {p.mac for p in b.ports}
    assert a.server_uuid != b.server_uuid
