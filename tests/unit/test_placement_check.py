"""`nfvcat check`'s verdicts against HTTP-level fakes (requests-mock) of the orchestration, compute, network and
placement APIs: a correct deployment passes; each class of wrong placement fails with the check named; hidden
admin fields give "needs admin", facts no API shows give "needs host access", never "pass"."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import requests_mock
import yaml

from nfvcat.catalog import inventory
from nfvcat.cloud import check as chk
from nfvcat.cloud import verdicts as vd
from nfvcat.cloud.hostaccess import HostCell, HostFacts, HostPages, LibvirtXml, PciDevice
from nfvcat_testbeds.devcloud.hostaccess import DevcloudState
from tests.unit.cloudfake import connection, glance_images, provenance_image

INVENTORY = """
kind: nfvcat/inventory
hosts:
  - name: devcloud-smt
    numa_cells:
      - {id: 0, socket: 0, cpu_shared_set: "0-1,16-17", cpu_dedicated_set: "2-7,18-23", siblings: {offset: 16},
         memory_mb: 16384, hugepages: [{size: 1G, total: 8}]}
      - {id: 1, socket: 1, cpu_shared_set: "8-9,24-25", cpu_dedicated_set: "10-15,26-31", siblings: {offset: 16},
         memory_mb: 16384, hugepages: [{size: 1G, total: 8}]}
    pci_devices: &devices
      - {address: "0000:3b:00.0", vendor_id: "8086", product_id: "1572", numa_node: 0, device: ens1f0,
         physnet: physnet_sriov, vfs: {count: 8, product_id: "154c"}}
      - {address: "0000:af:00.0", vendor_id: "8086", product_id: "1572", numa_node: 1, device: ens4f0,
         physnet: physnet_sriov, vfs: {count: 8, product_id: "154c"}}
      - {address: "0000:3d:00.0", kind: qat, vendor_id: "8086", product_id: "37c8", numa_node: 0,
         vfs: {count: 4, product_id: "37c9"}}
      - {address: "0000:b1:00.0", kind: qat, vendor_id: "8086", product_id: "37c8", numa_node: 1,
         vfs: {count: 4, product_id: "37c9"}}
  - name: devcloud-nosmt
    numa_cells:
      - {id: 0, socket: 0, cpu_shared_set: "0-1", cpu_dedicated_set: "2-7", memory_mb: 16384}
      - {id: 1, socket: 1, cpu_shared_set: "8-9", cpu_dedicated_set: "10-15", memory_mb: 16384}
    pci_devices: *devices
"""
INV = inventory.from_data(yaml.safe_load(INVENTORY))
SMT, NOSMT = "devcloud-smt", "devcloud-nosmt"
DEDICATED = {"hw:cpu_policy": "dedicated", "hw:numa_nodes": "1", "hw:mem_page_size": "1GB"}


def server(sid: str, host: str, specs: dict[str, str], nodes: list[dict[str, Any]], page_kb: int = 1048576,
           ports: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"id": sid, "name": sid, "host": host, "specs": specs, "ports": ports or [],
            "topology": {"nodes": nodes, "pagesize_kb": page_kb}, "allocations": {}}


def node(host_node: int, pins: dict[int, int], vcpus: list[int] | None = None) -> dict[str, Any]:
    return {"host_node": host_node, "memory_mb": 4096, "vcpu_set": vcpus if vcpus is not None else sorted(pins),
            "cpu_pinning": {str(k): v for k, v in pins.items()}, "siblings": []}


def vf_port(name: str, slot: str, net: str = "net-sriov", host: str = SMT) -> dict[str, Any]:
    return {"id": f"p-{name}", "name": name, "network_id": net, "binding:vnic_type": "direct",
            "binding:vif_type": "hw_veb", "binding:host_id": host,
            "binding:profile": {"pci_slot": slot, "physical_network": "physnet_sriov", "pci_vendor_info": "8086:154c"},
            "binding:vif_details": {"vlan": "110"}}


NETWORKS = {
    "net-sriov": {"id": "net-sriov", "provider:network_type": "vlan", "provider:physical_network": "physnet_sriov",
                  "provider:segmentation_id": 110},
    "net-dpdk": {"id": "net-dpdk", "provider:network_type": "vlan", "provider:physical_network": "physnet_dpdk",
                 "provider:segmentation_id": 210},
    "net-mgmt": {"id": "net-mgmt", "provider:network_type": "vlan", "provider:physical_network": "physnet_mgmt",
                 "provider:segmentation_id": 310},
}
IMAGES = [provenance_image("img-catalog", "nfvcat-vrouter-1.1.2", "catalog"),
          provenance_image("img-rebuild", "nfvcat-vrouter-1.1.2", "rebuild", uploaded=b"a local rebuild",
                           differs="libpam0g 1.5.2-6+deb12u2 -> 1.5.2-6+deb12u3; builder 3 -> 4; and 2 more"),
          provenance_image("img-plain", "cirros", None),
          provenance_image("img-claims", "nfvcat-vrouter-1.1.2", "catalog", uploaded=b"another file")]
QAT_RP = {"rp-qat0": f"{SMT}_0000:3D:00.0", "rp-qat1": f"{SMT}_0000:B1:00.0", "rp-smt": SMT}


class Cloud:
    """The four APIs, answering from ``self.servers`` (mutable: tests inject wrong placements into it)."""

    def __init__(self, m: requests_mock.Mocker, servers: list[dict[str, Any]], admin: bool = True) -> None:
        self.servers = {s["id"]: s for s in servers}
        self.admin = admin
        m.get(re.compile(r"http://heat\.test/v1/p/stacks/chain/resources.*"), json=self._resources)
        m.get(re.compile(r"http://nova\.test/v2\.1/servers/detail.*"), json=self._detail)
        m.get(re.compile(r"http://nova\.test/v2\.1/servers/[^/?]+/topology"), json=self._topology)
        m.get(re.compile(r"http://nova\.test/v2\.1/servers/[^/?]+$"), json=self._server)
        m.get(re.compile(r"http://neutron\.test/(v2\.0/)?ports\?device_id=.*"), json=self._ports)
        m.get(re.compile(r"http://neutron\.test/(v2\.0/)?networks/.*"), json=self._network)
        m.get(re.compile(r"http://placement\.test/allocations/.*"), json=self._allocations)
        m.get(re.compile(r"http://placement\.test/resource_providers/.*"), json=self._rp)
        glance_images(m, IMAGES)

    def _resources(self, req: Any, ctx: Any) -> dict[str, Any]:
        return {"resources": [{"resource_type": "OS::Nova::Server", "physical_resource_id": sid,
                               "resource_name": sid} for sid in self.servers]}

    def _view(self, s: dict[str, Any]) -> dict[str, Any]:
        image = s.get("image", "img-catalog")  # "": booted from a volume, as Nova shows it
        out: dict[str, Any] = {"id": s["id"], "name": s["name"], "status": "ACTIVE",
                               "flavor": {"extra_specs": s["specs"]}, "image": {"id": image} if image else ""}
        if self.admin:
            out["OS-EXT-SRV-ATTR:host"] = s["host"]
        return out

    def _server(self, req: Any, ctx: Any) -> dict[str, Any]:
        return {"server": self._view(self.servers[req.path.rsplit("/", 1)[1]])}

    def _detail(self, req: Any, ctx: Any) -> dict[str, Any]:
        if not self.admin:
            ctx.status_code = 403
            return {"forbidden": {"message": "Policy doesn't allow"}}
        host = req.qs.get("host", [None])[0]
        return {"servers": [self._view(s) for s in self.servers.values() if host is None or s["host"] == host]}

    def _topology(self, req: Any, ctx: Any) -> dict[str, Any]:
        topo = copy.deepcopy(self.servers[req.path.split("/")[-2]]["topology"])
        if not self.admin:
            for n in topo["nodes"]:
                n.pop("host_node", None)
                n.pop("cpu_pinning", None)
        return topo

    def _ports(self, req: Any, ctx: Any) -> dict[str, Any]:
        sid = req.qs["device_id"][0]
        ports = copy.deepcopy(self.servers[sid]["ports"])
        if not self.admin:
            ports = [{k: v for k, v in p.items() if not k.startswith("binding:")} for p in ports]
        return {"ports": ports}

    def _network(self, req: Any, ctx: Any) -> dict[str, Any]:
        net = NETWORKS[req.path.rsplit("/", 1)[1]]
        return {"network": net if self.admin else {k: v for k, v in net.items() if not k.startswith("provider:")}}

    def _allocations(self, req: Any, ctx: Any) -> dict[str, Any]:
        if not self.admin:
            ctx.status_code = 403
            return {"errors": [{"status": 403, "detail": "admin only"}]}
        return {"allocations": self.servers[req.path.rsplit("/", 1)[1]]["allocations"]}

    def _rp(self, req: Any, ctx: Any) -> dict[str, Any]:
        rid = req.path.rsplit("/", 1)[1]
        return {"uuid": rid, "name": QAT_RP[rid]}


@pytest.fixture
def mock(cloud: tuple[requests_mock.Mocker, Any]) -> requests_mock.Mocker:
    """The HTTP-level fake of tests/unit/cloudfake.py (version discovery of every service)."""
    return cloud[0]


class Facts:
    """A host access answering from dicts (the unit of the HostAccess protocol)."""

    name = "test host"
    source = "from the test's records"

    def __init__(self, facts: dict[str, HostFacts], cells: dict[str, list[HostCell]] | None = None) -> None:
        self.data = facts
        self.host_cells = cells or {}

    def facts(self, server_id: str, host: str | None) -> HostFacts | None:
        return self.data.get(server_id)

    def cells(self, host: str) -> list[HostCell] | None:
        return self.host_cells.get(host)


LAST: list[vd.Verdict] = []


def verdicts(m: requests_mock.Mocker, servers: list[dict[str, Any]], admin: bool = True,
             access: Any = None, inv: Any = INV) -> dict[tuple[str, str], set[str]]:
    Cloud(m, servers, admin)
    out: dict[tuple[str, str], set[str]] = {}
    LAST[:] = chk.check_stack(connection(), "chain", inv, access)
    for v in LAST:
        out.setdefault((v.check, v.status), set()).add(v.subject)
    return out


def failed(found: dict[tuple[str, str], set[str]]) -> set[str]:
    return {check for check, status in found if status != vd.PASS}


def pinned(sid: str = "a", pins: dict[int, int] | None = None, host: str = SMT, host_node: int = 0,
           specs: dict[str, str] | None = None) -> dict[str, Any]:
    return server(sid, host, specs or DEDICATED, [node(host_node, pins or {0: 2, 1: 3, 2: 4, 3: 5})])


def test_correct_pinned_servers_pass(mock: requests_mock.Mocker) -> None:
    found = verdicts(mock, [pinned("a"), pinned("b", {0: 6, 1: 7, 2: 18, 3: 19})])
    assert failed(found) == set(), found
    assert found[("pCPUs not shared with other instances", vd.PASS)] == {"a", "b"}
    assert found[("pCPUs distinct", vd.PASS)] == {"a", "b"}


def test_two_vcpus_on_one_pcpu_fails(mock: requests_mock.Mocker) -> None:
    assert failed(verdicts(mock, [pinned("a", {0: 2, 1: 2, 2: 4, 3: 5})])) == {"pCPUs distinct"}


def test_two_instances_on_the_same_pcpus_fail(mock: requests_mock.Mocker) -> None:
    found = verdicts(mock, [pinned("a"), pinned("b", {0: 4, 1: 5, 2: 6, 3: 7})])
    assert failed(found) == {"pCPUs not shared with other instances"}
    assert found[("pCPUs not shared with other instances", vd.FAIL)] == {"a", "b"}


def test_instances_on_other_hosts_do_not_clash(mock: requests_mock.Mocker) -> None:
    other = pinned("b", host=NOSMT, specs={**DEDICATED})
    assert failed(verdicts(mock, [pinned("a"), other])) == set()


def test_pins_outside_the_nodes_dedicated_set_fail(mock: requests_mock.Mocker) -> None:
    # pCPUs 0-1 are node 0's shared set; 10-13 are node 1's dedicated set while the cell says node 0
    assert failed(verdicts(mock, [pinned("a", {0: 0, 1: 1, 2: 4, 3: 5})])) == {"CPU pinning"}
    mock.reset()
    assert failed(verdicts(mock, [pinned("a", {0: 10, 1: 11, 2: 12, 3: 13})])) == {"CPU pinning"}


MIXED = {"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "^0-1", "hw:numa_nodes": "1",
         "hw:mem_page_size": "1GB"}


def mixed(pins: dict[int, int], host_node: int = 0) -> dict[str, Any]:
    return server("m", SMT, MIXED, [node(host_node, pins, vcpus=[0, 1, 2, 3, 4, 5])])


def test_mixed_policy(mock: requests_mock.Mocker) -> None:
    assert failed(verdicts(mock, [mixed({2: 2, 3: 3, 4: 4, 5: 5})])) == set()
    mock.reset()  # pins on the shared pCPUs
    assert failed(verdicts(mock, [mixed({2: 0, 3: 1, 4: 16, 5: 17})])) == {"CPU pinning"}
    mock.reset()  # the mask ignored: vCPU 0 pinned, vCPU 5 floating
    assert failed(verdicts(mock, [mixed({0: 2, 2: 3, 3: 4, 4: 5})])) == {"mixed dedicated mask"}
    mock.reset()  # the cell on the other node, its pins on node 0's pCPUs
    assert failed(verdicts(mock, [mixed({2: 2, 3: 3, 4: 4, 5: 5}, host_node=1)])) == {"CPU pinning"}


def test_shared_policy_with_pins_fails(mock: requests_mock.Mocker) -> None:
    srv = server("s", NOSMT, {"hw:cpu_policy": "shared"}, [node(0, {0: 2})], page_kb=4)
    assert failed(verdicts(mock, [srv])) == {"CPU pinning"}


def test_hidden_admin_fields_need_admin_never_pass(mock: requests_mock.Mocker) -> None:
    srv = pinned("a")
    srv["ports"] = [vf_port("a-left", "0000:3b:02.0")]
    found = verdicts(mock, [srv], admin=False)
    statuses = {status for _, status in found}
    assert vd.ADMIN in statuses and vd.FAIL not in statuses
    assert ("host NUMA node / pinning", vd.ADMIN) in found and ("port binding", vd.ADMIN) in found


QAT = {**DEDICATED, "pci_passthrough:alias": "qat-vf:1", "hw:pci_numa_affinity_policy": "required"}


def qat_server(rp: str, host_node: int = 0) -> dict[str, Any]:
    srv = server("q", SMT, QAT, [node(host_node, {0: 2, 1: 3, 2: 4, 3: 5} if host_node == 0 else
                                      {0: 10, 1: 11, 2: 12, 3: 13})])
    srv["allocations"] = {"rp-smt": {"resources": {"PCPU": 4, "MEMORY_MB": 4096}},
                          rp: {"resources": {"CUSTOM_PCI_8086_37C9": 1}}}
    return srv


def vf(address: str, port: str | None = None, node: int | None = 0) -> PciDevice:
    """A VF as Nova's records hold it: its PF by the inventory's address scheme, the port it was requested for."""
    pf = address.rsplit(":", 1)[0] + ":00.0"
    return PciDevice(address, numa_node=node, parent=pf, port_id=port)


def test_qat_vf_through_placement(mock: requests_mock.Mocker) -> None:
    found = verdicts(mock, [qat_server("rp-qat0")])
    # Placement alone: the device Nova gave the guest is in no API, so the two records cannot be compared
    assert failed(found) == {"Placement and Nova's PCI records"}, found
    assert ("Placement and Nova's PCI records", vd.HOST_ACCESS) in found
    assert ("PCI NUMA affinity", vd.PASS) in found and ("PCI devices (Placement)", vd.PASS) in found
    mock.reset()  # Placement's provider on node 1, the guest on node 0
    assert "PCI NUMA affinity" in failed(verdicts(mock, [qat_server("rp-qat1")]))
    mock.reset()
    access = Facts({"q": HostFacts(pci=[vf("0000:3d:02.0")])})
    found = verdicts(mock, [qat_server("rp-qat0")], access=access)
    assert failed(found) == set(), found
    assert ("Placement and Nova's PCI records", vd.PASS) in found


def test_qat_vf_numa_node_from_novas_record(mock: requests_mock.Mocker) -> None:
    # the inventory puts 0000:3d:02.0 on node 0 with the guest; Nova's record of the device puts it on node 1
    access = Facts({"q": HostFacts(pci=[vf("0000:3d:02.0", node=1)])})
    assert failed(verdicts(mock, [qat_server("rp-qat0")], access=access)) == {"PCI NUMA affinity",
                                                                              "PCI NUMA node in the inventory"}


def detail(check: str, status: str) -> str:
    return next(v.detail for v in LAST if v.check == check and v.status == status)


def test_placement_and_novas_pci_records_disagree_both_ways(mock: requests_mock.Mocker) -> None:
    # Nova's record moved to the VF of the other node's PF, Placement unchanged: the guest's device is on the
    # wrong node (an affinity failure) and the records disagree
    nova_moved = Facts({"q": HostFacts(pci=[vf("0000:b1:02.0", node=1)])})
    found = verdicts(mock, [qat_server("rp-qat0")], access=nova_moved)
    assert failed(found) == {"Placement and Nova's PCI records", "PCI NUMA affinity"}, found
    assert ("PCI NUMA node in the inventory", vd.PASS) in found
    text = detail("Placement and Nova's PCI records", vd.FAIL)
    assert text.startswith("disagree") and "0000:3D:00.0" in text and "0000:b1:02.0" in text
    mock.reset()  # only Placement's allocation moved: the device Nova gave the guest is on the guest's node
    placement_moved = Facts({"q": HostFacts(pci=[vf("0000:3d:02.0", node=0)])})
    found = verdicts(mock, [qat_server("rp-qat1")], access=placement_moved)
    assert failed(found) == {"Placement and Nova's PCI records"}, found
    text = detail("Placement and Nova's PCI records", vd.FAIL)
    assert "0000:B1:00.0" in text and "0000:3d:02.0" in text and "from the test's records" in text


def test_qat_without_placement_tracking_is_unknown_not_pass(mock: requests_mock.Mocker) -> None:
    srv = qat_server("rp-qat0")
    srv["allocations"] = {"rp-smt": {"resources": {"PCPU": 4}}}
    assert ("PCI devices (Placement)", vd.UNKNOWN) in verdicts(mock, [srv])


def test_qat_allocations_hidden_need_admin(mock: requests_mock.Mocker) -> None:
    found = verdicts(mock, [qat_server("rp-qat0")], admin=False)
    assert ("PCI devices (Placement)", vd.ADMIN) in found


def test_sriov_vf_against_novas_allocation(mock: requests_mock.Mocker) -> None:
    srv = pinned("a", specs={**DEDICATED, "hw:pci_numa_affinity_policy": "socket"})
    srv["ports"] = [vf_port("a-left", "0000:3b:02.1")]
    found = verdicts(mock, [srv])
    assert failed(found) == {"VF = Nova's allocation"}
    assert ("VF = Nova's allocation", vd.HOST_ACCESS) in found
    mock.reset()
    ok = Facts({"a": HostFacts(pinning={0: 2, 1: 3, 2: 4, 3: 5}, pci=[vf("0000:3b:02.1", "p-a-left")])})
    assert failed(verdicts(mock, [srv], access=ok)) == set()
    mock.reset()
    wrong = Facts({"a": HostFacts(pinning={0: 2, 1: 3, 2: 4, 3: 5}, pci=[vf("0000:3b:02.0", "p-a-left")])})
    assert failed(verdicts(mock, [srv], access=wrong)) == {"VF = Nova's allocation"}


def test_vf_on_the_wrong_socket_fails(mock: requests_mock.Mocker) -> None:
    srv = pinned("a", specs={**DEDICATED, "hw:pci_numa_affinity_policy": "socket"})
    srv["ports"] = [vf_port("a-left", "0000:af:02.0")]  # the NIC of node 1
    ok = Facts({"a": HostFacts(pci=[vf("0000:af:02.0", "p-a-left", node=1)])})
    assert failed(verdicts(mock, [srv], access=ok)) == {"VF NUMA affinity"}


RT = {**DEDICATED, "hw:cpu_thread_policy": "isolate", "hw:emulator_threads_policy": "isolate",
      "hw:cpu_realtime": "true", "hw:cpu_realtime_mask": "^0"}


def test_emulator_threads_need_host_access_then_are_checked(mock: requests_mock.Mocker) -> None:
    srv = pinned("r", host=NOSMT, specs=RT)
    found = verdicts(mock, [srv])
    assert failed(found) == {"emulator threads"} and ("emulator threads", vd.HOST_ACCESS) in found
    cases = {6: set(), 2: {"emulator threads"}, 0: {"emulator threads"}}  # free pCPU, a vCPU's, a shared one
    for emu, expected in cases.items():
        mock.reset()
        access = Facts({"r": HostFacts(emulator_pcpus={emu}, emulator_policy="isolate")})
        assert failed(verdicts(mock, [srv], access=access)) == expected, emu
    mock.reset()
    none = Facts({"r": HostFacts(emulator_pcpus=set(), emulator_policy="isolate")})
    assert failed(verdicts(mock, [srv], access=none)) == {"emulator threads"}


def test_emulator_threads_on_another_instances_pcpu_fail(mock: requests_mock.Mocker) -> None:
    srv = pinned("r", host=NOSMT, specs=RT)
    other = pinned("o", {0: 6, 1: 7}, host=NOSMT)
    access = Facts({"r": HostFacts(emulator_pcpus={6}, emulator_policy="isolate")})
    assert "emulator threads" in failed(verdicts(mock, [srv, other], access=access))


def test_each_sriov_port_is_matched_to_its_own_pci_request(mock: requests_mock.Mocker) -> None:
    srv = pinned("a")
    srv["ports"] = [vf_port("a-left", "0000:3b:02.0"), vf_port("a-right", "0000:3b:02.1")]
    records = Facts({"a": HostFacts(pci=[vf("0000:3b:02.0", "p-a-left"), vf("0000:3b:02.1", "p-a-right")])})
    found = verdicts(mock, [srv], access=records)
    assert failed(found) == set(), found
    assert found[("VF = Nova's allocation", vd.PASS)] == {"a-left", "a-right"}
    mock.reset()  # Neutron's slots swapped: each names a VF of the instance, but the one of the other port
    srv["ports"] = [vf_port("a-left", "0000:3b:02.1"), vf_port("a-right", "0000:3b:02.0")]
    found = verdicts(mock, [srv], access=records)
    assert failed(found) == {"VF = Nova's allocation"}
    assert found[("VF = Nova's allocation", vd.FAIL)] == {"a-left", "a-right"}
    assert "Nova's device for port p-a-right" in next(v.detail for v in LAST if v.subject == "a-left" and
                                                       v.check == "VF = Nova's allocation")
    mock.reset()  # a source that does not say which port a device was given for cannot pass the match
    unmarked = Facts({"a": HostFacts(pci=[PciDevice("0000:3b:02.0"), PciDevice("0000:3b:02.1")])})
    found = verdicts(mock, [srv], access=unmarked)
    assert found[("VF = Nova's allocation", vd.UNKNOWN)] == {"a-left", "a-right"}


def test_port_vf_numa_node_from_novas_record(mock: requests_mock.Mocker) -> None:
    srv = pinned("a", specs={**DEDICATED, "hw:pci_numa_affinity_policy": "required"})
    srv["ports"] = [vf_port("a-left", "0000:3b:02.0")]  # the NIC of node 0, as the guest
    assert failed(verdicts(mock, [srv], access=Facts({"a": HostFacts(pci=[vf("0000:3b:02.0", "p-a-left")])}))) \
        == set()
    mock.reset()
    moved = Facts({"a": HostFacts(pci=[vf("0000:3b:02.0", "p-a-left", node=1)])})
    assert failed(verdicts(mock, [srv], access=moved)) == {"VF NUMA affinity", "PCI NUMA node in the inventory"}
    mock.reset()  # the guest on node 1 with the VF Nova recorded there: affine, but the inventory is wrong
    srv = pinned("a", host_node=1, pins={0: 10, 1: 11, 2: 12, 3: 13},
                 specs={**DEDICATED, "hw:pci_numa_affinity_policy": "required"})
    srv["ports"] = [vf_port("a-left", "0000:3b:02.0")]
    found = verdicts(mock, [srv], access=moved)
    assert failed(found) == {"PCI NUMA node in the inventory"} and ("VF NUMA affinity", vd.PASS) in found
    assert "node 1 from the test's records, node 0 in the inventory" in detail("PCI NUMA node in the inventory",
                                                                              vd.FAIL)


def test_vcpus_on_another_instances_emulator_pcpu_fail_in_their_own_check(mock: requests_mock.Mocker) -> None:
    rt = pinned("r", host=NOSMT, specs=RT)
    other = pinned("o", {0: 6, 1: 7}, host=NOSMT)
    access = Facts({"r": HostFacts(emulator_pcpus={6}, emulator_policy="isolate")})
    found = verdicts(mock, [rt, other], access=access)
    assert found[("pCPUs not shared with other instances", vd.FAIL)] == {"o"}
    assert "server r's emulator threads" in next(v.detail for v in LAST if v.subject == "o" and v.status == vd.FAIL)
    mock.reset()  # without host access, r's emulator threads cannot be seen: o's check cannot pass
    found = verdicts(mock, [rt, other])
    assert ("pCPUs not shared with other instances", vd.HOST_ACCESS) in found
    assert "o" in found[("pCPUs not shared with other instances", vd.HOST_ACCESS)]
    mock.reset()  # on a pCPU of its own, o passes
    other = pinned("o", {0: 7}, host=NOSMT)
    access = Facts({"r": HostFacts(emulator_pcpus={6}, emulator_policy="isolate")})
    assert "o" in verdicts(mock, [rt, other], access=access)[("pCPUs not shared with other instances", vd.PASS)]


def test_isolation_counts_the_shared_set_as_held(mock: requests_mock.Mocker) -> None:
    # an instance that asks for isolation, pinned on node 0's cpu_shared_set (0-1): floating vCPUs run there
    found = verdicts(mock, [pinned("r", {0: 0, 1: 1, 2: 4, 3: 5}, host=NOSMT, specs=RT)],
                     access=Facts({"r": HostFacts(emulator_pcpus={6}, emulator_policy="isolate")}))
    assert {"pCPUs not shared with other instances", "CPU pinning"} <= failed(found)
    mock.reset()  # without isolation the shared set is the pinning check's alone
    assert failed(verdicts(mock, [pinned("a", {0: 0, 1: 1, 2: 4, 3: 5}, host=NOSMT)])) == {"CPU pinning"}


REQUIRE = {**DEDICATED, "hw:cpu_thread_policy": "require"}
ISOLATE = {**DEDICATED, "hw:cpu_thread_policy": "isolate"}


def test_thread_policy_require_needs_sibling_pairs(mock: requests_mock.Mocker) -> None:
    found = verdicts(mock, [pinned("a", {0: 2, 1: 18, 2: 3, 3: 19}, specs=REQUIRE)])
    assert failed(found) == set() and ("CPU thread policy", vd.PASS) in found
    mock.reset()  # the host without SMT: no core has a sibling
    found = verdicts(mock, [pinned("a", host=NOSMT, specs=REQUIRE)])
    assert failed(found) == {"CPU thread policy"}
    mock.reset()  # the inventory says SMT, the compute host's own topology has no sibling pairs
    flat = [HostCell(0, set(range(2, 8)) | set(range(18, 24)), {0, 1, 16, 17}, [{c} for c in range(32)])]
    found = verdicts(mock, [pinned("a", {0: 2, 1: 18, 2: 3, 3: 19}, specs=REQUIRE)],
                     access=Facts({"a": HostFacts()}, {SMT: flat}))
    assert failed(found) == {"CPU thread policy"}
    assert "compute host's topology, from the test's records" in detail("CPU thread policy", vd.FAIL)
    assert ("CPU thread policy", vd.PASS) in found  # the inventory's map still has the pairs


PREFER = {**DEDICATED, "hw:cpu_thread_policy": "prefer"}


def test_thread_policy_require_packs_consecutive_vcpus_onto_siblings(mock: requests_mock.Mocker) -> None:
    # each vCPU alone on a core whose sibling (18-21) is free: Nova's require never does that
    found = verdicts(mock, [pinned("a", {0: 2, 1: 3, 2: 4, 3: 5}, specs=REQUIRE)])
    assert failed(found) == {"CPU thread policy"}
    text = detail("CPU thread policy", vd.FAIL)
    assert "vCPU 0 on pCPU 2 (its sibling(s) [18]" in text and "vCPU 3 on pCPU 5" in text
    mock.reset()  # pairs on cores, but vCPUs 0 and 2 on one core, 1 and 3 on the other: not Nova's order
    found = verdicts(mock, [pinned("a", {0: 2, 1: 3, 2: 18, 3: 19}, specs=REQUIRE)])
    assert failed(found) == {"CPU thread policy"}
    assert "vCPUs [0, 1] (pCPUs [2, 3]) on 2 cores" in detail("CPU thread policy", vd.FAIL)
    mock.reset()  # an odd count: the last vCPU alone on the last core, as Nova packs it
    found = verdicts(mock, [pinned("a", {0: 2, 1: 18, 2: 3}, specs=REQUIRE)])
    assert failed(found) == set() and ("CPU thread policy", vd.PASS) in found


def test_thread_policy_prefer_keeps_each_cores_vcpus_consecutive(mock: requests_mock.Mocker) -> None:
    for pins in ({0: 2, 1: 18, 2: 3, 3: 19}, {0: 2, 1: 3, 2: 4, 3: 5}):
        mock.reset()
        found = verdicts(mock, [pinned("a", pins, specs=PREFER)])
        assert failed(found) == set() and ("CPU thread policy", vd.PASS) in found, pins
    mock.reset()
    found = verdicts(mock, [pinned("a", {0: 2, 1: 3, 2: 18, 3: 19}, specs=PREFER)])
    assert failed(found) == {"CPU thread policy"}
    assert "vCPUs [0, 2] (pCPUs [2, 18]) share a core but are not consecutive" in detail("CPU thread policy",
                                                                                         vd.FAIL)


LEGACY = "legacy-host"  # vcpu_pin_set: Nova's cpuset and pcpuset equal
LEGACY_CELLS = [HostCell(0, set(range(2, 8)) | set(range(18, 24)), set(range(2, 8)) | set(range(18, 24)),
                         [{c, c + 16} for c in range(16)])]


def test_thread_policy_isolate_as_nova_applies_it(mock: requests_mock.Mocker) -> None:
    # a host with SMT and cpu_dedicated_set: Nova never places isolate there, idle siblings or not
    found = verdicts(mock, [pinned("i", {0: 2, 1: 3}, specs=ISOLATE)])
    assert failed(found) == {"CPU thread policy"}
    assert "vCPU 0 on pCPU 2 (siblings [18])" in detail("CPU thread policy", vd.FAIL)
    mock.reset()  # no SMT: no sibling to be busy
    found = verdicts(mock, [pinned("i", {0: 2, 1: 3}, host=NOSMT, specs=ISOLATE),
                            pinned("o", {0: 4, 1: 5}, host=NOSMT)])
    assert failed(found) == set() and ("CPU thread policy", vd.PASS) in found
    # legacy vcpu_pin_set (the host's own topology): the siblings of its pCPUs must stay idle
    access = Facts({"i": HostFacts(), "o": HostFacts()}, {LEGACY: LEGACY_CELLS})
    mock.reset()
    found = verdicts(mock, [pinned("i", {0: 2, 1: 3}, host=LEGACY, specs=ISOLATE)], access=access)
    assert ("CPU thread policy", vd.PASS) in found and "CPU thread policy" not in failed(found)
    mock.reset()  # another instance on the sibling of pCPU 2 (18)
    found = verdicts(mock, [pinned("i", {0: 2, 1: 3}, host=LEGACY, specs=ISOLATE),
                            pinned("o", {0: 18, 1: 20}, host=LEGACY)], access=access)
    assert found[("CPU thread policy", vd.FAIL)] == {"i"}
    assert "pCPU 2's sibling 18: server o's vCPUs" in detail("CPU thread policy", vd.FAIL)
    mock.reset()  # its own second vCPU on the sibling
    found = verdicts(mock, [pinned("i", {0: 2, 1: 18}, host=LEGACY, specs=ISOLATE)], access=access)
    assert found[("CPU thread policy", vd.FAIL)] == {"i"}


REAL = "devcloud-real"  # a host the inventory does not list: its topology is the host's own


def test_pinning_is_judged_on_the_hosts_own_topology(mock: requests_mock.Mocker) -> None:
    srv = pinned("v", {0: 1}, host=REAL, specs={**DEDICATED, "hw:mem_page_size": "2MB"})
    srv["topology"]["pagesize_kb"] = 2048
    found = verdicts(mock, [srv])  # no source shows the host: unknown, never a pass
    assert found[("CPU pinning", vd.UNKNOWN)] == {"v"} and "check --host-access" in detail("CPU pinning", vd.UNKNOWN)
    own = Facts({"v": HostFacts(pinning={0: 1})}, {REAL: [HostCell(0, {1}, {0}, [{0}, {1}])]})
    mock.reset()
    found = verdicts(mock, [srv], access=own)
    assert found[("CPU pinning", vd.PASS)] == {"v"} and ("CPU pinning", vd.UNKNOWN) not in found
    assert "compute host's topology, from the test's records" in detail("CPU pinning", vd.PASS)
    mock.reset()  # pinned on the host's shared CPU
    found = verdicts(mock, [pinned("v", {0: 0}, host=REAL, specs=srv["specs"])], access=own)
    assert found[("CPU pinning", vd.FAIL)] == {"v"} and "[0] not in the node's cpu_dedicated_set" in detail(
        "CPU pinning", vd.FAIL)


def test_a_host_the_inventory_lists_without_cells_is_judged_on_its_own_topology(mock: requests_mock.Mocker) -> None:
    """The dev cloud's inventory lists its real host with no NUMA cells (libvirt's are the machine's): no source
    shows its CPU sets without host access (unknown, never a FAIL for a node the inventory does not describe),
    and with it, the host's own."""
    data = yaml.safe_load(INVENTORY)
    data["hosts"].append({"name": REAL, "role": "compute", "hypervisor": "libvirt"})
    listed = inventory.from_data(data, "listed")
    srv = pinned("v", {0: 1}, host=REAL)
    found = verdicts(mock, [srv], inv=listed)
    assert found[("CPU pinning", vd.UNKNOWN)] == {"v"} and ("CPU pinning", vd.FAIL) not in found, found
    assert "the inventory gives it no NUMA cells; check --host-access" in detail("CPU pinning", vd.UNKNOWN)
    own = Facts({"v": HostFacts(pinning={0: 1})}, {REAL: [HostCell(0, {1}, {0}, [{0}, {1}])]})
    mock.reset()
    found = verdicts(mock, [srv], access=own, inv=listed)
    assert found[("CPU pinning", vd.PASS)] == {"v"} and ("CPU pinning", vd.UNKNOWN) not in found, found


def test_devcloud_state_reads_novas_pci_requests_and_the_host_topology(tmp_path: Path) -> None:
    (tmp_path / "secrets.json").write_text(json.dumps({"db": "x"}))
    topo = {"nova_object.data": {"cells": [{"nova_object.data": {"cpu_pinning_raw": {"0": 2},
                                                                 "cpuset_reserved": [6]}}]}}
    requests = [{"count": 1, "spec": [{}], "alias_name": None, "request_id": "r-port", "requester_id": "p-1"},
                {"count": 1, "spec": [{}], "alias_name": "qat-vf", "request_id": "r-qat", "requester_id": None}]
    host = {"nova_object.data": {"cells": [{"nova_object.data": {"id": 0, "cpuset": [0, 24], "pcpuset": [2, 26],
                                                                 "siblings": [[0, 24], [2, 26]], "memory": 4096,
                                                                 "pinned_cpus": [2], "socket": 0, "mempages": [
        {"nova_object.data": {"size_kb": 4, "total": 262144, "used": 0, "reserved": 0}},
        {"nova_object.data": {"size_kb": 2048, "total": 640, "used": 512, "reserved": 0}}]}}]}}
    rows: dict[str, list[tuple[Any, ...]]] = {
        "SELECT numa_topology, pci_requests": [(json.dumps(topo), json.dumps(requests))],
        "SELECT address, numa_node": [("0000:3b:02.0", 0, "0000:3b:00.0", "r-port"),
                                      ("0000:3d:02.0", 1, "0000:3d:00.0", "r-qat")],
        "SELECT numa_topology FROM compute_nodes": [(json.dumps(host),)]}

    class Recorded(DevcloudState):
        def query(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
            return next(r for prefix, r in rows.items() if sql.startswith(prefix))

    state = Recorded(tmp_path)
    facts = state.facts("u-1", "h")
    assert facts is not None and facts.pinning == {0: 2} and facts.emulator_pcpus == {6}
    assert facts.pci == [PciDevice("0000:3b:02.0", 0, "0000:3b:00.0", "p-1"),
                         PciDevice("0000:3d:02.0", 1, "0000:3d:00.0", None)]
    assert state.cells("h") == [HostCell(0, {2, 26}, {0, 24}, [{0, 24}, {2, 26}], 4096, [HostPages(2048, 640, 512)],
                                         pinned={2}, socket=0)]
    assert state.source == "from Nova's records"


def test_vhostuser_port_needs_huge_pages(mock: requests_mock.Mocker) -> None:
    port = {"id": "p1", "name": "s-mgmt", "network_id": "net-mgmt", "binding:vnic_type": "normal",
            "binding:vif_type": "vhostuser", "binding:host_id": SMT, "binding:profile": {},
            "binding:vif_details": {}}
    srv = server("s", SMT, {"hw:cpu_policy": "shared"}, [], ports=[port])
    assert failed(verdicts(mock, [srv])) == {"vhost-user guest memory"}
    mock.reset()
    port["binding:vif_type"] = "ovs"
    assert failed(verdicts(mock, [srv])) == set()


def test_libvirt_domain_xml_host_access(tmp_path: Path) -> None:
    (tmp_path / "dom.xml").write_text(
        "<domain><uuid>u-1</uuid><cputune><vcpupin vcpu='0' cpuset='4'/><vcpupin vcpu='1' cpuset='5'/>"
        "<emulatorpin cpuset='6'/></cputune><devices><hostdev mode='subsystem' type='pci'><source>"
        "<address domain='0x0000' bus='0x3d' slot='0x02' function='0x1'/></source></hostdev>"
        "<interface type='hostdev'><mac address='FA:16:3E:00:00:01'/><source>"
        "<address type='pci' domain='0x0000' bus='0x3b' slot='0x02' function='0x0'/></source></interface>"
        "</devices></domain>")
    facts = LibvirtXml(tmp_path).facts("u-1", None)
    assert facts is not None
    assert facts.pinning == {0: 4, 1: 5} and facts.emulator_pcpus == {6}
    assert facts.pci == [PciDevice("0000:3d:02.1"), PciDevice("0000:3b:02.0", mac="fa:16:3e:00:00:01")]
    assert LibvirtXml(tmp_path).facts("u-2", None) is None


def test_report_is_ok_only_when_every_verdict_passes() -> None:
    v = [vd.Verdict("x", "y", "c", vd.PASS, ""), vd.Verdict("x", "y", "d", vd.HOST_ACCESS, "")]
    assert vd.passed(v) is False and json.loads(vd.report(v, "s", "json"))["ok"] is False
    assert vd.passed(v[:1]) is True
    assert vd.passed([]) is False
    assert "1 of 2 not passed" in vd.report(v, "s", "text")


# ---- the image each server boots: catalog, local rebuild, or unknown provenance ---------------------------------

def test_each_server_has_a_verdict_on_its_images_provenance(mock: requests_mock.Mocker) -> None:
    servers = [pinned("cat"), {**pinned("reb", {0: 6, 1: 7, 2: 18, 3: 19}), "image": "img-rebuild"},
               {**pinned("plain", {0: 2, 1: 3, 2: 4, 3: 5}, host=NOSMT), "image": "img-plain"},
               {**pinned("claims", {0: 10, 1: 11, 2: 12, 3: 13}, host=NOSMT), "image": "img-claims"},
               {**pinned("gone", {0: 6, 1: 7, 2: 14, 3: 15}, host=NOSMT), "image": "img-deleted"},
               {**pinned("volume", {0: 20, 1: 21, 2: 22, 3: 23}), "image": ""}]
    verdicts(mock, servers)
    got = {v.subject: v for v in LAST if v.check == "image provenance"}
    assert {s: v.status for s, v in got.items()} == {
        "cat": vd.PASS, "reb": vd.REBUILD, "plain": vd.UNKNOWN, "claims": vd.UNKNOWN, "gone": vd.UNKNOWN,
        "volume": vd.UNKNOWN}
    lock = IMAGES[0]["nfvcat_lock_sha256"]
    assert got["cat"].detail == (f"nfvcat-vrouter-1.1.2 (images/vrouter 1.1.2): the catalog's image, sha256 {lock} "
                                 "(its lock's)")
    assert got["reb"].detail == (
        f"nfvcat-vrouter-1.1.2 (images/vrouter 1.1.2): a local rebuild, sha256 {IMAGES[1]['nfvcat_sha256']} (the "
        f"lock's {lock}), 3 package(s) differ from the lock: libpam0g 1.5.2-6+deb12u2 -> 1.5.2-6+deb12u3; "
        "builder 3 -> 4; and 2 more")
    assert got["plain"].detail == "cirros: provenance unknown: no nfvcat provenance in its Glance properties"
    assert "says catalog, but the sha256 uploaded" in got["claims"].detail
    assert "img-deleted: provenance unknown: Glance does not show this image" in got["gone"].detail
    assert "boots from a volume" in got["volume"].detail
    glance = [r.path for r in mock.request_history if r.hostname == "glance.test" and "/images/" in r.path]
    assert sorted(glance) == sorted(set(glance))  # each image asked for once


def test_a_local_rebuild_passes_and_says_so_unknown_provenance_never_passes(mock: requests_mock.Mocker) -> None:
    verdicts(mock, [{**pinned("a"), "image": "img-rebuild"}, pinned("b", {0: 6, 1: 7, 2: 18, 3: 19})])
    assert vd.passed(LAST) and [v.status for v in LAST if v.status != vd.PASS] == [vd.REBUILD]
    text = vd.report(LAST, "chain", "text")
    assert text.endswith(f"chain: all {len(LAST)} checks pass; 1 server(s) boot a local rebuild of a catalog "
                         "image, not the catalog's own")
    assert json.loads(vd.report(LAST, "chain", "json"))["ok"] is True
    verdicts(mock, [{**pinned("a"), "image": "img-plain"}])
    assert not vd.passed(LAST) and "1 of" in vd.report(LAST, "chain", "text")
