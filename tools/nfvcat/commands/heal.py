"""``nfvcat heal --via tacker NAME --vnfc ID``: heal one VNFC of a VNF instance through Tacker's v2 VNF LCM
(SOL002 heal by ``vnfcInstanceId``, as Tacker reports it in ``vnfcInfo``): Tacker has Heat replace the VDU's
server; the operation is waited for with progress and its failure reason. Then ``check`` runs on the stack.
"""

from __future__ import annotations

import argparse

from nfvcat.commands import options
from nfvcat.core.errors import EXIT_FINDINGS, EXIT_OK


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("heal", help="heal one VNFC of a VNF instance (Tacker), then check it",
                              description=__doc__)
    p.add_argument("vnf", help="VNF instance name")
    options.add_via(p, "tacker")
    p.add_argument("--vnfc", required=True, metavar="ID", help="vnfcInstanceId to heal (as Tacker reports it)")
    options.add_timeout(p, 900, "the LCM operation")
    options.add_checked(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nfvcat.cloud import tacker_lcm

    inv, access = options.open_checked(args)
    conn = options.cloud_connection(args)
    say = options.progress(args)

    vnf = tacker_lcm.heal(tacker_lcm.Tacker(conn, say), args.vnf, args.vnfc, args.timeout)
    healed = vnf["healed"]
    say(f"{args.vnf}: healed {healed['vnfc']} (server {healed['server']}); now {healed['new_vnfc']} "
        f"(server {healed['new_server']})")
    text, ok = tacker_lcm.check_and_report(conn, vnf, inv, access, args.format, check=not args.no_check)
    print(text)
    return EXIT_OK if ok else EXIT_FINDINGS
