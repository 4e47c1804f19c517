"""``nfvcat upgrade --via tacker NAME --to VERSION``: a VNF instance moved to another version of its catalog VNF
package by Tacker's v2 Change Current VNF Package (SOL003 ``POST /vnf_instances/{id}/change_vnfpkg``), waited
for, then its nfvcat mark moved to the new version (a Modify VNF Information, ``PATCH /vnf_instances/{id}``).

What Tacker 16 requires for an OpenStack VIM (sol_refactored ``controller/vnflcm_v2.change_vnfpkg``):
``additionalParams.upgrade_type: RollingUpdate`` and ``vdu_params`` naming each VDU of the instance
(``vdu_id``); coordinate scripts (``lcm-operation-coordinate-new-vnf``/``-old-vnf``) are optional, and
the packages carry none: Tacker runs them against an SSH address of each VNFC, which nothing here serves. The
package's LCM user data (``VnfUserDataV2.change_vnfpkg``) gives the new BaseHOT, so the class is named.

- The new package is onboarded first, beside the one the instance runs (Tacker keys packages by VNFD id, and
  each entry version has its own, ``catalog.vnfd_ids``).
- Refused before any call: a version the catalog never had, a downgrade, and a BaseHOT whose top template drops
  a resource of the running one (Tacker merges the new template into the stack's, JSON merge patch: a dropped
  resource would stay, e.g. 2.0.x's VDU beside 2.1.0's scaling group).
- A failure leaves the operation FAILED_TEMP (the packages refuse Tacker's rollback: it is handed the new
  package only); the next run retries it. A run that finds the instance already on the target package only
  moves the mark: the upgrade converges on a rerun wherever it was interrupted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nfvcat.catalog import entries, history
from nfvcat.catalog.versions import parse_version
from nfvcat.cloud.marks import METADATA_KEY, mark, parse_mark
from nfvcat.cloud.tacker_lcm import USER_DATA, Tacker, failure, instantiated, summary, vnfd_id
from nfvcat.cloud.tacker_scale import settle, unfinished
from nfvcat.core.errors import EXIT_FINDINGS, EXIT_USAGE, UserError
from nfvcat.packaging import basehot


def deployed_entry(inst: dict[str, Any]) -> tuple[str, str]:
    found = parse_mark([(inst.get("metadata") or {}).get(METADATA_KEY, "")])
    if found is None:
        raise UserError(f"VNF instance {inst.get('vnfInstanceName')} carries no nfvcat mark (metadata "
                        f"{METADATA_KEY}): which catalog entry it runs is unknown", EXIT_USAGE)
    return found


def top_resources(entry: entries.Entry) -> set[str]:
    """The resources of the entry's generated BaseHOT top template."""
    import yaml

    files = basehot.basehot_files(entry.dir, entry.meta)
    flavour = str((basehot.read_mapping(entry.dir) or {}).get("flavour", "default"))
    top = yaml.safe_load(files[f"BaseHOT/{flavour}/{entry.name}.yaml"])
    return set(top.get("resources") or {})


def target(root: Path, name: str, current: str, to: str | None) -> entries.Entry:
    """The entry version to move to (default the newest), refused when it is older or its BaseHOT drops a
    resource of the running one."""
    to = history.target_version(root, name, "vnfd", to)
    if to is None:
        raise UserError(f"{name}: the catalog offers no version of it", EXIT_USAGE)
    have, want = parse_version(current), parse_version(to)
    if have and want and want < have:
        raise UserError(f"{name}: {to} is older than the deployed {current}: nfvcat does not downgrade", EXIT_USAGE)
    new = history.resolve(root, f"{name}@{to}", "vnfd")
    if to != current:
        dropped = sorted(top_resources(history.resolve(root, f"{name}@{current}", "vnfd")) - top_resources(new))
        if dropped:
            raise UserError(f"{name} {current} -> {to}: the new BaseHOT has no {', '.join(dropped)}; Tacker's "
                            "change_vnfpkg merges templates and would keep them: terminate and instantiate "
                            f"{name}@{to} instead", EXIT_USAGE)
    return new


def request(inst: dict[str, Any], new_vnfd: str) -> dict[str, Any]:
    """The ChangeCurrentVnfPkgRequest: RollingUpdate of every VDU the instance has, the package's user data."""
    vdus = sorted({str(r["vduId"]) for r in (inst.get("instantiatedVnfInfo") or {}).get("vnfcResourceInfo") or []})
    return {"vnfdId": new_vnfd, "additionalParams": {
        "upgrade_type": "RollingUpdate", "vdu_params": [{"vdu_id": v} for v in vdus], **USER_DATA}}


def preview(tk: Tacker, root: Path, name: str, to: str | None) -> dict[str, Any]:
    """What an upgrade would do, asking Tacker nothing but the instance: versions, VNFD ids, the request, every
    VNFC the rolling update replaces, the CHANGELOG sections up to the target."""
    inst = instantiated(tk, name)
    entry_name, current = deployed_entry(inst)
    new = target(root, entry_name, current, to)
    new_id = vnfd_id(new.dir, str(new.meta["template"]))
    return {"vnf": name, "entry": entry_name, "from": current, "to": str(new.meta["version"]),
            "vnfdId": {"from": inst.get("vnfdId"), "to": new_id}, "request": request(inst, new_id),
            "vnfcs": [v["vnfcInstanceId"] for v in summary(inst)["vnfcs"]],
            "changelog": history.changelog(new.dir, current, str(new.meta["version"]))}


def preview_text(p: dict[str, Any]) -> str:
    out = [f"{p['vnf']}: {p['entry']} {p['from']} -> {p['to']} through Tacker's change_vnfpkg "
           f"(vnfdId {p['vnfdId']['from']} -> {p['vnfdId']['to']}), RollingUpdate of "
           + ", ".join(v["vdu_id"] for v in p["request"]["additionalParams"]["vdu_params"]),
           "VNFCs replaced one after the other: " + (", ".join(p["vnfcs"]) or "none")]
    for version, notes in p["changelog"]:
        out.append(f"CHANGELOG {version}:")
        out += [f"  {line}" for line in notes.splitlines()]
    return "\n".join(out)


def upgrade(tk: Tacker, root: Path, name: str, to: str | None, timeout: float,
            onboard: Any) -> dict[str, Any]:
    """Move the VNF instance ``name`` to ``to`` (default: the newest version); ``onboard(entry, vnfd_id)`` puts
    the new package on the cloud. The VNF as Tacker reports it after, with ``upgrade``: from, to, vnfdIds."""
    inst = instantiated(tk, name)
    left = unfinished(tk, inst["id"])
    if left is not None:
        occ = settle(tk, left, f"{str(left.get('operation')).lower()} {name}", timeout)
        if occ.get("operationState") != "COMPLETED" and occ.get("operationState") not in ("FAILED", "ROLLED_BACK"):
            raise UserError(f"{name}: {left.get('operation')} {left['id']} is {occ.get('operationState')}: "
                            f"{failure(occ)}; run again (it is retried) or terminate", EXIT_FINDINGS)
        inst = tk.show(inst["id"])
    entry_name, current = deployed_entry(inst)
    new = target(root, entry_name, current, to)
    new_id = vnfd_id(new.dir, str(new.meta["template"]))
    version = str(new.meta["version"])
    what = f"change_vnfpkg {name} {entry_name} {current} -> {version}"
    if inst.get("vnfdId") != new_id:
        onboard(new, new_id)
        occ = tk.wait(tk.start(inst["id"], "change_vnfpkg", request(inst, new_id)), what, timeout)
        if occ["operationState"] != "COMPLETED":
            raise UserError(f"{what}: {occ['operationState']}: {failure(occ)}; the VNF instance keeps its "
                            f"package until the operation is retried (run again) or the VNF terminated",
                            EXIT_FINDINGS)
        inst = tk.show(inst["id"])
        if inst.get("vnfdId") != new_id:
            raise UserError(f"{what}: COMPLETED, yet Tacker reports vnfdId {inst.get('vnfdId')}, not {new_id}",
                            EXIT_FINDINGS)
    else:
        tk.say(f"{name}: already runs vnfdId {new_id} ({entry_name} {version})")
    if current != version:  # the mark follows the package (after an interrupted run: only the mark)
        body = {"metadata": {METADATA_KEY: mark(entry_name, version)},
                "vnfInstanceDescription": f"{entry_name}@{version} (nfvcat upgrade --via tacker)"}
        occ = tk.wait(tk.start(inst["id"], "", body, method="PATCH"), f"mark {name} {entry_name}@{version}",
                      timeout)
        if occ["operationState"] != "COMPLETED":
            raise UserError(f"mark {name}: {occ['operationState']}: {failure(occ)}", EXIT_FINDINGS)
        inst = tk.show(inst["id"])
    return {**summary(inst), "upgrade": {"entry": entry_name, "from": current, "to": version, "vnfdId": new_id}}

