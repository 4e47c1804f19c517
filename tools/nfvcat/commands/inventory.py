"""``nfvcat inventory``: host inventories for ``nfvcat plan``. ``collect`` builds one from a running cloud
(admin credentials, clouds.yaml / OS_CLOUD) as far as the APIs tell; ``check`` validates one."""

from __future__ import annotations

import argparse

from nfvcat.commands import options
from nfvcat.core.errors import EXIT_ENGINE, EXIT_OK, UserError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("inventory", help="host inventories for nfvcat plan", description=__doc__)
    sub = p.add_subparsers(dest="inventory_command", metavar="ACTION")
    sub.required = True
    c = sub.add_parser("collect", help="build an inventory from a running cloud (estimated NUMA layout)")
    options.add_cloud(c)
    options.add_timeout(c, None, "the cloud's answers")
    options.add_host_access(c)
    c.add_argument("-o", "--output", help="write here instead of stdout")
    c.set_defaults(func=collect)
    k = sub.add_parser("check", help="validate an inventory against its schema and Nova's object rules")
    k.add_argument("inventory", nargs="?", help="inventory file (default: the reference inventory)")
    k.set_defaults(func=check)


def collect(args: argparse.Namespace) -> int:
    import yaml

    from nfvcat.catalog import inventory
    from nfvcat.cloud.cloudfacts import CloudFacts
    from nfvcat.cloud.hostaccess import open_access, reader
    from nfvcat.plan import collect as collector

    access = open_access(args.host_access)
    got = CloudFacts(options.cloud_connection(args), reader(access)).collected
    if got is None:
        raise UserError("inventory collect: the hypervisors or Placement's resource providers are hidden (needs "
                        "admin), or no compute host is up and enabled", EXIT_ENGINE)
    data, measured = got
    inventory.from_data(data, "collected inventory")  # what we write must load
    text = collector.header(data, measured) + yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=110)
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as exc:
            raise UserError(f"{args.output}: cannot write: {exc.strerror or exc}") from None
    else:
        print(text, end="")
    return EXIT_OK


def check(args: argparse.Namespace) -> int:
    from nfvcat.catalog import inventory
    from nfvcat.plan.planner import Planner

    inv = inventory.load(args.inventory)
    planner = Planner(inv)
    devices = sum(sum(h.device_totals.values()) for h in planner.hosts)
    print(f"{inv.path}: {len(inv.hosts)} hosts, {sum(len(h.cells) for h in inv.hosts)} NUMA cells, "
          f"{devices} assignable PCI devices: ok")
    return EXIT_OK
