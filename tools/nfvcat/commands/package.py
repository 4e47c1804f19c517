"""``nfvcat package vnfd/NAME -o DIR``: build an ETSI SOL004 CSAR (a VNF package for Tacker) from an entry.

The package holds TOSCA-Metadata/TOSCA.meta, the entry's Definitions/ (plus the SOL001 type files the VNFD
imports by name), UserData/ for Tacker's LCM, BaseHOT/ generated from the catalog (the catalog HOT template
nested byte for byte, with the hook files it reads), Files/ChangeLog.txt, and a manifest with the SHA-256 of
every other file. The zip is deterministic: the same entry always gives the same bytes. With --with-image the
entry's images go in Files/images/; with --sign-key/--sign-cert the manifest is signed (CMS, SOL004).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from nfvcat.commands import options


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("package", help="build a VNF package (ETSI SOL004 CSAR) from a vnfd entry",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("entry", metavar="ENTRY", help="a vnfd entry: its name (vnf-vrouter), NAME@VERSION for a "
                        "released version (vnf-vrouter@2.0.1) or its directory (vnfd/vnf-vrouter)")
    parser.add_argument("-o", "--output", default=".", help="directory for NAME-VERSION.zip (default: .)")
    parser.add_argument("--with-image", action="store_true",
                        help="put the entry's images in the package (Files/images/, from `nfvcat image build`, "
                        "verified against their locks) with a SwImage artifact, so Tacker uploads them itself")
    options.add_sign(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nfvcat import catalog
    from nfvcat.catalog import history
    from nfvcat.packaging.csar import build

    root = catalog.require_root()
    entry = history.resolve(root, args.entry, "vnfd")  # NAME, NAME@VERSION (that release's files) or a directory
    print(build(entry.dir, Path(args.output), with_image=args.with_image, signer=options.signer(args),
                releasing=history.release_day(root, args.entry, "vnfd")))
    return 0
