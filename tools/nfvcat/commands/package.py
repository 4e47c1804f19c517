"""``nfvcat package vnfd/NAME -o DIR``: build an ETSI SOL004 CSAR (a VNF package for Tacker) from an entry.

The package holds TOSCA-Metadata/TOSCA.meta, the entry's Definitions/ (plus the SOL001 type files the VNFD
imports by name), UserData/ for Tacker's LCM, BaseHOT/ generated from the catalog (the catalog HOT template
nested byte for byte, with the hook files it reads), Files/ChangeLog.txt, and a manifest with the SHA-256 of
every other file. The zip is deterministic: the same entry always gives the same bytes.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("package", help="build a VNF package (ETSI SOL004 CSAR) from a vnfd entry",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("entry", help="the vnfd entry directory, e.g. vnfd/vnf-vrouter")
    parser.add_argument("-o", "--output", default=".", help="directory for NAME-VERSION.zip (default: .)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nfvcat.packaging.csar import build

    print(build(Path(args.entry), Path(args.output)))
    return 0
