"""The catalog site's model (nfvcat.packaging.site): what the chain diagram is drawn from and what the pages say,
read from the templates and the release record; the browser tier (tests/site) checks the rendered pages."""

from __future__ import annotations

import yaml

from nfvcat.packaging import site
from nfvcat.packaging.site import diagram
from tests.conftest import ROOT, tracked_entries

SFC = ROOT / "templates" / "heat" / "chain-sfc"


def test_the_sfc_chain_model_has_its_vnfs_networks_group_and_port_pairs() -> None:
    chain = diagram.model(yaml.safe_load((SFC / "chain-sfc.yaml").read_text()),
                          yaml.safe_load((SFC / "examples" / "udp-flows.env.yaml").read_text()))
    assert [v.name for v in chain.vnfs] == ["vrouter_a", "vrouter_b"]
    assert {v.group for v in chain.vnfs} == {"pair_group"}
    assert chain.groups == {"pair_group": "server group pair_group (anti-affinity)"}
    a = chain.vnfs[0]
    assert [(p, chain.networks[n], vnic) for p, n, vnic in a.ports] == [
        ("mgmt", "mgmt_network = nfv-mgmt", "ovs"), ("left", "left_network = sfc-left", "ovs-dpdk"),
        ("right", "right_network = sfc-right", "ovs-dpdk")]
    assert "SFC port pair port_pair_a: in left → out right" in a.notes
    svg = diagram.svg(chain, "chain-sfc")
    assert svg.count('class="vnf"') == 2 and "OVS-DPDK" in svg and "anti-affinity" in svg


def test_a_vnf_template_draws_its_server_ports_with_either_vnic_of_an_if() -> None:
    vnf = ROOT / "templates" / "heat" / "vnf-vrouter"
    chain = diagram.model(yaml.safe_load((vnf / "vrouter.yaml").read_text()))
    assert [v.name for v in chain.vnfs] == ["server"]
    vnics = {p: vnic for p, _, vnic in chain.vnfs[0].ports}
    assert vnics["mgmt"] == "normal" and vnics["left"] == "direct|normal"  # binding:vnic_type is an if


def test_the_pages_hold_the_record_and_nova_descriptions() -> None:
    pages = {p.rel: p for p in site.collect(ROOT)}
    assert len(pages) == len(tracked_entries())
    chain = pages["templates/heat/chain-vrouter"]
    assert [v.version for v in chain.versions][-3:] == ["1.1.1", "1.1.0", "1.0.0"]  # newest first
    assert chain.versions[-1].changes is None and all(v.changes is not None for v in chain.versions[:-1])
    released = {v.version: v.released for v in chain.versions}
    assert released["1.0.0"] == "2026-11-23"  # release 1's record had no date: git's history of the record has
    assert chain.diagram.startswith("<svg") and chain.commands[0] == "nfvcat validate chain-vrouter"
    assert site.explain("hw:cpu_policy").startswith("The policy to apply when determining")
    assert site.explain("aggregate_instance_extra_specs:nfv_class").startswith("Specify metadata")
    assert site.explain("nfvcat:made-up") == "not an extra spec Nova describes"


def test_a_network_taken_by_name_is_labelled_with_the_catalogs_provider_network() -> None:
    from nfvcat import catalog
    from nfvcat.plan.hot_reader import read_yaml

    provider = catalog.provider_networks(ROOT, read_yaml)
    chain_dir = ROOT / "templates" / "heat" / "chain-vrouter"
    env = yaml.safe_load((chain_dir / "examples" / "ovs-dpdk.env.yaml").read_text())
    chain = diagram.model(yaml.safe_load((chain_dir / "chain-vrouter.yaml").read_text()), env, provider)
    left = env["parameters"]["left_network"]
    net = provider[left]
    assert chain.networks["param:left_network"] == (
        f"left_network = {left}  [{net['network_type']} {net['physical_network']} VLAN {net['segmentation_id']}]")


def test_a_template_of_networks_alone_draws_its_networks() -> None:
    data = yaml.safe_load((ROOT / "templates" / "heat" / "net-provider" / "net-provider.yaml").read_text())
    chain = diagram.model(data)
    assert chain.vnfs == [] and chain.networks
    svg = diagram.svg(chain, "net-provider")
    assert svg.count("<rect") == len(chain.networks)  # a bar per network
    assert all(label.split("  [")[0] in svg and "VLAN" in label for label in chain.networks.values())
