"""A catalog VNF package's lifecycle through Tacker's v2 VNF LCM API (ETSI SOL003/SOL002 v2, Tacker 16):
instantiate, heal one VNFC, terminate; each LCM operation occurrence waited for, with progress and its
failure reason.

- **instantiate**: the VNF instance is created from the onboarded package's ``vnfdId`` (the entry's
  ``descriptor_id``), instantiated with a deployment flavour, an instantiation level, one external virtual
  link per external CP (a provider network of the catalog, ``ext_networks`` of the entry's basehot.yaml
  unless given) and ``additionalParams`` (the catalog parameters the BaseHOT declares, plus the package's LCM
  user data class). A failed operation is rolled back and the VNF instance deleted: nothing is left. An
  instance of that name already instantiated from the same package is taken as is (idempotent).
- **heal**: one VNFC, by the ``vnfcInstanceId`` Tacker reports (SOL002 ``vnfcInfo``); Tacker marks the VDU's
  server unhealthy in its stack and Heat replaces it.
- **terminate**: forceful termination, the VNF instance deleted, then every resource of the stack Tacker made
  (servers, ports, networks, flavor) looked up to prove it is gone.

HTTP goes through the openstacksdk connection's Keystone session (clouds.yaml, service type
``nfv-orchestration``). python-tackerclient 2.6 has methods for these calls, but its ``post`` returns a
202's body and drops the ``Location`` header, the only place SOL003 gives the LCM operation occurrence
of an instantiate, heal or terminate; so the calls are made here, with the ``Version`` header the v2 API
requires.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nfvcat.cloud.connect import call, cloud_errors
from nfvcat.cloud.marks import METADATA_KEY, mark
from nfvcat.cloud.stacks import LEAK_PATHS
from nfvcat.core.errors import EXIT_ENGINE, EXIT_FINDINGS, EXIT_USAGE, UserError
from nfvcat.core.waiting import TimedOut, until

SERVICE_TYPE = "nfv-orchestration"
V2 = {"Version": "2.0.0"}
LCM = "/vnflcm/v2"
USER_DATA = {"lcm-operation-user-data": "./UserData/lcm_user_data.py",
             "lcm-operation-user-data-class": "VnfUserDataV2"}
FINAL = ("COMPLETED", "FAILED_TEMP", "FAILED", "ROLLED_BACK")
POLL = 2.0


def adapter(conn: Any) -> Any:
    """A keystoneauth adapter for Tacker on the connection's session (an endpoint override in clouds.yaml,
    ``nfv_orchestration_endpoint_override``, wins over the catalog)."""
    from keystoneauth1 import adapter as ks_adapter

    cfg = conn.config
    return ks_adapter.Adapter(session=conn.session, service_type=SERVICE_TYPE,
                              interface=cfg.get_interface(SERVICE_TYPE), region_name=cfg.get_region_name(SERVICE_TYPE),
                              endpoint_override=cfg.get_endpoint(SERVICE_TYPE))


def available(conn: Any) -> bool:
    """Whether the cloud has Tacker: an endpoint override, else the service catalog's entry."""
    from keystoneauth1 import exceptions as ksa

    cfg = conn.config
    if cfg.get_endpoint(SERVICE_TYPE):
        return True
    try:
        return bool(conn.session.get_endpoint(service_type=SERVICE_TYPE, interface=cfg.get_interface(SERVICE_TYPE),
                                              region_name=cfg.get_region_name(SERVICE_TYPE)))
    except ksa.EndpointNotFound:
        return False


def _problem(resp: Any) -> str:
    try:
        body = resp.json()
    except ValueError:
        return resp.text[:300]
    if isinstance(body, dict):  # SOL013 ProblemDetails, or Tacker's v1 error envelope
        if body.get("detail"):
            return str(body["detail"])
        for key in ("TackerError", "error"):
            if isinstance(body.get(key), dict):
                return str(body[key].get("message") or body[key])
    return str(body)[:300]


class Tacker:
    """The few SOL003/SOL005 resources nfvcat uses, with one-line errors (exit 3, 1 for a rejected request)."""

    def __init__(self, conn: Any, say: Callable[[str], None], poll: float = POLL) -> None:
        self.api = adapter(conn)
        self.say = say
        self.poll = poll

    def request(self, method: str, path: str, what: str, ok: tuple[int, ...] = (200,), **kwargs: Any) -> Any:
        headers = {**V2, **kwargs.pop("headers", {})} if path.startswith(LCM) else kwargs.pop("headers", {})
        with cloud_errors(what):
            resp = self.api.request(path, method, raise_exc=False, headers=headers, **kwargs)
        if resp.status_code == 404 and 404 in ok:
            return None
        if resp.status_code not in ok:
            rid = resp.headers.get("x-openstack-request-id")
            raise UserError(f"{what}: HTTP {resp.status_code}: {_problem(resp)}" + (f" (request {rid})" if rid else ""),
                            EXIT_USAGE if resp.status_code in (400, 422) else EXIT_ENGINE)
        return resp

    def package(self, vnfd_id: str) -> dict[str, Any] | None:
        """The ONBOARDED and ENABLED package of ``vnfd_id``, if any."""
        resp = self.request("GET", "/vnfpkgm/v1/vnf_packages", f"VNF packages of vnfdId {vnfd_id}",
                            params={"filter": f"(eq,vnfdId,{vnfd_id})"})
        for pkg in resp.json():
            if pkg.get("onboardingState") == "ONBOARDED" and pkg.get("operationalState") == "ENABLED":
                return dict(pkg)
        return None

    def find(self, name: str) -> dict[str, Any] | None:
        resp = self.request("GET", f"{LCM}/vnf_instances", f"VNF instances named {name}",
                            params={"filter": f"(eq,vnfInstanceName,{name})"})
        found = resp.json()
        if len(found) > 1:
            raise UserError(f"{len(found)} VNF instances are named {name}: "
                            f"{', '.join(i['id'] for i in found)}; delete the extra ones", EXIT_USAGE)
        return dict(found[0]) if found else None

    def show(self, inst_id: str) -> dict[str, Any]:
        return dict(self.request("GET", f"{LCM}/vnf_instances/{inst_id}", f"VNF instance {inst_id}").json())

    def create(self, vnfd_id: str, name: str, description: str,
               metadata: dict[str, str] | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"vnfdId": vnfd_id, "vnfInstanceName": name, "vnfInstanceDescription": description}
        if metadata:
            body["metadata"] = metadata
        return dict(self.request("POST", f"{LCM}/vnf_instances", f"create VNF instance {name}", ok=(201,),
                                 json=body).json())

    def delete(self, inst_id: str, busy_ok: bool = False) -> None:
        """Delete a VNF instance (gone already: fine; ``busy_ok``: an operation still running on it, 409, too)."""
        self.request("DELETE", f"{LCM}/vnf_instances/{inst_id}", f"delete VNF instance {inst_id}",
                     ok=(204, 404, 409) if busy_ok else (204, 404))

    def start(self, inst_id: str, task: str, body: dict[str, Any], method: str = "POST") -> str:
        """POST a task (instantiate, heal, scale, change_vnfpkg, terminate; ``task`` "" with PATCH: modify
        information); the id of its LCM operation occurrence (Location)."""
        path = f"{LCM}/vnf_instances/{inst_id}" + (f"/{task}" if task else "")
        resp = self.request(method, path, f"{task or 'modify'} VNF instance {inst_id}", ok=(202,), json=body)
        location = resp.headers.get("Location") or ""
        if "/vnf_lcm_op_occs/" not in location:
            raise UserError(f"{task} VNF instance {inst_id}: Tacker gave no LCM operation occurrence "
                            f"(Location {location!r})", EXIT_ENGINE)
        return location.rstrip("/").rsplit("/", 1)[1]

    def op(self, op_id: str) -> dict[str, Any]:
        return dict(self.request("GET", f"{LCM}/vnf_lcm_op_occs/{op_id}", f"LCM operation {op_id}").json())

    def wait(self, op_id: str, what: str, timeout: float) -> dict[str, Any]:
        """Poll the operation occurrence until a final state; progress on each state change."""
        t0 = time.monotonic()
        said = [""]

        def poll() -> dict[str, Any]:
            occ = self.op(op_id)
            if str(occ.get("operationState")) != said[0]:
                said[0] = str(occ.get("operationState"))
                self.say(f"[{time.monotonic() - t0:6.1f}s] {what}: {said[0]}")
            return occ

        try:
            return until(poll, lambda occ: str(occ.get("operationState")) in FINAL, timeout=timeout, what=what,
                         state=lambda occ: occ.get("operationState"), first=self.poll, most=max(self.poll, 5.0))
        except TimedOut as exc:
            raise UserError(f"{what}: still {exc.last.get('operationState')} after {timeout:.0f} s (LCM operation "
                            f"{op_id}); Tacker goes on: wait, then terminate or re-run", EXIT_ENGINE) from None

    def rollback(self, op_id: str, what: str, timeout: float) -> dict[str, Any]:
        self.request("POST", f"{LCM}/vnf_lcm_op_occs/{op_id}/rollback", f"roll back {what}", ok=(202,))
        return self.wait(op_id, f"{what} rollback", timeout)


def failure(occ: dict[str, Any]) -> str:
    err = occ.get("error") or {}
    return str(err.get("detail") or err.get("title") or "no reason given")


# ---- the VNF as Tacker reports it ---------------------------------------------------------------------------

def stack_name(inst: dict[str, Any]) -> str:
    """The Heat stack Tacker's v2 LCM made for the instance (sol_refactored heat_utils: ``vnf-<id>``)."""
    return f"vnf-{inst['id']}"


def summary(inst: dict[str, Any]) -> dict[str, Any]:
    """The instance's VNFCs (SOL002 vnfcInfo -> server), external CPs and stack, as Tacker reports them."""
    info = inst.get("instantiatedVnfInfo") or {}
    servers = {r["id"]: r for r in info.get("vnfcResourceInfo") or []}
    vnfcs = [{"vnfcInstanceId": v["id"], "vduId": v.get("vduId"),
              "server": ((servers.get(v.get("vnfcResourceInfoId")) or {}).get("computeResource") or {})
              .get("resourceId")} for v in info.get("vnfcInfo") or []]
    ports = {p["id"]: (p.get("resourceHandle") or {}).get("resourceId")
             for vl in info.get("extVirtualLinkInfo") or [] for p in vl.get("extLinkPorts") or []}
    ext_cps = [{"id": c["id"], "cpdId": c.get("cpdId"), "port": ports.get(c.get("extLinkPortId")),
                "vnfcCp": c.get("associatedVnfcCpId")} for c in info.get("extCpInfo") or []]
    return {"vnf_instance": inst["id"], "name": inst.get("vnfInstanceName"), "vnfdId": inst.get("vnfdId"),
            "state": inst.get("instantiationState"), "flavour": info.get("flavourId"),
            "stack": stack_name(inst), "stack_id": (info.get("metadata") or {}).get("stack_id"),
            "vnfcs": vnfcs, "ext_cps": ext_cps}


def report(vnf: dict[str, Any], verdicts: list[Any] | None, fmt: str) -> str:
    """What ``instantiate|heal --via tacker`` print: the VNF as Tacker reports it, then the check of its stack
    (``verdicts`` None: not checked)."""
    import json

    from nfvcat.cloud.verdicts import report as check_report

    if fmt == "json":
        checked = {} if verdicts is None else json.loads(check_report(verdicts, vnf["stack"], "json"))
        return json.dumps({"vnf": vnf, **checked}, indent=2)
    lines = [f"{vnf['name']}: {vnf['state']} (VNF instance {vnf['vnf_instance']}, stack {vnf['stack']})"]
    lines += [f"  VNFC {v['vnfcInstanceId']} ({v['vduId']}): server {v['server']}" for v in vnf["vnfcs"]]
    lines += [f"  external CP {c['cpdId']}: port {c['port']}" for c in vnf["ext_cps"]]
    if vnf.get("upgrade"):
        lines.append("  upgraded {entry} {from} -> {to} (vnfdId {vnfdId})".format(**vnf["upgrade"]))
    if vnf.get("scale"):
        lines.append("  scaled {aspect}: level {from} -> {to}".format(**vnf["scale"]))
    if verdicts is not None:
        lines.append(check_report(verdicts, vnf["stack"], "text"))
    return "\n".join(lines)


def check_and_report(conn: Any, vnf: dict[str, Any], inv: Any, access: Any, fmt: str,
                     check: bool = True, extra: list[Any] | None = None) -> tuple[str, bool]:
    """``check`` on the stack Tacker made (unless not ``check``) after the ``extra`` verdicts: the report to
    print and whether it passed."""
    from nfvcat.cloud.check import check_stack
    from nfvcat.cloud.verdicts import passed

    verdicts = list(extra or [])
    if check:
        with cloud_errors(f"check {vnf['stack']}"):
            verdicts += check_stack(conn, vnf["stack"], inv, access)
    if not verdicts:
        return report(vnf, None, fmt), True
    return report(vnf, verdicts, fmt), passed(verdicts)


# ---- what the entry says: vnfdId, external CPs and the networks they connect to by default -------------------

@dataclass
class Request:
    name: str
    flavour: str
    level: str | None
    ext_networks: dict[str, str]  # external CP -> network name or id
    additional: dict[str, Any]


def vnfd_id(entry_dir: Path, template: str) -> str:
    from nfvcat.packaging import csar

    return str(csar.vnf_properties(entry_dir, template)["descriptor_id"])


def external_cps(entry_dir: Path, template: str, flavour: str) -> list[str]:
    """The flavour's VduCps with no internal virtual link: Tacker connects them by extVirtualLinks."""
    from nfvcat.packaging import basehot

    nodes = basehot.vnfd_flavour(entry_dir, template, flavour)
    return sorted(n for n, d in nodes.items() if isinstance(d, dict) and d.get("type") == "tosca.nodes.nfv.VduCp"
                  and not any(isinstance(r, dict) and "virtual_link" in r for r in d.get("requirements") or []))


def default_networks(entry_dir: Path) -> dict[str, str]:
    from nfvcat.packaging import basehot

    mapping = basehot.read_mapping(entry_dir) or {}
    nets = mapping.get("ext_networks") or {}
    return {str(k): str(v) for k, v in nets.items()} if isinstance(nets, dict) else {}


def additional_params(entry_dir: Path, given: dict[str, str], secrets_file: str | None) -> dict[str, Any]:
    """``additionalParams``: ``-P`` values, then secrets (file, ``NFVCAT_SECRET_<PARAM>``), each a catalog
    parameter the BaseHOT declares (``additional_params`` of basehot.yaml)."""
    from nfvcat.cloud.stacks import stack_parameters
    from nfvcat.packaging import basehot

    declared = [str(n) for n in (basehot.read_mapping(entry_dir) or {}).get("additional_params") or []]
    params = stack_parameters({"parameters": {n: {} for n in declared}}, given, secrets_file=secrets_file)
    unknown = sorted(set(params) - set(declared))
    if unknown:
        raise UserError(f"not parameters of the VNF's BaseHOT: {', '.join(unknown)} (additionalParams it takes: "
                        f"{', '.join(declared) or 'none'})")
    return params


def ext_virtual_links(conn: Any, cps: list[str], given: dict[str, str]) -> list[dict[str, Any]]:
    """One extVirtualLink per external CP, on the network given for it (name or id, looked up in Neutron)."""
    unknown = sorted(set(given) - set(cps))
    if unknown:
        raise UserError(f"--ext-net: not an external CP of the flavour: {', '.join(unknown)} "
                        f"(external CPs: {', '.join(cps)})")
    missing = [cp for cp in cps if cp not in given]
    if missing:
        raise UserError(f"no network for the external CP {', '.join(missing)}: give --ext-net CP=NETWORK")
    links = []
    for cp in cps:
        with cloud_errors(f"network {given[cp]}"):
            net = conn.network.find_network(given[cp])
        if net is None:
            raise UserError(f"{cp}: no network {given[cp]} on the cloud (`nfvcat onboard --only networks` creates "
                            "the catalog's provider networks)", EXIT_ENGINE)
        links.append({"id": f"{cp}-link", "resourceId": net.id, "extCps": [{"cpdId": cp, "cpConfig": {
            f"{cp}-1": {"cpProtocolData": [{"layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": {
                "ipAddresses": [{"type": "IPV4", "numDynamicAddresses": 1}]}}]}}}]})
    return links


# ---- the three operations -------------------------------------------------------------------------------------

def instantiate(conn: Any, tk: Tacker, entry_dir: Path, entry: dict[str, Any], req: Request,
                timeout: float) -> dict[str, Any]:
    vid = vnfd_id(entry_dir, entry["template"])
    if tk.package(vid) is None:
        raise UserError(f"{entry['name']} {entry['version']}: no onboarded, enabled VNF package of vnfdId {vid} "
                        "on this cloud (`nfvcat onboard --only packages`)", EXIT_ENGINE)
    links = ext_virtual_links(conn, external_cps(entry_dir, entry["template"], req.flavour),
                              {**default_networks(entry_dir), **req.ext_networks})
    inst = tk.find(req.name)
    if inst is not None and inst.get("instantiationState") == "INSTANTIATED":
        if inst.get("vnfdId") != vid:
            raise UserError(f"{req.name}: already instantiated from another package (vnfdId {inst.get('vnfdId')}); "
                            "terminate it first", EXIT_USAGE)
        tk.say(f"{req.name}: already instantiated (VNF instance {inst['id']})")
        return summary(tk.show(inst["id"]))
    if inst is not None and inst.get("vnfdId") != vid:  # a NOT_INSTANTIATED leftover of another package
        tk.delete(inst["id"])
        inst = None
    if inst is None:
        inst = tk.create(vid, req.name, f"{entry['name']}@{entry['version']} (nfvcat instantiate --via tacker)",
                         {METADATA_KEY: mark(entry["name"], entry["version"])})
        tk.say(f"{req.name}: VNF instance {inst['id']} created from vnfdId {vid}")
    body: dict[str, Any] = {"flavourId": req.flavour, "extVirtualLinks": links,
                            "additionalParams": {**req.additional, **USER_DATA}}
    if req.level:
        body["instantiationLevelId"] = req.level
    what = f"instantiate {req.name}"
    try:
        op_id = tk.start(inst["id"], "instantiate", body)
    except UserError:  # rejected (a bad flavour, level or parameter): the instance is not left behind
        _discard(tk, inst["id"])
        raise
    occ = tk.wait(op_id, what, timeout)
    if occ["operationState"] != "COMPLETED":
        reason = failure(occ)
        if occ["operationState"] == "FAILED_TEMP":
            tk.rollback(op_id, what, timeout)
        _discard(tk, inst["id"])
        raise UserError(f"{what}: {occ['operationState']}: {reason}; rolled back, VNF instance deleted",
                        EXIT_FINDINGS)
    return summary(tk.show(inst["id"]))


def _discard(tk: Tacker, inst_id: str) -> None:
    """Delete a VNF instance left NOT_INSTANTIATED by a failed instantiate (Tacker refuses otherwise). One an
    earlier, interrupted run is still instantiating (409) is left to that operation, not masked as an error."""
    inst = tk.request("GET", f"{LCM}/vnf_instances/{inst_id}", f"VNF instance {inst_id}", ok=(200, 404))
    if inst is not None and inst.json().get("instantiationState") == "NOT_INSTANTIATED":
        tk.delete(inst_id, busy_ok=True)


def instantiated(tk: Tacker, name: str) -> dict[str, Any]:
    """The VNF instance named ``name``, in full; an error unless it is instantiated."""
    inst = tk.find(name)
    if inst is None:
        raise UserError(f"no VNF instance named {name}")
    if inst.get("instantiationState") != "INSTANTIATED":
        raise UserError(f"VNF instance {name} ({inst['id']}) is {inst.get('instantiationState')}")
    return tk.show(inst["id"])


def heal(tk: Tacker, name: str, vnfc: str, timeout: float) -> dict[str, Any]:
    """Heal one VNFC by its vnfcInstanceId; the VNF as reported after, with the VNFC's new identity."""
    inst = instantiated(tk, name)
    before = summary(inst)
    ids = [v["vnfcInstanceId"] for v in before["vnfcs"]]
    if vnfc not in ids:
        raise UserError(f"{name}: no VNFC {vnfc}; Tacker reports {', '.join(ids) or 'none'}")
    old = next(v for v in before["vnfcs"] if v["vnfcInstanceId"] == vnfc)
    what = f"heal {name} {vnfc}"
    occ = tk.wait(tk.start(inst["id"], "heal", {"vnfcInstanceId": [vnfc], "cause": "nfvcat heal"}), what, timeout)
    if occ["operationState"] != "COMPLETED":
        raise UserError(f"{what}: {occ['operationState']}: {failure(occ)}", EXIT_FINDINGS)
    after = summary(tk.show(inst["id"]))
    new = [v for v in after["vnfcs"] if v["vduId"] == old["vduId"] and v["vnfcInstanceId"] not in ids]
    after["healed"] = {"vnfc": vnfc, "server": old["server"],
                       "new_vnfc": new[0]["vnfcInstanceId"] if new else vnfc,
                       "new_server": new[0]["server"] if new else old["server"]}
    return after


def terminate(conn: Any, tk: Tacker, name: str, timeout: float) -> dict[str, Any] | None:
    """Terminate and delete the VNF instance; None if there is none. ``left_behind``: what of its stack still
    exists (servers, ports, networks, flavor), each looked up by id; a resource no API answers for fails."""
    inst = tk.find(name)
    if inst is None:
        return None
    made: list[tuple[str, str]] = []
    stack_gone = True
    if inst.get("instantiationState") == "INSTANTIATED":
        inst = tk.show(inst["id"])
        sid = (inst.get("instantiatedVnfInfo", {}).get("metadata") or {}).get("stack_id")
        stack = f"{stack_name(inst)}/{sid}" if sid else stack_name(inst)
        body = call(conn.orchestration, "GET", f"/stacks/{stack}/resources?nested_depth=5",
                    f"stack {stack} resources", ok=(200, 404))
        made = [(r["resource_type"], r["physical_resource_id"]) for r in (body or {}).get("resources", [])
                if r.get("physical_resource_id")]
        what = f"terminate {name}"
        occ = tk.wait(tk.start(inst["id"], "terminate", {"terminationType": "FORCEFUL"}), what, timeout)
        if occ["operationState"] != "COMPLETED":
            raise UserError(f"{what}: {occ['operationState']}: {failure(occ)}", EXIT_FINDINGS)
        left_stack = call(conn.orchestration, "GET", f"/stacks/{stack}", f"stack {stack}", ok=(200, 404))
        status = ((left_stack or {}).get("stack") or {}).get("stack_status")
        stack_gone = left_stack is None or status == "DELETE_COMPLETE"
    tk.delete(inst["id"])
    left = [] if stack_gone else [f"stack {stack_name(inst)}"]
    for rtype, rid in made:
        if rtype in LEAK_PATHS:
            service, path = LEAK_PATHS[rtype]
            if call(getattr(conn, service), "GET", path.format(rid), f"{rtype} {rid}", ok=(200, 404)) is not None:
                left.append(f"{rtype} {rid}")
    if tk.request("GET", f"{LCM}/vnf_instances/{inst['id']}", f"VNF instance {inst['id']}", ok=(200, 404)):
        left.append(f"VNF instance {inst['id']}")
    return {"vnf_instance": inst["id"], "name": name, "stack": stack_name(inst), "resources": len(made),
            "left_behind": left}
