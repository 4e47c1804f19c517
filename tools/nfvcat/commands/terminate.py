"""``nfvcat terminate CHAIN``: delete the chain's stack, wait, and verify nothing it made is left.

``--via tacker NAME``: terminate the VNF instance NAME through Tacker's v2 VNF LCM (forceful), delete the
instance, and verify nothing of the stack Tacker made (servers, ports, networks, flavor) nor the instance is
left."""

from __future__ import annotations

import argparse
import json

from nfvcat.commands import options
from nfvcat.core.errors import EXIT_FINDINGS, EXIT_OK


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("terminate", help="delete a deployed chain", description=__doc__)
    p.add_argument("chain", help="chain (stack) name; with --via tacker, the VNF instance name")
    options.add_via(p, "heat", "tacker")
    p.add_argument("--stack", help="stack name (default: the chain's name)")
    options.add_timeout(p, 600, "the deletion")
    options.add_cloud(p)
    options.add_format(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nfvcat.cloud.connect import cloud_errors
    from nfvcat.cloud.stacks import Stacks, delete_and_verify

    conn = options.cloud_connection(args)
    name = args.stack or args.chain
    if args.via == "tacker":
        return _via_tacker(args, conn, name)
    with cloud_errors(f"terminate {name}"):
        left = delete_and_verify(conn, Stacks(conn, options.progress(args)), name, args.timeout)
    result = {"stack": name, "deleted": left is not None, "left_behind": left or []}
    if args.format == "json":
        print(json.dumps(result))
    elif left is None:
        print(f"{name}: no such stack, nothing to terminate")
    elif left:
        print(f"{name}: deleted, but left behind: {', '.join(left)}")
    else:
        print(f"{name}: deleted, nothing left behind")
    return EXIT_FINDINGS if left else EXIT_OK


def _via_tacker(args: argparse.Namespace, conn: object, name: str) -> int:
    from nfvcat.cloud import tacker_lcm

    result = tacker_lcm.terminate(conn, tacker_lcm.Tacker(conn, options.progress(args)), name, args.timeout)
    left = (result or {}).get("left_behind") or []
    if args.format == "json":
        print(json.dumps(result or {"name": name, "vnf_instance": None, "left_behind": []}))
    elif result is None:
        print(f"{name}: no such VNF instance, nothing to terminate")
    elif left:
        print(f"{name}: terminated, but left behind: {', '.join(left)}")
    else:
        print(f"{name}: terminated, VNF instance {result['vnf_instance']} deleted, nothing left behind "
              f"({result['resources']} resources of {result['stack']} checked)")
    return EXIT_FINDINGS if left else EXIT_OK
