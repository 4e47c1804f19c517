"""``nfvcat day0 render|configdrive VNF``: the day-0 data a Heat deployment of a catalog VNF delivers
(user data from the template's own str_replace, network_data.json, meta_data.json), and a config drive
(ISO, label config-2) like the one Nova builds.

``get_attr`` values come from ``-P RESOURCE.ATTR=VALUE`` (e.g. ``-P wan_port.fixed_ips.0.ip_address=10.0.0.1``);
MAC addresses default to deterministic fa:16:3e:.. addresses; ``-P PORT.cidr=`` and ``-P PORT.gateway=`` set a
port's subnet in network_data.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from nfvcat.commands import options
from nfvcat.core.errors import EXIT_OK

if TYPE_CHECKING:
    from nfvcat.day0.render import Day0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("day0", help="render a VNF's day-0 data and config drive as a Heat deployment delivers them",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("vnf", metavar="VNF", help="catalog VNF (vnf-ipsec-gw, ipsec-gw), its directory or template")
    options.add_environments(common)
    options.add_parameters(common, "template parameter, or RESOURCE.ATTR=VALUE for a get_attr (repeatable)")
    common.add_argument("--server", help="the OS::Nova::Server resource (when the template has several)")
    common.add_argument("--add-cloud-config", action="append", default=[], type=Path, metavar="FILE",
                        help="a cloud-config merged after the VNF's (user data becomes a MIME multi-part; lists "
                        "appended, the VNF's keys kept); repeatable")
    r = actions.add_parser("render", parents=[common], help="print the user data, or write all files with -o")
    r.add_argument("-o", "--output-dir", type=Path, metavar="DIR",
                   help="write user_data, network_data.json and meta_data.json into DIR")
    r.add_argument("--what", choices=("user_data", "network_data", "meta_data"), default="user_data",
                   help="what to print without -o (default user_data)")
    r.set_defaults(func=run_render)
    c = actions.add_parser("configdrive", parents=[common], help="build a config-2 ISO like Nova's")
    c.add_argument("-o", "--output", type=Path, required=True, metavar="ISO")
    c.set_defaults(func=run_configdrive)


def _render(args: argparse.Namespace) -> Day0:
    from nfvcat.day0.render import render
    from nfvcat.day0.userdata import read_cloud_config

    added = [(p.name, read_cloud_config(p)) for p in args.add_cloud_config]
    day0 = render(args.vnf, args.environment, dict(args.parameter), args.server)
    day0.added_cloud_configs = added
    return day0


def run_render(args: argparse.Namespace) -> int:
    from nfvcat.day0.configdrive import populate

    day0 = _render(args)
    if args.output_dir:
        latest = populate(day0, args.output_dir)
        print(latest)
    elif args.what == "user_data":
        sys.stdout.write(day0.delivered_user_data())
    else:
        data = day0.network_data() if args.what == "network_data" else day0.meta_data()
        print(json.dumps(data, indent=2, sort_keys=True))
    return EXIT_OK


def run_configdrive(args: argparse.Namespace) -> int:
    from nfvcat.day0.configdrive import build_iso

    print(build_iso(_render(args), args.output))
    return EXIT_OK
