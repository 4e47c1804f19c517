"""``nfvcat instantiate CHAIN``: a Heat stack from the catalog's templates, waited for, then checked.

Nested templates and files are bundled as ``openstack stack create`` does. On failure the failing resource's
reason is shown (e.g. Nova's "No valid host") and the stack is deleted, so nothing is left. Re-running after
an interruption converges: a stack in progress is waited for, a complete one is updated in place, a failed
one is replaced. Secret parameters come from ``--secrets FILE`` (YAML mapping) or ``NFVCAT_SECRET_<PARAM>``
environment variables and are never printed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import yaml

from nfvcat.errors import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, UserError

SECRET_ENV = "NFVCAT_SECRET_"


def register(subparsers: argparse._SubParsersAction) -> None:
    from nfvcat.cloud.connect import add_check_args, add_cloud_args

    p = subparsers.add_parser("instantiate", help="deploy a chain of the catalog as a Heat stack, then check it",
                              description=__doc__)
    p.add_argument("chain", help="catalog entry in templates/heat (e.g. chain-vrouter)")
    p.add_argument("--stack", help="stack name (default: the chain's name)")
    p.add_argument("-e", "--environment", action="append", default=[],
                   help="environment file, or the name of one of the entry's examples (e.g. sriov)")
    p.add_argument("-P", "--parameter", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--secrets", help="YAML file of secret parameters (never echoed)")
    p.add_argument("--day0", choices=["config-drive", "metadata"], default="config-drive",
                   help="day-0 delivery (sets use_config_drive when the template has it)")
    p.add_argument("--timeout", type=float, default=900, help="seconds to wait for the stack")
    p.add_argument("--no-check", action="store_true", help="skip nfvcat check at the end")
    add_cloud_args(p)
    add_check_args(p)
    p.set_defaults(func=run)


def parameters(args: argparse.Namespace, template: dict[str, Any]) -> dict[str, Any]:
    declared = template.get("parameters") or {}
    params: dict[str, Any] = {}
    if "use_config_drive" in declared:
        params["use_config_drive"] = "true" if args.day0 == "config-drive" else "false"
    for item in args.parameter:
        key, sep, value = item.partition("=")
        if not sep:
            raise UserError(f"-P {item}: expected KEY=VALUE", EXIT_USAGE)
        params[key] = value
    if args.secrets:
        try:
            data = yaml.safe_load(Path(args.secrets).read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise UserError(f"--secrets {args.secrets}: {exc}") from None
        if not isinstance(data, dict):
            raise UserError(f"--secrets {args.secrets}: expected a mapping of parameter names to values")
        params.update({str(k): v for k, v in data.items()})
    for key, value in os.environ.items():
        if key.startswith(SECRET_ENV) and key[len(SECRET_ENV):].lower() in {str(k).lower() for k in declared}:
            name = next(k for k in declared if str(k).lower() == key[len(SECRET_ENV):].lower())
            params[str(name)] = value
    return params


def run(args: argparse.Namespace) -> int:
    from nfvcat.cloud import catalog
    from nfvcat.cloud.connect import cloud_errors, connect
    from nfvcat.cloud.hostaccess import open_access
    from nfvcat.cloud.placement_check import load_inventory, report, report_text
    from nfvcat.cloud.stacks import Stacks, bundle

    entry = catalog.heat_entry(args.chain)
    envs = []
    for e in args.environment:
        path = Path(e) if Path(e).is_file() else entry.example(e)
        if path is None:
            raise UserError(f"-e {e}: no such file, nor an example of {entry.name}", EXIT_USAGE)
        envs.append(path)
    b = bundle(entry.template, envs)
    params = parameters(args, b.template)
    inv = load_inventory(args.inventory)
    access = open_access(args.host_access)
    name = args.stack or entry.name
    conn = connect(args.os_cloud)

    def say(text: str) -> None:
        if args.format == "text":
            print(text, file=sys.stderr, flush=True)

    stacks = Stacks(conn, say)
    timeout_min = int(args.timeout // 60) + 1
    with cloud_errors(f"instantiate {name}"):
        sid = converge(stacks, name, b, params, timeout_min, args.timeout, say)
        say(f"{name}: stack {sid} complete")
        if args.no_check:
            return 0
        from nfvcat.cloud.placement_check import check_stack

        verdicts = check_stack(conn, name, inv, access)
    result = report(verdicts, name)
    print(json.dumps(result, indent=2) if args.format == "json" else report_text(verdicts, name))
    return EXIT_OK if result["ok"] else EXIT_FINDINGS


def converge(stacks: Any, name: str, b: Any, params: dict[str, Any], timeout_min: int, timeout: float,
             say: Any) -> str:
    from nfvcat.cloud.stacks import StackFailed

    cur = stacks.find(name)
    if cur is not None:
        status = str(cur["stack_status"])
        sid = str(cur["id"])
        if status.endswith("IN_PROGRESS"):
            action = status.split("_")[0]
            say(f"{name}: {status} (an earlier run?), waiting for it")
            try:
                stacks.wait(name, sid, action, timeout)
            except StackFailed:
                pass
            cur = stacks.find(name)
            status = str(cur["stack_status"]) if cur else "DELETE_COMPLETE"
        if cur is not None and status in ("CREATE_COMPLETE", "UPDATE_COMPLETE", "RESUME_COMPLETE",
                                          "CHECK_COMPLETE"):
            say(f"{name}: exists ({status}), updating in place")
            before = stacks.get(name, sid).get("updated_time") or ""
            stacks.update(name, sid, b, params, timeout_min)
            try:
                stacks.wait(name, sid, "UPDATE", timeout, stale=before)
            except StackFailed as exc:
                cleanup(stacks, name, sid, timeout, say)
                raise UserError(f"{name}: {exc.reason}; stack deleted", EXIT_FINDINGS) from None
            return sid
        if cur is not None:
            say(f"{name}: {status}, replacing it")
            stacks.delete(name, sid)
            stacks.wait(name, sid, "DELETE", timeout)
    say(f"{name}: creating")
    sid = stacks.create(name, b, params, timeout_min)
    try:
        stacks.wait(name, sid, "CREATE", timeout)
    except StackFailed as exc:
        cleanup(stacks, name, sid, timeout, say)
        raise UserError(f"{name}: {exc.reason}; stack deleted, nothing left", EXIT_FINDINGS) from None
    return sid


def cleanup(stacks: Any, name: str, sid: str, timeout: float, say: Any) -> None:
    say(f"{name}: failed, deleting the stack")
    stacks.delete(name, sid)
    stacks.wait(name, sid, "DELETE", timeout)
