"""A cloud for ``nfvcat preflight``'s unit tests at the HTTP level (requests-mock, on tests/unit/cloudfake.py's
version discovery): Nova, Neutron, Glance, Heat and Placement answering from ``PreflightCloud``'s fields, which a
test changes to break one rule at a time; and a host access answering each host's own cells."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import requests_mock
import yaml

from nfvcat.cloud.hostaccess import HostCell, HostPages
from tests.unit.cloudfake import GLANCE, HEAT, NEUTRON, NOVA, PLACEMENT

ROOT = Path(__file__).resolve().parents[2]


def catalog_flavors() -> list[dict[str, Any]]:
    out = []
    for path in sorted((ROOT / "flavors").glob("*/flavor.yaml")):
        data = yaml.safe_load(path.read_text())
        out.append({"id": data["name"], "name": data["name"], "vcpus": data["vcpus"], "ram": data["ram"],
                    "disk": data.get("disk", 0), "extra_specs": data.get("extra_specs") or {}})
    return out


def catalog_images() -> list[dict[str, Any]]:
    out = []
    for path in sorted((ROOT / "templates" / "heat").glob("*/entry.yaml")):
        for img in yaml.safe_load(path.read_text()).get("images") or []:
            out.append({"id": img["name"], "name": img["name"], "status": "active", "os_hash_algo": "sha512",
                        "os_hash_value": "0" * 128})
    return out


HOSTS = ("c-sriov", "c-dpdk", "c-dpdk2", "c-pinned")
CLASSES = {"c-sriov": ["sriov", "pinned"], "c-dpdk": ["dpdk", "pinned"], "c-dpdk2": ["dpdk", "pinned"],
           "c-pinned": ["pinned", "qat", "realtime", "shared"]}


def agents() -> list[dict[str, Any]]:
    out = []
    for h in HOSTS:
        conf: dict[str, Any] = {"bridge_mappings": {"physnet_mgmt": "br-mgmt"}, "tunnel_types": ["vxlan"]}
        if h.startswith("c-dpdk"):
            conf = {"bridge_mappings": {"physnet_mgmt": "br-mgmt", "physnet_dpdk": "br-dpdk"},
                    "datapath_type": "netdev", "tunnel_types": ["vxlan"]}
        out.append({"id": f"ovs-{h}", "host": h, "agent_type": "Open vSwitch agent", "alive": True,
                    "admin_state_up": True, "configurations": conf})
    out.append({"id": "sriov-c-sriov", "host": "c-sriov", "agent_type": "NIC Switch agent", "alive": True,
                "admin_state_up": True, "configurations": {"device_mappings": {"physnet_sriov": ["ens1f0", "ens4f0"]},
                                                          "devices": 16}})
    return out


def cells(pages_used: int = 0) -> list[HostCell]:
    """Two cells of 16 threads (8 cores, siblings n and n+8), 8 x 1 GiB and 4096 x 2 MiB pages each."""
    out = []
    for node in (0, 1):
        base = node * 16
        cpus = list(range(base, base + 16))
        shared = {base, base + 8}
        out.append(HostCell(node, set(cpus) - shared, shared, [{c, c + 8} for c in cpus[:8]], 32768,
                            [HostPages(1048576, 8, pages_used), HostPages(2048, 4096, 0)], socket=node))
    return out


class HostCells:
    """A host access that knows each host's cells (what --host-access devcloud reads from Nova's records)."""
    name = "test hosts"
    source = "from the test's records"

    def __init__(self, pages_used: int = 0) -> None:
        self.pages_used = pages_used

    def facts(self, server_id: str, host: str | None) -> None:
        return None

    def cells(self, host: str) -> list[HostCell] | None:
        return cells(self.pages_used) if host in HOSTS else None


class PreflightCloud:
    def __init__(self, m: requests_mock.Mocker) -> None:
        self.flavors = catalog_flavors()
        self.images = catalog_images()
        self.agents = agents()
        self.aggregates: list[dict[str, Any]] | None = [
            {"id": i, "name": f"agg-{cls}", "availability_zone": None, "hosts": [h], "metadata": {"nfv_class": cls}}
            for i, (h, cls) in enumerate((h, c) for h in HOSTS for c in CLASSES[h])]
        self.extensions = ["qos", "sfc", "flow_classifier", "provider", "binding"]
        self.rule_types = ["bandwidth_limit", "dscp_marking", "minimum_bandwidth"]
        self.resource_types = ["OS::Nova::Server", "OS::Nova::ServerGroup", "OS::Neutron::Port", "OS::Neutron::Net",
                               "OS::Neutron::ProviderNet", "OS::Neutron::Subnet", "OS::Neutron::SecurityGroup",
                               "OS::Neutron::QoSPolicy", "OS::Neutron::QoSBandwidthLimitRule",
                               "OS::Neutron::QoSDscpMarkingRule", "OS::Neutron::PortChain", "OS::Neutron::PortPair",
                               "OS::Neutron::PortPairGroup", "OS::Neutron::FlowClassifier", "OS::Heat::None"]
        self.versions = ["heat_template_version.2021-04-16", "heat_template_version.2018-08-31"]
        j = self._json
        m.get(f"{NOVA}/flavors/detail?is_public=None", json=lambda r, c: {"flavors": copy.deepcopy(self.flavors)})
        m.get(f"{NOVA}/os-aggregates", json=lambda r, c: j(c, "aggregates", self.aggregates))
        m.get(f"{NOVA}/os-availability-zone", json={"availabilityZoneInfo": [
            {"zoneName": "nova", "zoneState": {"available": True}}]})
        m.get(re.compile(rf"{NOVA}/os-hypervisors/detail"), json={"hypervisors": [
            {"id": h, "hypervisor_hostname": h, "service": {"host": h}, "state": "up", "status": "enabled",
             "vcpus": 32, "memory_mb": 65536, "cpu_info": {"topology": {"sockets": 2, "cores": 8, "threads": 2}}}
            for h in HOSTS]})
        m.get(re.compile(rf"{GLANCE}/images\?name=.*"), json=self._images)
        m.get(f"{NEUTRON}/agents", json=lambda r, c: {"agents": copy.deepcopy(self.agents)})
        m.get(f"{NEUTRON}/extensions", json=lambda r, c: {"extensions": [{"alias": a} for a in self.extensions]})
        m.get(f"{NEUTRON}/qos/rule-types", json=lambda r, c: {"rule_types": [{"type": t} for t in self.rule_types]})
        m.get(f"{HEAT}/resource_types", json=lambda r, c: {"resource_types": list(self.resource_types)})
        m.get(f"{HEAT}/template_versions", json=lambda r, c: {"template_versions": [
            {"version": v, "type": "hot"} for v in self.versions]})
        m.get(f"{PLACEMENT}/resource_providers", json={"resource_providers": [{"uuid": f"rp-{h}", "name": h}
                                                                              for h in HOSTS]})
        m.get(re.compile(rf"{PLACEMENT}/resource_providers/rp-[^/]+/inventories"), json={"inventories": {
            "PCPU": {"total": 28, "reserved": 0, "allocation_ratio": 1.0},
            "VCPU": {"total": 4, "reserved": 0, "allocation_ratio": 4.0},
            "MEMORY_MB": {"total": 65536, "reserved": 0, "allocation_ratio": 1.0}}})
        m.get(re.compile(rf"{PLACEMENT}/resource_providers/rp-[^/]+/traits"), json={"traits": ["HW_CPU_X86_AVX2"]})
        m.get(re.compile(rf"{PLACEMENT}/resource_providers/rp-[^/]+/usages"), json={"usages": {}})

    @staticmethod
    def _json(ctx: Any, key: str, value: Any) -> Any:
        if value is None:
            ctx.status_code = 403
            return {"forbidden": {"message": "Policy doesn't allow"}}
        return {key: copy.deepcopy(value)}

    def _images(self, req: Any, ctx: Any) -> dict[str, Any]:
        name = req.qs.get("name", [""])[0]
        return {"images": [i for i in self.images if i["name"].lower() == name]}
