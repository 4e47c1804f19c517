"""``nfvcat plan``: placements, reasons in Nova's terms, JSON shape, HOT input, capacity and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nfvcat.catalog import inventory
from nfvcat.core.errors import UserError
from nfvcat.plan import capacity
from nfvcat.plan.planner import Failure, Placement, Planner
from nfvcat.plan.request import Chain, Flavor, Port, Vnf, find_flavor
from tests.conftest import ROOT, nfvcat

FIX = ROOT / "tests" / "fixtures" / "plan"
FLAVORS = ["--flavors", str(FIX / "flavors")]
EDGE = str(FIX / "edge-inventory.yaml")


def flavor(name: str) -> Flavor:
    return find_flavor(name, [str(FIX / "flavors")])


def place_one(inv_path: str | None, vnf: Vnf) -> Placement | Failure:
    planner = Planner(inventory.load(inv_path))
    return planner.place(planner.demand(vnf), vnf.name)


def reasons_of(got: Placement | Failure) -> dict[str, str]:
    assert isinstance(got, Failure), got
    return {host: r.message for host, r in got.reasons}


def test_chain_fits_and_lands_numa_local() -> None:
    proc = nfvcat("plan", str(FIX / "chain.yaml"), *FLAVORS, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["fits"] is True and doc["strategy"] == "spread" and doc["failures"] == []
    assert {"inventory", "hosts", "source", "strategy", "host_choice", "seconds", "exact_fits",
            "placements"} <= set(doc)
    gw = [p for p in doc["placements"] if p["vnf"] == "ipsec-gw"]
    assert len(gw) == 2 and gw[0]["host"] != gw[1]["host"], "anti-affinity"
    for p in gw:
        tie = {"undecided", "undecided_hosts", "undecided_reason"}  # identical SR-IOV hosts: Nova's order decides
        assert set(p) - tie == {"vnf", "instance", "host", "role", "numa_cells", "pinned_cpus", "emulator_cpus",
                                "page_size", "cpu_policy", "pci_devices"} and set(p) & tie in (set(), tie)
        assert p["role"] == "sriov" and p["page_size"] == "1G" and len(p["pinned_cpus"]) == 4
        nodes = {d["numa_node"] for d in p["pci_devices"]}
        assert nodes == set(p["numa_cells"]), "required PCI NUMA affinity: devices on the guest's node"
        assert {d["vendor_product"] for d in p["pci_devices"]} == {"8086:37c9", "8086:154c"}
    vr = next(p for p in doc["placements"] if p["vnf"] == "vrouter")
    assert vr["role"] == "ovs-dpdk" and len(vr["emulator_cpus"]) == 1
    assert vr["numa_cells"] == [0], "NUMA-aware vSwitch: physnet_dpdk and the tunnel are on node 0"


def test_text_output_and_exit_2_when_something_does_not_fit() -> None:
    proc = nfvcat("plan", "--flavor", "too-wide", *FLAVORS)
    assert proc.returncode == 2
    assert "not enough dedicated CPUs in any NUMA cell: need 50 in one cell" in proc.stdout
    assert "host choice: spread" in proc.stdout
    assert proc.stderr == ""


def test_failure_json_groups_hosts_by_reason() -> None:
    proc = nfvcat("plan", "--flavor", "sriov-vnf", "--port", "direct:sriov1", "--inventory", EDGE, *FLAVORS,
                  "--format", "json", "--strategy", "pack")
    assert proc.returncode == 2
    doc = json.loads(proc.stdout)
    assert doc["strategy"] == "pack" and doc["fits"] is False
    (f,) = doc["failures"]
    assert set(f) == {"vnf", "instance", "summary", "hosts"}
    assert set(f["hosts"]) == {"edge-1", "smt-1"}
    assert {g["code"] for g in f["summary"]} == {"pci-numa:port direct physnet sriov1", "pci:none"}
    assert all(set(g) == {"code", "hosts", "message", "host_names", "same_message"} for g in f["summary"])


def test_reason_vf_not_on_the_required_numa_node() -> None:
    vnf = Vnf("fw", flavor("sriov-vnf"), ports=[Port("direct", "sriov1")])
    msg = reasons_of(place_one(EDGE, vnf))["edge-1"]
    assert "no free device for port direct physnet sriov1 on the NUMA node" in msg
    assert "required" in msg and "node0 4" in msg


def test_reason_no_1g_pages_left() -> None:
    vnf = Vnf("big", Flavor("big", 2, 20480, extra_specs={"hw:cpu_policy": "dedicated",
                                                          "hw:mem_page_size": "1GB"}), count=1)
    msg = reasons_of(place_one(EDGE, vnf))
    assert msg["edge-1"].startswith("no 1G pages left: need 20 x 1G in one NUMA cell")
    assert "cell0 none configured, cell1 4" in msg["edge-1"]
    assert "free pages: cell0 16" in msg["smt-1"]


def test_reason_thread_isolate_on_smt_host_and_require_without_smt() -> None:
    planner = Planner(inventory.load(None))
    iso = planner.demand(Vnf("iso", flavor("isolate")))
    got = planner.place(iso, "iso")
    assert isinstance(got, Placement) and got.host == "sriov-rt-compute-1", "the one host without SMT"
    msg = {h: r.message for h, r in planner.explain(iso, "iso").reasons}
    assert all("isolate on a host with SMT thread siblings" in m for h, m in msg.items() if "-rt-" not in h)
    planner = Planner(inventory.load(EDGE))
    req = Vnf("req", Flavor("req", 2, 1024, extra_specs={"hw:cpu_policy": "dedicated",
                                                         "hw:cpu_thread_policy": "require"}))
    got = planner.place(planner.demand(req), "req")
    assert isinstance(got, Placement) and got.host == "smt-1"
    planner.hosts[1].spec.role = "x"  # only the SMT host can take it; fill it via pinning
    for c in planner.hosts[1].topology.cells:
        c.pinned_cpus = set(c.pcpuset)
    planner.hosts[1]._cells = None
    msg = reasons_of(planner.place(planner.demand(req), "req2"))
    assert "without SMT" in msg["edge-1"]


def test_reason_role_anti_affinity_and_invalid_flavor() -> None:
    chain = Chain("t", [Vnf("vr", flavor("dpdk-vnf"), count=5, server_group="g")], {"g": "anti-affinity"})
    planner = Planner(inventory.load(None))
    result = planner.place_chain(chain)
    assert len(result.placements) == 4, "four OVS-DPDK hosts, one member each"
    msgs = {h: r.message for h, r in result.failures[0].reasons}
    assert "already has a member on this host" in msgs["dpdk-compute-1"]
    assert msgs["sriov-compute-1"] == "host role is sriov, flavor requires ovs-dpdk"
    bad = place_one(None, Vnf("rt", flavor("bad-rt")))
    assert isinstance(bad, Failure) and "RealtimeMaskNotFoundOrInvalid" in bad.reasons[0][1].message


def test_reason_vhostuser_without_hugepages_and_unmapped_physnet() -> None:
    plain = Vnf("p", Flavor("p", 2, 2048, extra_specs={"hw:cpu_policy": "dedicated"}),
                ports=[Port("normal", "physnet_dpdk")])
    msg = reasons_of(place_one(None, plain))
    assert "need guest memory on huge pages" in msg["dpdk-compute-1"]
    assert "physnet 'physnet_dpdk' is not in the host's OVS bridge_mappings" in msg["sriov-compute-1"]


def test_capacity_and_what_runs_out_first() -> None:
    planner = Planner(inventory.load(EDGE))
    vnf = Vnf("p", Flavor("p", 4, 8192, extra_specs={"hw:cpu_policy": "dedicated", "hw:mem_page_size": "1GB"}))
    res = capacity.run(planner, Chain("c", [vnf]), 100)
    assert res.copies == 2, "smt-1 has 16 x 1G pages: two 8 GiB guests; edge-1 has none on the CPUs' node"
    assert [(c, n) for c, n, _ in res.runs_out] == [("pages:1G", 2)]
    assert res.usage["pages 1G"] == {"used": 16, "total": 20}
    proc = nfvcat("plan", "--flavor", "small-shared", "--capacity", "--inventory", EDGE, *FLAVORS, "--format", "json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0 and doc["copies"] > 0 and doc["runs_out_first"]
    assert {"copies", "limit_reached", "runs_out_first", "failure", "usage"} <= set(doc)


def test_hot_template_is_read_statically() -> None:
    from nfvcat.core import yamlpos
    from nfvcat.plan import hot_reader

    path = FIX / "chain.hot.yaml"
    chain = hot_reader.load(str(path), yamlpos.load(path.read_text())[0], {}, [str(FIX / "flavors")])
    by = {v.name: v for v in chain.vnfs}
    assert by["gw_a"].flavor.name == "qat-ipsec" and by["gw_a"].ports == [Port("direct", "physnet_sriov")]
    assert by["gw_a"].server_group == "ha" and chain.server_groups == {"ha": "anti-affinity"}
    assert by["vrouter"].flavor.extra_specs["hw:mem_page_size"] == "1GB"
    assert by["vrouter"].ports == [Port("normal", "physnet_dpdk")]
    proc = nfvcat("plan", str(path), *FLAVORS, "-P", "gw_flavor=pinned-1g", "--format", "json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {p["instance"] for p in json.loads(proc.stdout)["placements"]} == {"gw_a", "gw_b", "vrouter"}


@pytest.mark.parametrize(("args", "needle"), [
    (["--inventory", str(FIX / "bad-inventory.yaml"), "--flavor", "small-shared"],
     "bad-inventory.yaml: inventory does not match the schema at /hosts/0/numa_cells/0/memory_mb"),
    (["--inventory", str(FIX / "nope.yaml"), "--flavor", "small-shared"], "nope.yaml: cannot read inventory"),
    (["--flavor", "no-such-flavor"], "no catalog flavor 'no-such-flavor'"),
    ([str(FIX / "chain.yaml"), "--flavor", "small-shared"], "either a request/template or --flavor"),
    (["--flavor", "small-shared", "--port", "weird:x"], "unknown vnic_type 'weird'"),
])
def test_bad_input_is_one_line_and_exit_1(args: list[str], needle: str) -> None:
    proc = nfvcat("plan", *args, *FLAVORS)
    assert proc.returncode == 1
    assert len(proc.stderr.strip().splitlines()) == 1 and needle in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_inventory_semantics_are_checked(tmp_path: Path) -> None:
    base = {"kind": "nfvcat/inventory", "hosts": [{"name": "a", "numa_cells": [
        {"id": 0, "cpu_dedicated_set": "0-3", "cpu_shared_set": "3-4", "memory_mb": 1024}]}]}
    with pytest.raises(UserError, match="both dedicated and shared"):
        inventory.from_data(base, "x.yaml")
    base["hosts"][0]["numa_cells"][0]["cpu_shared_set"] = "4"  # type: ignore[index]
    base["hosts"].append(dict(base["hosts"][0]))  # type: ignore[attr-defined]
    with pytest.raises(UserError, match="duplicate host name 'a'"):
        inventory.from_data(base, "x.yaml")


def test_reference_inventory_is_numa_balanced() -> None:
    inv = inventory.load(None)
    roles = {h.role for h in inv.hosts}
    assert roles == {"sriov", "ovs-dpdk"}
    for h in inv.hosts:
        assert len(h.cells) == 2
        if h.role == "sriov" and any(d.kind == "qat" for d in h.devices):
            assert {d.numa_node for d in h.devices if d.physnet == "physnet_sriov"} == {0, 1}
            assert {d.numa_node for d in h.devices if d.kind == "qat"} == {0, 1}


def test_collect_builds_a_loadable_inventory_from_api_data() -> None:
    from nfvcat.plan import collect

    hvs = [{"name": "c1.example", "host": "c1", "vcpus": 64, "memory_mb": 262144,
            "cpu_info": '{"topology": {"sockets": 2, "cores": 16, "threads": 2}}'}]
    placement = {"c1.example": {"traits": ["HW_CPU_HYPERTHREADING"], "inventories": {
        "VCPU": {"total": 8, "allocation_ratio": 4.0}, "PCPU": {"total": 48},
        "MEMORY_MB": {"total": 262144, "reserved": 4096, "allocation_ratio": 1.0}}}}
    agents = [{"host": "c1", "agent_type": collect.SRIOV_AGENT,
               "configurations": {"device_mappings": {"sriov1": ["ens1f0", "ens4f0"]}, "devices": 32}},
              {"host": "c1", "agent_type": collect.OVS_AGENT,
               "configurations": {"bridge_mappings": {"provider": "br-ex"}, "tunnel_types": ["vxlan"]}}]
    inv = inventory.from_data(collect.build(hvs, placement, agents), "collected")
    (host,) = inv.hosts
    assert host.name == "c1" and host.role == "sriov" and host.ovs_physnets == ["provider"]
    assert [len(c.dedicated) for c in host.cells] == [24, 24] and sum(len(c.shared) for c in host.cells) == 8
    assert [d.vfs.count for d in host.devices if d.vfs] == [16, 16]
    planner = Planner(inv)
    got = planner.place(planner.demand(Vnf("x", Flavor("x", 4, 4096, extra_specs={"hw:cpu_policy": "dedicated"}),
                                           ports=[Port("direct", "sriov1")])), "x")
    assert isinstance(got, Placement) and got.pci_devices[0]["numa_node"] is None


def test_guest_without_pci_keeps_off_the_nic_numa_node() -> None:
    """numa_fit_instance_to_host always gets the host's PciDeviceStats (as the scheduler passes it): a guest
    without PCI requests is placed on the cells with fewer devices first."""
    vnf = Vnf("plain", Flavor("plain", 2, 2048, extra_specs={"hw:cpu_policy": "dedicated"}, host={"role": "sriov"}))
    got = place_one(EDGE, vnf)
    assert isinstance(got, Placement) and got.host == "edge-1" and got.numa_cells == [1]
    sriov = Vnf("fw", Flavor("fw", 2, 2048, extra_specs={"hw:cpu_policy": "dedicated"}, host={"role": "sriov"}),
                ports=[Port("direct", "sriov1")])
    got = place_one(EDGE, sriov)
    assert isinstance(got, Placement) and got.numa_cells == [0] and got.pci_devices[0]["numa_node"] == 0


def test_numa_aware_vswitch_limits_ovs_dpdk_guests_to_the_nic_node() -> None:
    vnf = Vnf("vr", flavor("dpdk-vnf"), ports=[Port("normal", "physnet_dpdk"), Port("normal")])
    res = capacity.run(Planner(inventory.load(None)), Chain("c", [vnf]), 1000)
    assert res.copies == 24, "6 x (6 vCPUs + 1 emulator PCPU) on node 0 of each of the 4 OVS-DPDK hosts"
    runs_out = {code: (hosts, msg) for code, hosts, msg in res.runs_out}
    assert runs_out["role"][0] == 5, "the SR-IOV hosts: role"
    hosts, msg = runs_out["vswitch-numa"]
    assert hosts == 4 and "physnet_dpdk on node 0" in msg and "cell0 6" in msg


CATALOG = sorted((ROOT / "flavors").glob("*/flavor.yaml"))


@pytest.mark.parametrize("path", CATALOG, ids=[p.parent.name for p in CATALOG])
def test_every_catalog_flavor_has_a_home_in_the_reference_inventory(path: Path) -> None:
    got = place_one(None, Vnf("x", find_flavor(str(path), [])))
    assert isinstance(got, Placement), {h: r.message for h, r in got.reasons}


def test_inventory_check_command() -> None:
    ok = nfvcat("inventory", "check")
    assert ok.returncode == 0 and "9 hosts, 18 NUMA cells, 400 assignable PCI devices: ok" in ok.stdout
    bad = nfvcat("inventory", "check", str(FIX / "bad-inventory.yaml"))
    assert bad.returncode == 1 and "/hosts/0/numa_cells/0/memory_mb" in bad.stderr


def test_catalog_flavor_by_nova_name() -> None:
    assert find_flavor("pinned-1g", [str(FIX / "flavors")]).extra_specs["hw:mem_page_size"] == "1GB"
    assert find_flavor("sriov-vnf", [str(FIX / "flavors")]).name == "sriov-vnf"
    # entry directories and Nova names are the same in the fixtures; in the catalog they differ
    if (ROOT / "flavors" / "nfv-qat-required" / "flavor.yaml").exists():
        assert find_flavor("nfv.qat.required", [str(ROOT / "flavors")]).name == "nfv.qat.required"


@pytest.mark.parametrize("entry,env,servers", [
    ("chain-vrouter", "sriov.env.yaml", {"vrouter.server"}),
    ("chain-vrouter-ipsec", "site-a.env.yaml", {"vrouter.server", "gateway.server"}),
    ("chain-sfc", "udp-flows.env.yaml", {"vrouter_a.server", "vrouter_b.server"}),
])
def test_catalog_chains_plan_through_their_nested_vnfs(entry: str, env: str, servers: set[str]) -> None:
    """A chain's servers live in nested VNF templates; networks come by name from net-provider."""
    chain = ROOT / "templates" / "heat" / entry
    proc = nfvcat("plan", str(chain / f"{entry}.yaml"), "-e", str(chain / "examples" / env), "--format", "json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    placed = json.loads(proc.stdout)["placements"]
    assert {p["instance"] for p in placed} == servers
    if entry == "chain-sfc":
        assert len({p["host"] for p in placed}) == 2, "the redundant pair is anti-affine"
    if env == "sriov.env.yaml":
        [p] = placed
        assert {d["numa_node"] for d in p["pci_devices"]} == set(p["numa_cells"]), "VFs NUMA-local"


def test_memory_capacity_is_placements_total_minus_reserved_times_ratio() -> None:
    # Placement allows (total - reserved) x ram_allocation_ratio: (16 - 4) GiB x 2.0 = 24 GiB, six 4 GiB guests
    # (memory x ratio - reserved would say 28 GiB, seven)
    inv = inventory.from_data({"kind": "nfvcat/inventory", "hosts": [{
        "name": "h", "ram_allocation_ratio": 2.0, "reserved_host_memory_mb": 4096,
        "numa_cells": [{"id": 0, "cpu_shared_set": "0-63", "memory_mb": 16384}]}]})
    vnf = Vnf("s", Flavor("s", 1, 4096, extra_specs={}))
    res = capacity.run(Planner(inv), Chain("c", [vnf]), 100)
    assert res.copies == 6
    assert res.usage["MEMORY_MB"] == {"used": 6 * 4096, "total": (16384 - 4096) * 2}


def test_filters_follow_a_nova_configuration(tmp_path: Path) -> None:
    # a pinned flavor with an aggregate extra spec: without AggregateInstanceExtraSpecsFilter in the cloud's
    # enabled_filters (the dev cloud's nova.conf, say), no aggregate metadata is needed
    conf = tmp_path / "nova.conf"
    conf.write_text("[DEFAULT]\nhost = x\n[pci]\n"
                    'alias = {"name": "qat-vf", "vendor_id": "8086", "product_id": "37c9"}\n'
                    "[filter_scheduler]\nenabled_filters = ComputeFilter,NUMATopologyFilter\n")
    args = ["plan", "--flavor", "nfv.pinned.1g", "--inventory", EDGE, "--format", "json"]
    assert nfvcat(*args).returncode == 2
    proc = nfvcat(*args, "--nova-conf", str(conf))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["enabled_filters"] == ["ComputeFilter", "NUMATopologyFilter"]
    assert nfvcat(*args, "--nova-conf", str(tmp_path / "none.conf")).returncode == 1


def test_a_host_the_inventory_gives_no_cells_needs_host_access(tmp_path: Path) -> None:
    """The dev cloud's real host (hypervisor libvirt, no numa_cells: the machine's own) is not a host without
    CPUs: a flavor its aggregate takes gets "needs host access" there, never a made-up "not enough PCPU", and
    the plan's answer is unknown (exit 3), not negative."""
    request = tmp_path / "request.yaml"
    request.write_text(json.dumps({"kind": "nfvcat/placement-request", "vnfs": [{
        "name": "vr", "ports": [{"vnic_type": "normal", "physnet": "physnet_mgmt"}],
        "flavor": {"name": "devcloud.vrouter", "vcpus": 1, "ram": 1024, "disk": 4, "extra_specs": {
            "hw:cpu_policy": "dedicated", "hw:mem_page_size": "2MB",
            "aggregate_instance_extra_specs:nfv_class": "libvirt"}}}]}))
    devcloud = str(ROOT / "tools/testbeds/nfvcat_testbeds/devcloud/inventory.yaml")
    proc = nfvcat("plan", str(request), "--inventory", devcloud, "--format", "json", "--no-server")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    hosts = json.loads(proc.stdout)["failures"][0]["hosts"]
    assert hosts["devcloud-real"]["code"] == "needs-host-access", hosts
    assert hosts["devcloud-smt"]["code"] == "aggregate"
    text = nfvcat("plan", str(request), "--inventory", devcloud, "--no-server").stdout
    assert "vr: fits none of the hosts the inventory describes; the others need host access" in text
    assert "0 of 1 instance(s) placed; 1 unknown (hosts that need host access)" in text
    # a flavor the real host's aggregate refuses is refused there as before: the plan knows that much
    proc = nfvcat("plan", "--flavor", "nfv.pinned.1g", "--count", "40", "--inventory", devcloud, "--format", "json",
                  "--no-server")
    assert proc.returncode == 2
    assert json.loads(proc.stdout)["failures"][0]["hosts"]["devcloud-real"]["code"] == "aggregate"
