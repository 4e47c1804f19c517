"""An OpenStack at the HTTP level for unit tests of nfvcat.cloud: requests-mock answers openstacksdk's version
discovery for each service and whatever a test registers; every request is recorded, and one a test did not
register fails the test (requests-mock raises NoMockAddress)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import requests_mock

from nfvcat.cloud import tacker_lcm

# host, version path, version id, microversion range
SERVICES = {
    "orchestration": ("heat", "v1", "v1.0", None),
    "compute": ("nova", "v2.1", "v2.1", ("2.1", "2.96")),
    "network": ("neutron", "v2.0", "v2.0", None),
    "image": ("glance", "v2", "v2.16", None),
    "block_storage": ("cinder", "v3", "v3.0", ("3.0", "3.70")),
    "placement": ("placement", "", "1.0", ("1.0", "1.39")),
}
HEAT = "http://heat.test/v1/p"
NOVA = "http://nova.test/v2.1"
NEUTRON = "http://neutron.test/v2.0"
GLANCE = "http://glance.test/v2"
CINDER = "http://cinder.test/v3/p"
PLACEMENT = "http://placement.test"


def _discovery(m: requests_mock.Mocker) -> None:
    for host, path, vid, micro in SERVICES.values():
        href = f"http://{host}.test/{path}/" if path else f"http://{host}.test/"
        version: dict[str, Any] = {"id": vid, "status": "CURRENT", "links": [{"rel": "self", "href": href}]}
        if micro:
            version.update(min_version=micro[0], version=micro[1])
        tail = rf"({path}/?)?(p/?)?" if path else ""
        m.get(re.compile(rf"^http://{host}\.test/?{tail}$"), json={"versions": [version], "version": version})


def connection(**overrides: Any) -> Any:
    """An openstacksdk Connection whose services are the fake's (no Keystone: auth_type none)."""
    import openstack

    endpoints = {f"{service}_endpoint_override": (f"http://{host}.test/{path}".rstrip("/") +
                                                  ("/p" if service in ("orchestration", "block_storage") else ""))
                 for service, (host, path, _, _) in SERVICES.items()}
    return openstack.connection.Connection(auth_type="none", **{**endpoints, **overrides})


@pytest.fixture
def cloud() -> Iterator[tuple[requests_mock.Mocker, Any]]:
    with requests_mock.Mocker() as m:
        _discovery(m)
        yield m, connection()


@pytest.fixture
def cli_cloud(monkeypatch: pytest.MonkeyPatch) -> Iterator[requests_mock.Mocker]:
    """The fake, as the connection every command opens (nfvcat.cloud.connect.connect)."""
    with requests_mock.Mocker() as m:
        _discovery(m)
        conn = connection()
        monkeypatch.setattr("nfvcat.cloud.connect.connect", lambda name, *deadlines: conn)
        yield m


def sent(m: requests_mock.Mocker, method: str, pattern: str) -> list[Any]:
    """The requests of ``method`` whose URL matches ``pattern`` (discovery excluded), in order."""
    return [r for r in m.request_history if r.method == method and re.search(pattern, r.url)]


# ---- Tacker (nfv-orchestration): the v2 VNF LCM and v1 package resources nfvcat uses -----------------------

TACKER = "http://tacker.test"


class TackerFake:
    """A stateful Tacker v2 VNF LCM at the HTTP level: VNF instances, LCM operation occurrences that go
    PROCESSING then ``outcome`` (COMPLETED, or FAILED_TEMP with ``reason``), rollback and delete. What an
    instantiate or heal makes (the server, the ports, the stack) is ``reported``, as Tacker would show it."""

    EXCLUDE_DEFAULT = ("vnfConfigurableProperties", "vimConnectionInfo", "instantiatedVnfInfo", "metadata",
                       "extensions")
    MANDATORY = ("id", "vnfdId", "vnfProvider", "vnfProductName", "vnfSoftwareVersion", "vnfdVersion",
                 "instantiationState")  # VnfInstanceV2's fields that are not nullable

    def __init__(self, m: requests_mock.Mocker, vnfd_id: str, onboarded: bool = True) -> None:
        self.m = m
        self.instances: dict[str, dict[str, Any]] = {}
        self.ops: dict[str, dict[str, Any]] = {}
        self.outcome = "COMPLETED"
        self.reason = ""
        self.polls_before_done = 1
        self.server = "srv-1"
        self.aspect, self.level, self.max_level = "VDU_VROUTER_scale", 0, 1  # the VNFD's one scaling aspect
        pkg = {"id": "pkg-1", "vnfdId": vnfd_id, "onboardingState": "ONBOARDED" if onboarded else "CREATED",
               "operationalState": "ENABLED" if onboarded else "DISABLED"}
        m.get(f"{TACKER}/vnfpkgm/v1/vnf_packages", json=lambda req, ctx: [pkg] if vnfd_id in req.url else [])
        lcm = f"{TACKER}/vnflcm/v2"
        m.get(f"{lcm}/vnf_instances", json=self._list)
        m.post(f"{lcm}/vnf_instances", json=self._create, status_code=201)
        m.get(re.compile(rf"^{lcm}/vnf_instances/[^/]+$"), json=self._show)
        m.delete(re.compile(rf"^{lcm}/vnf_instances/[^/]+$"), text=self._delete)
        m.post(re.compile(rf"^{lcm}/vnf_instances/[^/]+/(instantiate|heal|terminate|scale|change_vnfpkg)$"),
               text=self._task)
        m.patch(re.compile(rf"^{lcm}/vnf_instances/[^/]+$"), text=self._task)
        m.get(re.compile(rf"^{lcm}/vnf_lcm_op_occs(\?.*)?$"), json=self._ops)
        m.get(re.compile(rf"^{lcm}/vnf_lcm_op_occs/[^/]+$"), json=self._op)
        m.post(re.compile(rf"^{lcm}/vnf_lcm_op_occs/[^/]+/rollback$"), text=self._rollback)
        m.post(re.compile(rf"^{lcm}/vnf_lcm_op_occs/[^/]+/retry$"), text=self._retry)

    def _list(self, req: Any, ctx: Any) -> list[dict[str, Any]]:
        found = [i for i in self.instances.values() if "filter" not in req.url
                 or f"vnfInstanceName%2C{i['vnfInstanceName']}%29" in req.url
                 or f"vnfInstanceName,{i['vnfInstanceName']})" in req.url]
        # Tacker's v2 list, as its InstanceViewBuilder and AttributeSelector (SOL013 5.3): all_fields gives all;
        # fields gives the mandatory attributes and those named (requests-mock's qs is lower case); else the
        # default-excluded complex attributes are left out
        if "all_fields" in req.qs:
            return found
        if req.qs.get("fields"):
            wanted = set(req.qs["fields"][0].split(","))
            return [{k: v for k, v in i.items() if k in self.MANDATORY or k.lower() in wanted} for i in found]
        return [{k: v for k, v in i.items() if k not in self.EXCLUDE_DEFAULT} for i in found]

    def _create(self, req: Any, ctx: Any) -> dict[str, Any]:
        body = req.json()
        inst = {"id": f"inst-{len(self.instances) + 1}", "vnfdId": body["vnfdId"],
                "vnfInstanceName": body["vnfInstanceName"], "instantiationState": "NOT_INSTANTIATED",
                "vnfInstanceDescription": body.get("vnfInstanceDescription"), "metadata": body.get("metadata", {})}
        self.instances[inst["id"]] = inst
        return inst

    def _id(self, req: Any) -> str:
        return str(req.path.split("/vnf_instances/")[1].split("/")[0])

    def _show(self, req: Any, ctx: Any) -> dict[str, Any] | None:
        inst = self.instances.get(self._id(req))
        if inst is None:
            ctx.status_code = 404
            return {"status": 404, "detail": "not found"}
        return inst

    def _delete(self, req: Any, ctx: Any) -> str:
        inst = self.instances.get(self._id(req))
        if inst is None or inst["instantiationState"] != "NOT_INSTANTIATED":
            ctx.status_code = 404 if inst is None else 409
            return ""
        del self.instances[inst["id"]]
        ctx.status_code = 204
        return ""

    def _task(self, req: Any, ctx: Any) -> str:
        inst_id, task = self._id(req), req.path.rsplit("/", 1)[1]
        task = "modify_info" if req.method == "PATCH" else task
        body = req.json()
        if task == "scale":  # Tacker's check_scale_level, before it accepts the request
            to = self.level + body.get("numberOfSteps", 1) * (-1 if body["type"] == "SCALE_IN" else 1)
            if body["aspectId"] != self.aspect or not 0 <= to <= self.max_level:
                ctx.status_code = 400
                return '{"status": 400, "detail": "invalid scale request"}'
        op_id = f"op-{len(self.ops) + 1}"
        self.ops[op_id] = {"id": op_id, "vnfInstanceId": inst_id, "operation": task.upper(), "polls": 0,
                           "operationState": "STARTING", "operationParams": body}
        ctx.status_code = 202
        ctx.headers["Location"] = f"{TACKER}/vnflcm/v2/vnf_lcm_op_occs/{op_id}"
        return ""

    def _op(self, req: Any, ctx: Any) -> dict[str, Any]:
        op = self.ops[req.path.rsplit("/", 1)[1]]
        if op["operationState"] in ("STARTING", "PROCESSING"):
            op["polls"] += 1
            if op["polls"] <= self.polls_before_done:
                op["operationState"] = "PROCESSING"
            else:
                op["operationState"] = self.outcome
                if self.outcome == "COMPLETED":
                    self._apply(op)
                else:
                    op["error"] = {"status": 500, "detail": self.reason}
        return {k: v for k, v in op.items() if k != "polls"}

    def _ops(self, req: Any, ctx: Any) -> list[dict[str, Any]]:
        return [{k: v for k, v in op.items() if k != "polls"} for op in self.ops.values()
                if op["vnfInstanceId"] in req.url]

    def _retry(self, req: Any, ctx: Any) -> str:
        op = self.ops[req.path.split("/vnf_lcm_op_occs/")[1].split("/")[0]]
        op.update(operationState="PROCESSING", polls=0)
        op.pop("error", None)
        ctx.status_code = 202
        return ""

    def _rollback(self, req: Any, ctx: Any) -> str:
        op = self.ops[req.path.split("/vnf_lcm_op_occs/")[1].split("/")[0]]
        op["operationState"] = "ROLLED_BACK"
        ctx.status_code = 202
        return ""

    def _apply(self, op: dict[str, Any]) -> None:
        inst = self.instances[op["vnfInstanceId"]]
        if op["operation"] == "TERMINATE":
            inst["instantiationState"] = "NOT_INSTANTIATED"
            inst.pop("instantiatedVnfInfo", None)
            return
        if op["operation"] == "HEAL":
            self.server = self.server + "-healed"
        if op["operation"] == "MODIFY_INFO":
            inst["metadata"] = {**inst.get("metadata", {}), **op["operationParams"].get("metadata", {})}
            inst["vnfInstanceDescription"] = op["operationParams"].get("vnfInstanceDescription")
            return
        if op["operation"] == "CHANGE_VNFPKG":
            inst["vnfdId"] = op["operationParams"]["vnfdId"]
        if op["operation"] == "SCALE":
            params = op["operationParams"]
            self.level += params.get("numberOfSteps", 1) * (-1 if params["type"] == "SCALE_IN" else 1)
        inst["instantiationState"] = "INSTANTIATED"
        inst["instantiatedVnfInfo"] = self.reported(inst["id"])

    def servers(self) -> list[str]:
        """The VDU's servers at the scale level: the first, then one per step (the VNFD's delta of 1)."""
        return [self.server, *(f"srv-scaled-{i}" for i in range(1, self.level + 1))]

    def reported(self, inst_id: str) -> dict[str, Any]:
        vnfc_res = f"{self.server}"
        return {
            "flavourId": "default", "vnfState": "STARTED",
            "scaleStatus": [{"aspectId": self.aspect, "scaleLevel": self.level}],
            "maxScaleLevels": [{"aspectId": self.aspect, "scaleLevel": self.max_level}],
            "vnfcResourceInfo": [{"id": srv, "vduId": "VDU_VROUTER",
                                  "computeResource": {"resourceId": srv, "vimLevelResourceType": "OS::Nova::Server"}}
                                 for srv in self.servers()],
            "vnfcInfo": [{"id": f"VDU_VROUTER-{srv}", "vduId": "VDU_VROUTER", "vnfcResourceInfoId": srv,
                          "vnfcState": "STARTED"} for srv in self.servers()],
            "extVirtualLinkInfo": [{"id": "CP_WAN-link", "extLinkPorts": [
                {"id": "port-wan", "resourceHandle": {"resourceId": "port-wan"}, "cpInstanceId": "cp-port-wan"}]}],
            "extCpInfo": [{"id": "cp-port-wan", "cpdId": "CP_WAN", "extLinkPortId": "port-wan",
                           "associatedVnfcCpId": f"CP_WAN-{vnfc_res}"}],
            "metadata": {"stack_id": "stack-1"},
        }
def instantiated_via_tacker(m: requests_mock.Mocker, entry_dir: Any, meta: dict[str, Any],
                            vnfd_id: str) -> tuple[Any, TackerFake, Any]:
    """A VNF of the package ``vnfd_id`` (the entry at ``entry_dir``) instantiated through nfvcat on the fake
    Tacker, its two SR-IOV data networks found by name: (connection, the fake, nfvcat's Tacker client)."""
    _discovery(m)
    for name, nid in {"nfv-sriov-left": "net-left-id", "nfv-sriov-right": "net-right-id"}.items():
        m.get(f"{NEUTRON}/networks/{name}", status_code=404)
        m.get(f"{NEUTRON}/networks?name={name}", json={"networks": [{"id": nid, "name": name}]})
    conn = connection(nfv_orchestration_endpoint_override=TACKER)
    tacker = TackerFake(m, vnfd_id)
    tk = tacker_lcm.Tacker(conn, lambda _: None, poll=0)
    req = tacker_lcm.Request(name="vr1", flavour="default", level=None, ext_networks={}, additional={})
    tacker_lcm.instantiate(conn, tk, entry_dir, meta, req, 60)
    return conn, tacker, tk


class SfcApi:
    """networking-sfc's API on the fake Neutron (``/v2.0/sfc/{port_pairs,port_pair_groups,flow_classifiers,
    port_chains}``): list, show, create, update, delete over ``items`` (kind -> id -> body). Creating a port pair
    group gives it the next ``group_id``, as networking-sfc does; a port pair group or classifier in use by a
    chain, or a port pair in a group, cannot be deleted (409), as in networking-sfc."""

    KINDS = ("port_pairs", "port_pair_groups", "flow_classifiers", "port_chains")

    def __init__(self, m: requests_mock.Mocker) -> None:
        self.items: dict[str, dict[str, dict[str, Any]]] = {k: {} for k in self.KINDS}
        self._group_ids = 0
        for kind in self.KINDS:
            one = re.compile(rf"^{NEUTRON}/sfc/{kind}/([^/?]+)$")
            every = re.compile(rf"^{NEUTRON}/sfc/{kind}(\?.*)?$")
            m.get(one, json=self._show(kind))
            m.put(one, json=self._show(kind, update=True))
            m.delete(one, json=self._delete(kind))
            m.get(every, json=lambda req, ctx, kind=kind: {kind: list(self.items[kind].values())})
            m.post(every, json=lambda req, ctx, kind=kind: {kind[:-1]: self.add(kind, req.json()[kind[:-1]])})

    def add(self, kind: str, body: dict[str, Any]) -> dict[str, Any]:
        import uuid

        item = {"id": str(uuid.uuid4()), "name": "", "description": "", "project_id": "p", **body}
        if kind == "port_pair_groups":
            self._group_ids += 1
            item.setdefault("group_id", self._group_ids)
            item.setdefault("port_pairs", [])
        self.items[kind][item["id"]] = item
        return item

    def _show(self, kind: str, update: bool = False) -> Any:
        def show(req: Any, ctx: Any) -> Any:
            item = self.items[kind].get(req.path.rsplit("/", 1)[-1])
            if item is None:
                ctx.status_code = 404
                return {"NeutronError": {"message": f"{kind[:-1]} not found"}}
            if update:
                item.update(req.json()[kind[:-1]])
            return {kind[:-1]: item}
        return show

    def _delete(self, kind: str) -> Any:
        users = {"port_pairs": ("port_pair_groups", "port_pairs"),
                 "port_pair_groups": ("port_chains", "port_pair_groups"),
                 "flow_classifiers": ("port_chains", "flow_classifiers")}

        def delete(req: Any, ctx: Any) -> Any:
            rid = req.path.rsplit("/", 1)[-1]
            if rid not in self.items[kind]:
                ctx.status_code = 404
                return {"NeutronError": {"message": f"{kind[:-1]} not found"}}
            if kind in users:
                owner, key = users[kind]
                if any(rid in (o.get(key) or []) for o in self.items[owner].values()):
                    ctx.status_code = 409
                    return {"NeutronError": {"message": f"{kind[:-1]} {rid} in use"}}
            del self.items[kind][rid]
            ctx.status_code = 204
            return None
        return delete


# ---- Glance images and their nfvcat provenance (nfvcat.cloud.onboarding.provenance) --------------------------

def provenance_image(iid: str, name: str, source: str | None, lock: bytes = b"the lock's image",
                     uploaded: bytes | None = None, differs: str = "none") -> dict[str, Any]:
    """A Glance v2 image record (properties at the top level) with the provenance onboarding gives the file
    ``uploaded`` (default: ``lock``, the file its lock names); ``source`` None: no nfvcat provenance at all."""
    import hashlib

    image: dict[str, Any] = {"id": iid, "name": name, "status": "active", "disk_format": "qcow2",
                             "container_format": "bare", "visibility": "public", "hw_machine_type": "q35"}
    if source is None:
        return image
    return {**image, "nfvcat_entry": "images/vrouter", "nfvcat_version": "1.1.2", "nfvcat_source": source,
            "nfvcat_from": source, "nfvcat_lock_sha256": hashlib.sha256(lock).hexdigest(),
            "nfvcat_sha256": hashlib.sha256(lock if uploaded is None else uploaded).hexdigest(),
            "nfvcat_differs": differs}


def glance_images(m: requests_mock.Mocker, images: list[dict[str, Any]]) -> None:
    """Glance's GET /v2/images/{id} answering from ``images``; an id it does not hold is 404, as Glance
    answers for an image deleted or not visible to the project."""
    held = {i["id"]: i for i in images}

    def show(req: Any, ctx: Any) -> Any:
        iid = req.path.rsplit("/", 1)[1]
        if iid not in held:
            ctx.status_code = 404
            return {"code": 404, "title": "Not Found", "message": f"No image found with ID {iid}"}
        return held[iid]

    m.get(re.compile(rf"^{GLANCE}/images/[^/?]+$"), json=show)
