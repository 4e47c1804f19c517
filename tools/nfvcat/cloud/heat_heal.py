"""Healing a VNF of a Heat stack: its server resource is marked unhealthy (Heat's resource mark-unhealthy, in the
nested stack that holds it), then the stack is updated with what it has (``openstack stack update --existing``):
Heat replaces what is unhealthy and nothing else."""

from __future__ import annotations

from typing import Any

from nfvcat.cloud.connect import call
from nfvcat.cloud.stacks import Stacks, stack_resources
from nfvcat.cloud.upgrade import SERVER, failed_resource, settle
from nfvcat.core.errors import EXIT_FINDINGS, UserError


def server_resource(conn: Any, stack: str, vnf: str) -> dict[str, Any]:
    """The OS::Nova::Server of VNF ``vnf`` (the nested stack's resource, as ``check`` names VNFs, or the
    server's own resource name)."""
    found = [r for r in stack_resources(conn, stack) if r.get("resource_type") == SERVER
             and vnf in (r.get("parent_resource"), r.get("resource_name"))]
    if len(found) != 1:
        names = sorted({str(r.get("parent_resource") or r.get("resource_name"))
                        for r in stack_resources(conn, stack) if r.get("resource_type") == SERVER})
        raise UserError(f"stack {stack}: {'no' if not found else 'more than one'} server of VNF {vnf} "
                        f"(servers of: {', '.join(names) or 'none'})")
    return found[0]


def _owner(resource: dict[str, Any]) -> str:
    """``NAME/ID`` of the (nested) stack that holds ``resource`` (its ``stack`` link)."""
    href = next((str(link.get("href")) for link in resource.get("links") or [] if link.get("rel") == "stack"), "")
    parts = href.rstrip("/").split("/")
    if len(parts) < 2 or "stacks" not in parts:
        raise UserError(f"resource {resource.get('resource_name')}: Heat names no stack that holds it")
    i = parts.index("stacks")
    return "/".join(parts[i + 1:i + 3])


def heal(conn: Any, stacks: Stacks, stack: str, vnf: str, reason: str, timeout: float) -> dict[str, Any]:
    """Replace VNF ``vnf``'s server: {"vnf", "server" (the old id), "new_server", "status"}."""
    res = server_resource(conn, stack, vnf)
    old = str(res.get("physical_resource_id") or "")
    owner = _owner(res)
    call(stacks.api, "PATCH", f"/stacks/{owner}/resources/{res['resource_name']}",
         f"mark {vnf}'s server unhealthy", ok=(200,), json={"mark_unhealthy": True,
                                                           "resource_status_reason": reason})
    found = stacks.find(stack)
    if found is None:
        raise UserError(f"no stack {stack}")
    sid = str(found["id"])
    seen = {ev["id"] for ev in stacks.events(stack, sid)}
    baseline = set(seen)
    before = stacks.get(stack, sid).get("updated_time")
    stacks.say(f"{stack}: {vnf}'s server {old} marked unhealthy; updating the stack to replace it")
    call(stacks.api, "PATCH", f"/stacks/{stack}/{sid}", f"stack update {stack}", ok=(202,),
         json={"timeout_mins": int(timeout // 60) + 1})
    done = settle(stacks, stack, sid, timeout, seen, stale=before)
    status = str(done["stack_status"])
    if status != "UPDATE_COMPLETE":
        cause = failed_resource(stacks, stack, sid, baseline) or str(done.get("stack_status_reason") or status)
        raise UserError(f"heal {stack} {vnf}: {status}: {cause}", EXIT_FINDINGS)
    new = str(server_resource(conn, stack, vnf).get("physical_resource_id") or "")
    return {"vnf": vnf, "server": old, "new_server": new, "status": status}
