"""Heat stacks through the orchestration API: bundling as `openstack stack create` does, waits with explicit
failure states, per-resource progress, the failing resource's reason."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nfvcat.cloud.connect import call
from nfvcat.errors import EXIT_ENGINE, UserError

FAILED = ("CREATE_FAILED", "UPDATE_FAILED", "DELETE_FAILED", "ROLLBACK_COMPLETE", "ROLLBACK_FAILED",
          "ADOPT_FAILED", "RESUME_FAILED", "SUSPEND_FAILED", "CHECK_FAILED")


@dataclass
class Bundle:
    template: dict[str, Any]
    files: dict[str, str]
    environment: dict[str, Any]
    env_files: dict[str, str] = field(default_factory=dict)


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
        deadline = time.monotonic() + timeout
        if seen is None:  # only what happens from now on
            seen = {ev["id"] for ev in self.events(name, sid)}
        while True:
            body = call(self.api, "GET", f"/stacks/{name}/{sid}", f"stack {name}", ok=(200, 404))
            if body is None:
                if action == "DELETE":
                    return {"stack_status": "DELETE_COMPLETE"}
                raise UserError(f"stack {name} disappeared while waiting for {action}", EXIT_ENGINE)
            stack = body["stack"]
            self._progress(name, sid, seen)
            status = stack["stack_status"]
            if stale is not None and stack.get("updated_time") == stale and not status.endswith("IN_PROGRESS"):
                status = "WAITING"
            if status == f"{action}_COMPLETE":
                return dict(stack)
            if status in FAILED or status.endswith("_FAILED"):
                raise StackFailed(stack, self.failure_reason(name, sid, stack))
            if time.monotonic() > deadline:
                raise StackFailed(stack, f"timed out after {timeout:.0f} s in {status}")
            time.sleep(2)

    def _progress(self, name: str, sid: str, seen: set[str]) -> None:
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
