"""Heat stacks through the orchestration API: bundling as `openstack stack create` does, waits with explicit
failure states, per-resource progress, the failing resource's reason."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from nfvcat.cloud.connect import call
from nfvcat.core.errors import EXIT_ENGINE, EXIT_FINDINGS, UserError
from nfvcat.core.waiting import TimedOut, until

FAILED = ("CREATE_FAILED", "UPDATE_FAILED", "DELETE_FAILED", "ROLLBACK_COMPLETE", "ROLLBACK_FAILED",
          "ADOPT_FAILED", "RESUME_FAILED", "SUSPEND_FAILED", "CHECK_FAILED")


@dataclass
class Bundle:
    template: dict[str, Any]
    files: dict[str, str]
    environment: dict[str, Any]
    env_files: dict[str, str] = field(default_factory=dict)

    def templates(self) -> list[tuple[str, dict[str, Any]]]:
        """(file key, parsed template) of the template ("") and of each file that is a template (a nested one: a
        mapping with a version or resources); other files (user data, scripts) and files that do not parse are
        left out."""
        out: list[tuple[str, dict[str, Any]]] = [("", self.template)]
        for key, text in self.files.items():
            try:
                data = yaml.safe_load(text) if isinstance(text, str) else None
            except yaml.YAMLError:
                continue
            if isinstance(data, dict) and ("heat_template_version" in data or "resources" in data):
                out.append((key, data))
        return out


def bundle(template: Path, env_paths: list[Path]) -> Bundle:
    """The template with every nested template and get_file, and the environments, as heatclient sends them."""
    from heatclient.common import template_utils
    from heatclient.exc import CommandError

    try:
        files, tpl = template_utils.process_template_path(str(template))
        env_files, env = template_utils.process_multiple_environments_and_files([str(p) for p in env_paths])
    except (CommandError, OSError) as exc:
        raise UserError(f"{template}: cannot bundle: {exc}") from None
    files = {k: v.decode() if isinstance(v, bytes) else v for k, v in files.items()}
    env_files = {k: v.decode() if isinstance(v, bytes) else v for k, v in env_files.items()}
    return Bundle(tpl, {**files, **env_files}, env, env_files)


class Stacks:
    def __init__(self, conn: Any, say: Callable[[str], None]) -> None:
        self.api = conn.orchestration
        self.say = say

    def find(self, name: str) -> dict[str, Any] | None:
        body = call(self.api, "GET", f"/stacks?name={name}", f"stack {name}")
        for s in body.get("stacks", []):
            if s["stack_name"] == name:
                return dict(s)
        return None

    def get(self, name: str, sid: str) -> dict[str, Any]:
        return dict(call(self.api, "GET", f"/stacks/{name}/{sid}", f"stack {name}")["stack"])

    def create(self, name: str, b: Bundle, params: dict[str, Any], timeout_min: int,
               tags: list[str] | None = None) -> str:
        body = {"stack_name": name, "template": b.template, "files": b.files, "environment": b.environment,
                "parameters": params, "timeout_mins": timeout_min, "disable_rollback": True}
        if tags:
            body["tags"] = ",".join(tags)
        res = call(self.api, "POST", "/stacks", f"stack create {name}", json=body)
        return str(res["stack"]["id"])

    def update(self, name: str, sid: str, b: Bundle, params: dict[str, Any], timeout_min: int,
               tags: list[str] | None = None) -> None:
        body = {"template": b.template, "files": b.files, "environment": b.environment, "parameters": params,
                "timeout_mins": timeout_min, "disable_rollback": True}
        if tags:
            body["tags"] = ",".join(tags)
        call(self.api, "PUT", f"/stacks/{name}/{sid}", f"stack update {name}", json=body)

    def delete(self, name: str, sid: str) -> None:
        call(self.api, "DELETE", f"/stacks/{name}/{sid}", f"stack delete {name}", ok=(200, 204, 404))

    def events(self, name: str, sid: str) -> list[dict[str, Any]]:
        body = call(self.api, "GET", f"/stacks/{name}/{sid}/events?nested_depth=3&sort_dir=asc&limit=1000",
                    f"stack events {name}", ok=(200, 404))
        return list((body or {}).get("events", []))

    def resources(self, name: str, sid: str) -> list[dict[str, Any]]:
        body = call(self.api, "GET", f"/stacks/{name}/{sid}/resources?nested_depth=5&with_detail=true",
                    f"stack resources {name}", ok=(200, 404))
        return list((body or {}).get("resources", []))

    def wait(self, name: str, sid: str, action: str, timeout: float, seen: set[str] | None = None,
             stale: str | None = None) -> dict[str, Any]:
        """Until ``<action>_COMPLETE`` (returned) or a failure state / timeout (UserError, exit 2 / 3). A state
        whose ``updated_time`` is ``stale`` is the one before our request, not its outcome."""
        if seen is None:  # only what happens from now on
            seen = {ev["id"] for ev in self.events(name, sid)}

        def poll() -> tuple[dict[str, Any], str]:  # the stack and its status (WAITING: still the stale one)
            body = call(self.api, "GET", f"/stacks/{name}/{sid}", f"stack {name}", ok=(200, 404))
            if body is None:
                if action == "DELETE":
                    return {"stack_status": "DELETE_COMPLETE"}, "DELETE_COMPLETE"
                raise UserError(f"stack {name} disappeared while waiting for {action}", EXIT_ENGINE)
            stack = dict(body["stack"])
            self.progress(name, sid, seen)
            status = stack["stack_status"]
            if stale is not None and stack.get("updated_time") == stale and not status.endswith("IN_PROGRESS"):
                status = "WAITING"
            if status != f"{action}_COMPLETE" and (status in FAILED or status.endswith("_FAILED")):
                raise StackFailed(stack, self.failure_reason(name, sid, stack))
            return stack, status

        try:
            return until(poll, lambda got: got[1] == f"{action}_COMPLETE", timeout=timeout,
                         what=f"stack {name}", state=lambda got: got[1], first=1.0, most=5.0)[0]
        except TimedOut as exc:
            raise StackFailed(exc.last[0], f"timed out after {timeout:.0f} s in {exc.last[1]}") from None

    def progress(self, name: str, sid: str, seen: set[str]) -> None:
        """Say each new event of the stack and its nested stacks (one line per resource state)."""
        for ev in self.events(name, sid):
            if ev["id"] in seen:
                continue
            seen.add(ev["id"])
            if ev.get("resource_name") == name:
                continue
            reason = ev.get("resource_status_reason") or ""
            tail = f": {reason}" if "FAILED" in ev.get("resource_status", "") and reason else ""
            self.say(f"  {ev['resource_name']:24} {ev['resource_status']}{tail}")

    def failure_reason(self, name: str, sid: str, stack: dict[str, Any]) -> str:
        """The deepest failed resource's reason (e.g. Nova's "No valid host ..."), else the stack's."""
        failed = [r for r in self.resources(name, sid) if str(r.get("resource_status", "")).endswith("FAILED")]
        leaves = [r for r in failed if r.get("resource_type", "").startswith("OS::") and
                  not r.get("resource_type", "").startswith("OS::Heat::")] or failed
        if leaves:
            r = leaves[0]
            return f"{r['resource_name']} ({r['resource_type']}): {r.get('resource_status_reason', '')}"
        return str(stack.get("stack_status_reason") or stack.get("stack_status"))


class StackFailed(UserError):
    def __init__(self, stack: dict[str, Any], reason: str) -> None:
        super().__init__(f"stack {stack.get('stack_name')} {stack.get('stack_status')}: {reason}", 2)
        self.stack = stack
        self.reason = reason


# ---- the lifecycle of one stack: parameters, converge (create/update/replace), delete and verify -------------

SECRET_ENV = "NFVCAT_SECRET_"
DONE = ("CREATE_COMPLETE", "UPDATE_COMPLETE", "RESUME_COMPLETE", "CHECK_COMPLETE")


def stack_parameters(template: dict[str, Any], given: dict[str, str], day0: str = "config-drive",
                     secrets_file: str | None = None, environ: dict[str, str] | None = None) -> dict[str, Any]:
    """The parameters a chain's stack gets: ``use_config_drive`` from the day-0 delivery (when the template
    has it), ``-P`` values, then secrets from a YAML file and ``NFVCAT_SECRET_<PARAM>`` variables (never printed)."""
    declared = template.get("parameters") or {}
    params: dict[str, Any] = {}
    if "use_config_drive" in declared:
        params["use_config_drive"] = "true" if day0 == "config-drive" else "false"
    params.update(given)
    if secrets_file:
        try:
            data = yaml.safe_load(Path(secrets_file).read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise UserError(f"--secrets {secrets_file}: {exc}") from None
        if not isinstance(data, dict):
            raise UserError(f"--secrets {secrets_file}: expected a mapping of parameter names to values")
        params.update({str(k): v for k, v in data.items()})
    by_lower = {str(k).lower(): str(k) for k in declared}
    for key, value in (os.environ if environ is None else environ).items():
        if key.startswith(SECRET_ENV) and key[len(SECRET_ENV):].lower() in by_lower:
            params[by_lower[key[len(SECRET_ENV):].lower()]] = value
    return params


def converge(stacks: Stacks, name: str, b: Bundle, params: dict[str, Any], timeout: float,
             tags: list[str] | None = None) -> str:
    """Bring stack ``name`` to the bundle (and ``tags``): wait for one in progress (an earlier, interrupted run),
    update a complete one in place, replace a failed one, create a missing one. On failure the stack is deleted,
    so nothing is left, and the failing resource's reason is raised (exit 2)."""
    timeout_min = int(timeout // 60) + 1
    say = stacks.say
    cur = stacks.find(name)
    if cur is not None:
        status = str(cur["stack_status"])
        sid = str(cur["id"])
        if status.endswith("IN_PROGRESS"):
            say(f"{name}: {status} (an earlier run?), waiting for it")
            try:
                stacks.wait(name, sid, status.split("_")[0], timeout)
            except StackFailed:
                pass
            cur = stacks.find(name)
            status = str(cur["stack_status"]) if cur else "DELETE_COMPLETE"
        if cur is not None and status in DONE:
            say(f"{name}: exists ({status}), updating in place")
            before = stacks.get(name, sid).get("updated_time") or ""
            stacks.update(name, sid, b, params, timeout_min, tags)
            try:
                stacks.wait(name, sid, "UPDATE", timeout, stale=before)
            except StackFailed as exc:
                cleanup(stacks, name, sid, timeout)
                raise UserError(f"{name}: {exc.reason}; stack deleted", EXIT_FINDINGS) from None
            return sid
        if cur is not None:
            say(f"{name}: {status}, replacing it")
            stacks.delete(name, sid)
            stacks.wait(name, sid, "DELETE", timeout)
    say(f"{name}: creating")
    sid = stacks.create(name, b, params, timeout_min, tags)
    try:
        stacks.wait(name, sid, "CREATE", timeout)
    except StackFailed as exc:
        cleanup(stacks, name, sid, timeout)
        raise UserError(f"{name}: {exc.reason}; stack deleted, nothing left", EXIT_FINDINGS) from None
    return sid


def cleanup(stacks: Stacks, name: str, sid: str, timeout: float) -> None:
    stacks.say(f"{name}: failed, deleting the stack")
    stacks.delete(name, sid)
    stacks.wait(name, sid, "DELETE", timeout)


# what a deleted stack's resources are looked up by, to prove they are gone
LEAK_PATHS = {"OS::Nova::Server": ("compute", "/servers/{}"), "OS::Neutron::Port": ("network", "/ports/{}"),
              "OS::Neutron::Net": ("network", "/networks/{}"), "OS::Cinder::Volume": ("block_storage", "/volumes/{}"),
              "OS::Nova::Flavor": ("compute", "/flavors/{}"),
              "OS::Nova::ServerGroup": ("compute", "/os-server-groups/{}"),
              "OS::Neutron::PortPair": ("network", "/sfc/port_pairs/{}"),
              "OS::Neutron::PortPairGroup": ("network", "/sfc/port_pair_groups/{}"),
              "OS::Neutron::FlowClassifier": ("network", "/sfc/flow_classifiers/{}"),
              "OS::Neutron::PortChain": ("network", "/sfc/port_chains/{}")}


def delete_and_verify(conn: Any, stacks: Stacks, name: str, timeout: float) -> list[str] | None:
    """Delete the stack; None if there was none, else what still exists of its servers, ports, networks,
    volumes, flavors, server groups and networking-sfc resources. A resource whose API cannot be asked is an
    error (exit 3), never "gone"."""
    cur = stacks.find(name)
    if cur is None:
        return None
    made = [(r["resource_type"], r["physical_resource_id"]) for r in stacks.resources(name, cur["id"])
            if r.get("physical_resource_id")]
    stacks.delete(name, cur["id"])
    stacks.wait(name, cur["id"], "DELETE", timeout)
    left = []
    for rtype, rid in made:
        if rtype not in LEAK_PATHS:
            continue
        service, path = LEAK_PATHS[rtype]
        body = call(getattr(conn, service), "GET", path.format(rid), f"{rtype} {rid}", ok=(200, 404))
        if body is not None:
            left.append(f"{rtype} {rid}")
    return left


def stack_resources(conn: Any, stack_name: str, missing_ok: bool = False) -> list[dict[str, Any]]:
    """Every resource of the stack and its nested stacks (Heat's list, nested_depth 5); a stack Heat does not
    know is an error, or none with ``missing_ok`` (one deleted meanwhile)."""
    body = call(conn.orchestration, "GET", f"/stacks/{stack_name}/resources?nested_depth=5",
                f"stack {stack_name} resources", ok=(200, 404))
    if body is None and not missing_ok:
        raise UserError(f"no stack {stack_name}", 1)
    return list((body or {}).get("resources", []))


def servers_of(conn: Any, stack_name: str, missing_ok: bool = False) -> list[tuple[str, str]]:
    """(VNF name, server id) for every OS::Nova::Server of the stack and its nested stacks."""
    out = []
    for r in stack_resources(conn, stack_name, missing_ok):
        if r.get("resource_type") == "OS::Nova::Server" and r.get("physical_resource_id"):
            parent = r.get("parent_resource") or r["resource_name"]
            out.append((str(parent), str(r["physical_resource_id"])))
    return sorted(out)
