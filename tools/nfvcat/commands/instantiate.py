"""``nfvcat instantiate CHAIN``: a Heat stack from the catalog's templates, waited for, then checked.

Nested templates and files are bundled as ``openstack stack create`` does. On failure the failing resource's
reason is shown (e.g. Nova's "No valid host") and the stack is deleted, so nothing is left. Re-running after
an interruption converges: a stack in progress is waited for, a complete one is updated in place, a failed
one is replaced. Secret parameters come from ``--secrets FILE`` (YAML mapping) or ``NFVCAT_SECRET_<PARAM>``
environment variables and are never printed.
"""

from __future__ import annotations

import argparse
import sys

from nfvcat.commands import options
from nfvcat.errors import EXIT_FINDINGS, EXIT_OK


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("instantiate", help="deploy a chain of the catalog as a Heat stack, then check it",
                              description=__doc__)
    p.add_argument("chain", help="catalog entry in templates/heat (e.g. chain-vrouter)")
    p.add_argument("--stack", help="stack name (default: the chain's name)")
    options.add_environments(p, "environment file, or the name of one of the entry's examples (e.g. sriov)")
    options.add_parameters(p)
    p.add_argument("--secrets", help="YAML file of secret parameters (never echoed)")
    p.add_argument("--day0", choices=["config-drive", "metadata"], default="config-drive",
                   help="day-0 delivery (sets use_config_drive when the template has it)")
    p.add_argument("--timeout", type=float, default=900, help="seconds to wait for the stack")
    p.add_argument("--no-check", action="store_true", help="skip nfvcat check at the end")
    options.add_cloud(p)
    options.add_format(p)
    options.add_inventory(p)
    options.add_host_access(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nfvcat import catalog
    from nfvcat.catalog import entries
    from nfvcat.cloud.connect import cloud_errors, connect
    from nfvcat.cloud.hostaccess import open_access
    from nfvcat.cloud.placement_check import check_stack, load_inventory, passed, report
    from nfvcat.cloud.stacks import Stacks, bundle, converge, stack_parameters

    entry = entries.find(catalog.require_root(), args.chain, "heat")
    b = bundle(entry.template, entry.environments(args.environment))
    params = stack_parameters(b.template, dict(args.parameter), args.day0, args.secrets)
    inv = load_inventory(args.inventory)
    access = open_access(args.host_access)
    name = args.stack or entry.name
    conn = connect(args.os_cloud)

    def say(text: str) -> None:
        if args.format == "text":
            print(text, file=sys.stderr, flush=True)

    with cloud_errors(f"instantiate {name}"):
        sid = converge(Stacks(conn, say), name, b, params, args.timeout)
        say(f"{name}: stack {sid} complete")
        if args.no_check:
            return EXIT_OK
        verdicts = check_stack(conn, name, inv, access)
    print(report(verdicts, name, args.format))
    return EXIT_OK if passed(verdicts) else EXIT_FINDINGS
