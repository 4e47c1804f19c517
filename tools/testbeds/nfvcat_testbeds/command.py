"""``nfvcat devcloud up | down | status``: a private OpenStack on loopback for the lifecycle commands."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from nfvcat.commands import options
from nfvcat.core.errors import EXIT_ENGINE, EXIT_OK


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("devcloud", help="start, stop or show the private dev OpenStack (loopback only)",
                              description=__doc__)
    p.add_argument("--dir", help="state directory (default: .devcloud/ at the repository root or "
                                 "$NFVCAT_DEVCLOUD_DIR)")
    sub = p.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True
    up = sub.add_parser("up", help="start every service (idempotent)")
    up.add_argument("--inventory", help="host inventory of the simulated compute (format of nfvcat plan)")
    options.add_format(up)
    down = sub.add_parser("down", help="stop every service started and restore the host")
    down.add_argument("--wipe", action="store_true", help="also delete the state directory")
    options.add_format(down)
    st = sub.add_parser("status", help="which services run")
    options.add_format(st)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nfvcat_testbeds.devcloud import lifecycle
    from nfvcat_testbeds.devcloud.state import CLOUD_NAME, State, default_dir

    state = State(Path(args.dir).resolve() if args.dir else default_dir())
    if args.action == "up":
        result = lifecycle.up(state, Path(args.inventory) if args.inventory else None)
        result["cloud"] = CLOUD_NAME
        if args.format == "json":
            print(json.dumps(result, sort_keys=True))
        else:
            verb = "already up" if result["already_up"] else f"up in {result['seconds']:.0f} s"
            print(f"devcloud {verb}: OS_CLOUD={CLOUD_NAME} (state in {state.root}"
                  f"{', OVS-DPDK' if result['dpdk'] else ', OVS without DPDK'})")
        return EXIT_OK
    if args.action == "down":
        result = lifecycle.down(state, wipe=args.wipe)
        if args.format == "json":
            print(json.dumps(result, sort_keys=True))
        else:
            print(f"devcloud down: {len(result['stopped'])} processes stopped" + (", state wiped" if args.wipe else ""))
        return EXIT_OK
    rows = lifecycle.status(state)
    if args.format == "json":
        print(json.dumps(rows, sort_keys=True))
    else:
        for r in rows:
            print(f"{r['service']:28} {r['state']:9} {r['pid'] or ''}")
    up_count = sum(r["state"] == "up" for r in rows)
    print(f"{up_count}/{len(rows)} services up", file=sys.stderr)
    return EXIT_OK if up_count == len(rows) else EXIT_ENGINE
