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
    parser.add_argument("entry", help="the vnfd entry directory, e.g. vnfd/vnf-vrouter, or NAME@VERSION for a "
                                             "released version (e.g. vnf-vrouter@2.0.0)")
    parser.add_argument("-o", "--output", default=".", help="directory for NAME-VERSION.zip (default: .)")
    parser.add_argument("--with-image", action="store_true",
                        help="put the entry's images in the package (Files/images/, from `nfvcat image build`, "
                        "verified against their locks) with a SwImage artifact, so Tacker uploads them itself")
    options.add_sign(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nfvcat.packaging.csar import build

    entry_dir = Path(args.entry)
    if "@" in args.entry and not entry_dir.exists():  # NAME@VERSION: that release's files
        from nfvcat import catalog
        from nfvcat.catalog import history

        entry_dir = history.resolve(catalog.require_root(), args.entry, "vnfd").dir
    print(build(entry_dir, Path(args.output), with_image=args.with_image, signer=options.signer(args)))
    return 0
