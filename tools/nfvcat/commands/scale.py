"""``nfvcat scale --via tacker NAME --aspect ASPECT [--in] [--steps N]``: a VNF instance scaled out (or in) by
steps of one of its VNFD's scaling aspects through Tacker's v2 VNF LCM (SOL003 scale), waited for with progress.

The request is held against the scale level and ``max_scale_level`` Tacker reports before anything is sent: an
unknown aspect or a level beyond the maximum (or below 0) is a one-line error. A run that finds the instance's
earlier operation unfinished waits for it (or retries it once if FAILED_TEMP) instead of sending another.
Afterwards, per scaled VDU, the servers in the stack are counted against the VNFD's count at the scale level
Tacker reports and the VNFCs Tacker reports (verdict "scale level"), then ``check`` runs on the stack, new VNFC
instances included.

Heat chains have no scale: no catalog chain declares a count parameter (each is a fixed service function
chain whose port pairs name each VNF).
"""

from __future__ import annotations

import argparse

from nfvcat.commands import options


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("scale", help="scale a VNF instance out or in by an aspect of its VNFD (Tacker), "
                              "then check it", description=__doc__)
    p.add_argument("vnf", help="VNF instance name")
    options.add_via(p, "tacker")
    p.add_argument("--aspect", required=True, help="scaling aspect of the VNFD (e.g. VDU_VROUTER_scale)")
    p.add_argument("--in", dest="scale_in", action="store_true", help="scale in (default: out)")
    p.add_argument("--steps", type=int, default=1, metavar="N", help="number of steps (default 1)")
    options.add_timeout(p, 900, "the LCM operation")
    options.add_traffic(p)
    options.add_checked(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nfvcat import catalog
    from nfvcat.cloud import tacker_lcm, tacker_scale

    root = catalog.require_root()
    checked = options.open_checked(args)
    conn = options.cloud_connection(args)
    tk = tacker_lcm.Tacker(conn, options.progress(args))
    # scale out takes no server down; scale in removes VNFCs Tacker chooses: no prediction
    stack = tacker_lcm.summary(tacker_lcm.instantiated(tk, args.vnf))["stack"]
    vnf, outage = options.measured(
        args, conn, stack, f"scale {'in' if args.scale_in else 'out'} {args.vnf} {args.aspect} by {args.steps}",
        lambda: tacker_scale.scale(tk, args.vnf, args.aspect, args.steps, args.scale_in, args.timeout),
        None if args.scale_in else set())
    inst = tk.show(vnf["vnf_instance"])
    levels = tacker_scale.level_verdicts(conn, inst, tacker_scale.model(root, inst))
    return options.report_checked(args, conn, vnf, outage, extra=levels, checked=checked)
