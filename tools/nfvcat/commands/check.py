"""``nfvcat check CHAIN``: bound ports, NUMA placement, pinning, page size, PCI devices and VF affinity of a
deployed chain (see nfvcat.cloud.placement_check)."""

from __future__ import annotations

import argparse

from nfvcat.commands import options
from nfvcat.core.errors import EXIT_FINDINGS, EXIT_OK


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("check", help="check the placement and port binding of a deployed chain",
                              description=__doc__)
    p.add_argument("chain", help="catalog entry (or stack name, with --stack)")
    p.add_argument("--stack", help="stack name (default: the chain's name)")
    options.add_checked(p, skippable=False, columns=True)
    options.add_timeout(p, None, "the cloud's answers")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nfvcat.cloud.check import check_stack
    from nfvcat.cloud.connect import cloud_errors
    from nfvcat.cloud.verdicts import passed, report

    inv, access = options.open_checked(args)
    conn = options.cloud_connection(args)
    stack = args.stack or args.chain
    with cloud_errors(f"check {stack}"):
        verdicts = check_stack(conn, stack, inv, access)
    if options.tabular(args):  # a row per verdict, as the JSON report's verdicts
        options.emit(args, ("vnf", "subject", "check", "status", "detail"),
                     [[v.vnf, v.subject, v.check, v.status, v.detail] for v in verdicts])
    else:
        print(report(verdicts, stack, args.format))
    return EXIT_OK if passed(verdicts) else EXIT_FINDINGS
