"""``nfvcat scale --via tacker``: a VNF instance scaled out or in by steps of one of its VNFD's scaling aspects
through Tacker's v2 VNF LCM (SOL003 ``POST /vnf_instances/{id}/scale``, a ``ScaleVnfRequest``), waited for.

- **Before any call that changes something**, the request is held against what Tacker reports of the instance
  (``instantiatedVnfInfo.scaleStatus`` and ``maxScaleLevels``, which Tacker took from the deployed package's
  VNFD): an aspect the package does not have, or a level beyond ``max_scale_level`` or below 0, is a one-line
  error and nothing is sent (Tacker would answer 400 after the same reading).
- **Interrupted**: a run that finds an operation of this instance unfinished does not send another one. One
  still running (STARTING, PROCESSING, ROLLING_BACK) is waited for; a scale left FAILED_TEMP (a conductor or
  heat-engine lost mid-way) is retried once (SOL003 ``retry``) and, failing again, rolled back (Tacker rolls
  back a scale out; a scale in it cannot, which is said). The VNF then is at the old level or the new one.
- **Level against servers**: ``level_verdicts`` counts the servers of each scaled VDU in the stack Tacker made
  (Heat's resource list, every depth) and compares them with what the VNFD gives at the scale levels Tacker
  reports (``VduInitialDelta`` + level x delta) and with the VNFCs Tacker reports (``vnfcResourceInfo``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nfvcat.catalog import history
from nfvcat.cloud.connect import call
from nfvcat.cloud.marks import METADATA_KEY, parse_mark
from nfvcat.cloud.tacker_lcm import LCM, Tacker, failure, instantiated, stack_name, summary
from nfvcat.cloud.verdicts import FAIL, PASS, Verdict
from nfvcat.core.errors import EXIT_ENGINE, EXIT_FINDINGS, EXIT_USAGE, UserError
from nfvcat.packaging import basehot
from nfvcat.packaging.scaling import Scaling

RUNNING = ("STARTING", "PROCESSING", "ROLLING_BACK")


def levels(inst: dict[str, Any]) -> tuple[dict[str, int], dict[str, int]]:
    """(scale level, max scale level) per aspect, as Tacker reports them."""
    info = inst.get("instantiatedVnfInfo") or {}
    now = {str(s["aspectId"]): int(s["scaleLevel"]) for s in info.get("scaleStatus") or []}
    most = {str(s["aspectId"]): int(s["scaleLevel"]) for s in info.get("maxScaleLevels") or []}
    return now, most


def target_level(name: str, inst: dict[str, Any], aspect: str, steps: int, scale_in: bool) -> tuple[int, int]:
    """(level now, level after) of ``aspect``; an error for a request Tacker would refuse."""
    if steps < 1:
        raise UserError(f"--steps must be 1 or more, not {steps}", EXIT_USAGE)
    now, most = levels(inst)
    if aspect not in now or aspect not in most:
        raise UserError(f"{name}: no scaling aspect {aspect}; its package's aspects: "
                        f"{', '.join(sorted(now)) or 'none (its VNFD declares no ScalingAspects)'}", EXIT_USAGE)
    after = now[aspect] + (-steps if scale_in else steps)
    if after > most[aspect]:
        raise UserError(f"{name}: {aspect} is at scale level {now[aspect]} of at most {most[aspect]} "
                        f"(max_scale_level): scaling out by {steps} step(s) would reach {after}; nothing sent",
                        EXIT_USAGE)
    if after < 0:
        raise UserError(f"{name}: {aspect} is at scale level {now[aspect]}: scaling in by {steps} step(s) would "
                        f"reach {after}, below 0; nothing sent", EXIT_USAGE)
    return now[aspect], after


def unfinished(tk: Tacker, inst_id: str) -> dict[str, Any] | None:
    """The instance's LCM operation occurrence that is neither done nor given up (Tacker allows one)."""
    resp = tk.request("GET", f"{LCM}/vnf_lcm_op_occs", f"LCM operations of VNF instance {inst_id}",
                      params={"filter": f"(eq,vnfInstanceId,{inst_id})"})
    for occ in resp.json():
        if occ.get("operationState") in (*RUNNING, "FAILED_TEMP"):
            return dict(occ)
    return None


def settle(tk: Tacker, occ: dict[str, Any], what: str, timeout: float) -> dict[str, Any]:
    """Wait for an operation another run left; retry it once if FAILED_TEMP, roll it back if that fails too."""
    op_id = occ["id"]
    if occ.get("operationState") in RUNNING:
        tk.say(f"{what}: an earlier run's {occ.get('operation')} ({op_id}) is {occ['operationState']}: waiting for it")
        occ = tk.wait(op_id, what, timeout)
    if occ.get("operationState") == "FAILED_TEMP":
        tk.say(f"{what}: {occ.get('operation')} {op_id} FAILED_TEMP ({failure(occ)}): retrying it")
        tk.request("POST", f"{LCM}/vnf_lcm_op_occs/{op_id}/retry", f"retry {what}", ok=(202,))
        occ = tk.wait(op_id, what, timeout)
    return occ


def scale(tk: Tacker, name: str, aspect: str, steps: int, scale_in: bool, timeout: float) -> dict[str, Any]:
    """Scale and wait; the VNF as Tacker reports it after, with ``scale``: aspect, levels before and after."""
    inst = instantiated(tk, name)
    direction = "in" if scale_in else "out"
    what = f"scale {direction} {name} {aspect}"
    left = unfinished(tk, inst["id"])
    if left is not None:
        occ = settle(tk, left, what, timeout)
        params = left.get("operationParams") or {}
        same = (left.get("operation") == "SCALE" and params.get("aspectId") == aspect
                and params.get("type") == f"SCALE_{direction.upper()}" and params.get("numberOfSteps", 1) == steps)
        inst = tk.show(inst["id"])
        if occ.get("operationState") == "COMPLETED" and same:
            now = levels(inst)[0].get(aspect, 0)
            return {**summary(inst), "scale": {"aspect": aspect, "from": now + (steps if scale_in else -steps),
                                               "to": now, "resumed": left["id"]}}
        if occ.get("operationState") not in ("COMPLETED", "FAILED", "ROLLED_BACK"):
            _give_up(tk, occ, f"{str(left.get('operation')).lower()} {name}", timeout,
                     params.get("type") != "SCALE_OUT")
    before, after = target_level(name, inst, aspect, steps, scale_in)
    body = {"type": f"SCALE_{direction.upper()}", "aspectId": aspect, "numberOfSteps": steps}
    occ = tk.wait(tk.start(inst["id"], "scale", body), what, timeout)
    if occ["operationState"] != "COMPLETED":
        _give_up(tk, occ, what, timeout, scale_in)
    return {**summary(tk.show(inst["id"])), "scale": {"aspect": aspect, "from": before, "to": after}}


def _give_up(tk: Tacker, occ: dict[str, Any], what: str, timeout: float, scale_in: bool) -> None:
    """Roll back what Tacker can (a scale out) and raise the failure."""
    reason = failure(occ)
    if occ["operationState"] == "FAILED_TEMP" and not scale_in:
        tk.rollback(occ["id"], what, timeout)
        raise UserError(f"{what}: FAILED_TEMP: {reason}; rolled back to the level it had", EXIT_FINDINGS)
    if occ["operationState"] == "FAILED_TEMP":
        raise UserError(f"{what}: FAILED_TEMP: {reason}; Tacker cannot roll back a scale in: run it again (it "
                        f"is retried) or fail it (LCM operation {occ['id']})", EXIT_FINDINGS)
    raise UserError(f"{what}: {occ['operationState']}: {reason}", EXIT_FINDINGS)


def model(root: Path, inst: dict[str, Any]) -> Scaling:
    """The scaling model of the package the instance runs: its nfvcat mark's entry at that version."""
    found = parse_mark([(inst.get("metadata") or {}).get(METADATA_KEY, "")])
    if found is None:
        raise UserError(f"VNF instance {inst.get('vnfInstanceName')} carries no nfvcat mark (metadata "
                        f"{METADATA_KEY}): which catalog VNFD it runs is unknown", EXIT_USAGE)
    entry = history.resolve(root, f"{found[0]}@{found[1]}", "vnfd")
    flavour = str((inst.get("instantiatedVnfInfo") or {}).get("flavourId") or "default")
    return basehot.vnfd_scaling(entry.dir, str(entry.meta["template"]), flavour)


def level_verdicts(conn: Any, inst: dict[str, Any], scaling: Scaling) -> list[Verdict]:
    """Per scaled VDU: servers in the stack == the VNFD's count at Tacker's scale levels == Tacker's VNFCs."""
    now, _ = levels(inst)
    info = inst.get("instantiatedVnfInfo") or {}
    sid = (info.get("metadata") or {}).get("stack_id")
    stack = f"{stack_name(inst)}/{sid}" if sid else stack_name(inst)
    body = call(conn.orchestration, "GET", f"/stacks/{stack}/resources?nested_depth=5", f"stack {stack} resources",
                ok=(200, 404))
    if body is None:
        raise UserError(f"{inst.get('vnfInstanceName')}: Tacker reports stack {stack}, Heat has none", EXIT_ENGINE)
    servers = [r for r in body.get("resources", []) if r.get("resource_type") == "OS::Nova::Server"]
    out = []
    vdus = sorted({v for a in scaling.aspects.values() for v in a.deltas})
    for vdu in vdus:
        want = scaling.instances(vdu, now)
        have = sum(1 for r in servers if r.get("resource_name") == vdu)
        told = sum(1 for r in info.get("vnfcResourceInfo") or [] if r.get("vduId") == vdu)
        at = ", ".join(f"{a} level {now.get(a, 0)}" for a, asp in scaling.aspects.items() if vdu in asp.deltas)
        ok = want == have == told
        out.append(Verdict(str(inst.get("vnfInstanceName")), vdu, "scale level", PASS if ok else FAIL,
                           f"{at}: the VNFD gives {want} instance(s); the stack has {have} server(s), Tacker reports "
                           f"{told} VNFC(s)"))
    return out
