"""``nfvcat check CHAIN``: bound ports, NUMA placement, pinning, page size and VF affinity of a deployed chain."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from nfvcat.errors import EXIT_FINDINGS, EXIT_OK


def add_inventory_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--inventory", default=os.environ.get("NFVCAT_INVENTORY"),
                   help="host inventory (format of nfvcat plan) with each host's CPU sets and PF-to-NUMA map "
                        "(default: $NFVCAT_INVENTORY, else the dev cloud's)")


def register(subparsers: argparse._SubParsersAction) -> None:
    from nfvcat.cloud.connect import add_cloud_args

    p = subparsers.add_parser("check", help="check the placement and port binding of a deployed chain",
                              description=__doc__)
    p.add_argument("chain", help="catalog entry (or stack name, with --stack)")
    p.add_argument("--stack", help="stack name (default: the chain's name)")
    add_cloud_args(p)
    add_inventory_arg(p)
    p.set_defaults(func=run)


def load_inventory(path: str | None) -> Any:
    from nfvcat.plan import inventory

    if not path:
        path = str(Path(__file__).resolve().parent.parent / "devcloud" / "inventory.yaml")
    return inventory.load(path)


def report(verdicts: list[Any], fmt: str, stack: str) -> int:
    from nfvcat.cloud.placement_check import PASS, text_table

    ok = bool(verdicts) and all(v.status == PASS for v in verdicts)
    if fmt == "json":
        print(json.dumps({"stack": stack, "ok": ok, "verdicts": [v.as_dict() for v in verdicts]}, indent=2))
    else:
        print(text_table(verdicts))
        bad = sum(v.status != PASS for v in verdicts)
        print(f"{stack}: all {len(verdicts)} checks pass" if ok else f"{stack}: {bad} of {len(verdicts)} not passed")
    return EXIT_OK if ok else EXIT_FINDINGS


def run(args: argparse.Namespace) -> int:
    from nfvcat.cloud.connect import cloud_errors, connect
    from nfvcat.cloud.placement_check import check_stack

    inv = load_inventory(args.inventory)
    conn = connect(args.os_cloud)
    stack = args.stack or args.chain
    with cloud_errors(f"check {stack}"):
        verdicts = check_stack(conn, stack, inv)
    return report(verdicts, args.format, stack)
