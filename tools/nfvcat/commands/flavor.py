"""``nfvcat flavor list | render NAME --as cli|hot|host``: catalog flavors as an ``openstack flavor
create`` line, as an ``OS::Nova::Flavor`` HOT resource, or as what the compute host must provide."""

from __future__ import annotations

import argparse
import json

from nfvcat.catalog import flavors
from nfvcat.commands import options


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("flavor", help="catalog flavors as CLI lines, HOT resources or host settings",
                       description=__doc__)
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    ls = actions.add_parser("list", help="the catalog flavors")
    options.add_format(ls, columns=True)
    ls.set_defaults(func=run_list)
    render = actions.add_parser("render", help="one flavor in another form")
    render.add_argument("name", help="entry directory (nfv-pinned-1g) or Nova name (nfv.pinned.1g)")
    render.add_argument("--as", dest="form", choices=("cli", "hot", "host"), default="cli")
    render.set_defaults(func=run_render)


LIST_COLUMNS = ("entry", "name", "vcpus", "ram", "disk", "extra_specs")


def run_list(args: argparse.Namespace) -> int:
    found = flavors.all_flavors()
    rows = [[f.entry, f.name, f.data.get("vcpus"), f.data.get("ram"), f.data.get("disk"), f.specs()] for f in found]
    if options.tabular(args):
        options.emit(args, LIST_COLUMNS, rows)
        return 0
    if args.format == "json":
        print(json.dumps([dict(zip(LIST_COLUMNS, row, strict=True)) for row in rows], indent=2))
        return 0
    for f in found:
        specs = f.specs()
        key = ", ".join(f"{k}={specs[k]}" for k in ("hw:cpu_policy", "hw:mem_page_size", "pci_passthrough:alias")
                        if k in specs)
        print(f"{f.entry:<20} {f.name:<22} {f.data.get('vcpus')} vCPU {f.data.get('ram')} MiB  {key}")
    return 0


def run_render(args: argparse.Namespace) -> int:
    f = flavors.find(args.name)
    print({"cli": flavors.as_cli, "hot": flavors.as_hot, "host": flavors.as_host}[args.form](f), end="")
    if args.form == "cli":
        print()
    return 0
