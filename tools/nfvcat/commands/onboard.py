"""``nfvcat onboard``: images, EPA flavors, provider networks and VNF packages of the catalog, idempotently."""

from __future__ import annotations

import argparse
import json

from nfvcat.commands import options
from nfvcat.core.errors import EXIT_OK


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("onboard", help="put the catalog's images, flavors, networks and packages on a cloud",
                              description=__doc__)
    options.add_cloud(p)
    options.add_format(p)
    p.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    p.add_argument("--only", action="append", choices=["images", "flavors", "networks", "packages"],
                   help="only these steps (repeatable; default all)")
    options.add_images(p)
    options.add_timeout(p, 600, "the network stack")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nfvcat import catalog
    from nfvcat.cloud import onboarding
    from nfvcat.cloud.connect import cloud_errors

    image_dir, overrides = options.image_overrides(args)
    root = catalog.require_root()
    steps = set(args.only or ["images", "flavors", "networks", "packages"])
    conn = options.cloud_connection(args)
    say = options.progress(args)

    plan = onboarding.Plan()
    with cloud_errors("onboard"):
        if "images" in steps:
            plan.add(*onboarding.images(conn, root, image_dir, overrides, args.dry_run, say))
        if "flavors" in steps:
            plan.add(*onboarding.flavors(conn, root, args.dry_run))
        if "networks" in steps:
            plan.add(*onboarding.networks(conn, root, args.dry_run, say, args.timeout))
        if "packages" in steps:
            plan.add(*onboarding.vnf_packages(conn, root, args.dry_run, say))
    if args.format == "json":
        print(json.dumps({"dry_run": args.dry_run, "changes": plan.changes,
                          "actions": [a.as_dict() for a in plan.actions]}, indent=2))
        return EXIT_OK
    for a in plan.actions:
        verb = a.verb if not args.dry_run or a.verb in ("unchanged", "skip") else f"would {a.verb}"
        print(f"{a.kind:12} {a.name:28} {verb:16} {a.detail}".rstrip())
    if plan.changes == 0:
        print("nothing to change: the cloud already has the catalog")
    else:
        print(f"{plan.changes} change(s){' planned (dry run)' if args.dry_run else ' made'}")
    return EXIT_OK
