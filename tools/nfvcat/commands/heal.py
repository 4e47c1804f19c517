"""``nfvcat heal NAME``: replace one failed VNF, then check.

- ``--via heat NAME --server VNF``: the VNF's server resource (as ``check`` names VNFs) is marked unhealthy and the
  stack updated with what it has: Heat replaces that server and nothing else.
- ``--via tacker NAME --vnfc ID``: one VNFC of a VNF instance through Tacker's v2 VNF LCM (SOL002 heal by
  ``vnfcInstanceId``, as Tacker reports it in ``vnfcInfo``): Tacker has Heat replace the VDU's server.

The operation is waited for with progress and its failure reason; then ``check`` runs on the stack. With
``--traffic``/``--traffic-command`` a constant-rate flow runs through the chain meanwhile and its outage is
reported (the prediction: the healed server goes down, no other does).
"""

from __future__ import annotations

import argparse

from nfvcat.commands import options
from nfvcat.core.errors import EXIT_USAGE, UserError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("heal", help="replace a failed VNF of a stack (Heat) or a VNFC of a VNF instance "
                              "(Tacker), then check it", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("vnf", metavar="NAME", help="the stack (heat) or the VNF instance (tacker)")
    options.add_via(p, "tacker", "heat")
    p.add_argument("--vnfc", metavar="ID", help="vnfcInstanceId to heal (tacker, as Tacker reports it)")
    p.add_argument("--server", metavar="VNF", help="the VNF whose server to replace (heat, as check names it)")
    options.add_timeout(p, 900, "the LCM operation")
    options.add_traffic(p)
    options.add_checked(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.via == "heat":
        return _via_heat(args)
    from nfvcat.cloud import tacker_lcm

    if not args.vnfc:
        raise UserError("heal --via tacker: --vnfc ID is required", EXIT_USAGE)
    checked = options.open_checked(args)
    conn = options.cloud_connection(args)
    say = options.progress(args)
    tk = tacker_lcm.Tacker(conn, say)
    inst = tacker_lcm.summary(tacker_lcm.instantiated(tk, args.vnf))
    server = next((v["server"] for v in inst["vnfcs"] if v["vnfcInstanceId"] == args.vnfc), None)
    vnf, outage = options.measured(args, conn, inst["stack"], f"heal {args.vnf} {args.vnfc}",
                                   lambda: tacker_lcm.heal(tk, args.vnf, args.vnfc, args.timeout),
                                   {server} if server else None, need_baseline=False)
    healed = vnf["healed"]
    say(f"{args.vnf}: healed {healed['vnfc']} (server {healed['server']}); now {healed['new_vnfc']} "
        f"(server {healed['new_server']})")
    return options.report_checked(args, conn, vnf, outage, checked=checked)


def _via_heat(args: argparse.Namespace) -> int:
    from nfvcat.cloud import heat_heal
    from nfvcat.cloud.check import check_stack
    from nfvcat.cloud.connect import cloud_errors
    from nfvcat.cloud.stacks import Stacks

    if not args.server:
        raise UserError("heal --via heat: --server VNF is required", EXIT_USAGE)
    conn = options.cloud_connection(args)
    say = options.progress(args)
    with cloud_errors(f"heal {args.vnf}"):
        old = heat_heal.server_resource(conn, args.vnf, args.server).get("physical_resource_id")
        healed, outage = options.measured(
            args, conn, args.vnf, f"heal {args.vnf} {args.server}",
            lambda: heat_heal.heal(conn, Stacks(conn, say), args.vnf, args.server, "nfvcat heal", args.timeout),
            {str(old)} if old else None, need_baseline=False)
        say(f"{args.vnf}: {args.server}'s server {healed['server']} replaced by {healed['new_server']}")
        verdicts = [] if args.no_check else check_stack(conn, args.vnf, *options.open_checked(args))
    return options.report_stack(args, args.vnf, verdicts, outage, {"healed": healed})
