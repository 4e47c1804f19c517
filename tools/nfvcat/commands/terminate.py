"""``nfvcat terminate CHAIN``: delete the chain's stack, wait, and verify nothing it made is left."""

from __future__ import annotations

import argparse
import json
import sys

from nfvcat.errors import EXIT_FINDINGS, EXIT_OK


def register(subparsers: argparse._SubParsersAction) -> None:
    from nfvcat.cloud.connect import add_cloud_args

    p = subparsers.add_parser("terminate", help="delete a deployed chain", description=__doc__)
    p.add_argument("chain")
    p.add_argument("--stack", help="stack name (default: the chain's name)")
    p.add_argument("--timeout", type=float, default=600)
    add_cloud_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nfvcat.cloud.connect import cloud_errors, connect
    from nfvcat.cloud.stacks import Stacks

    conn = connect(args.os_cloud)
    name = args.stack or args.chain

    def say(text: str) -> None:
        if args.format == "text":
            print(text, file=sys.stderr, flush=True)

    with cloud_errors(f"terminate {name}"):
        stacks = Stacks(conn, say)
        left = delete_and_verify(conn, stacks, name, args.timeout)
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


def delete_and_verify(conn: object, stacks: object, name: str, timeout: float) -> list[str] | None:
    """Delete the stack; None if there was none, else what still exists of its servers, ports and volumes."""
    from nfvcat.cloud.connect import call
    from nfvcat.cloud.stacks import Stacks

    assert isinstance(stacks, Stacks)
    cur = stacks.find(name)
    if cur is None:
        return None
    made = [(r["resource_type"], r["physical_resource_id"]) for r in stacks.resources(name, cur["id"])
            if r.get("physical_resource_id")]
    stacks.delete(name, cur["id"])
    stacks.wait(name, cur["id"], "DELETE", timeout)
    paths = {"OS::Nova::Server": ("compute", "/servers/{}"), "OS::Neutron::Port": ("network", "/ports/{}"),
             "OS::Neutron::Net": ("network", "/networks/{}"), "OS::Cinder::Volume": ("block_storage", "/volumes/{}"),
             "OS::Nova::Flavor": ("compute", "/flavors/{}")}
    left = []
    for rtype, rid in made:
        if rtype not in paths:
            continue
        service, path = paths[rtype]
        body = call(getattr(conn, service), "GET", path.format(rid), f"{rtype} {rid}", ok=(200, 404))
        if body is not None:
            left.append(f"{rtype} {rid}")
    return left
