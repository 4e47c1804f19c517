"""``nfvcat site -o DIR``: the catalog as a static web site (index with search, a page per entry with its chain
diagram, versions, images, flavors and commands; a flavors page), built from the catalog and its release record.
Open DIR/index.html in a browser: no server, nothing loaded from outside."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("site", help="build the catalog's static web site (entries, chain diagrams, versions)",
                              description=__doc__)
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="directory to write the site into")
    p.add_argument("--mirror", action="store_true",
                   help="ask Debian's mirror whether it has moved past each image lock (network; without it the "
                        "pages say the mirror was not checked)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nfvcat import catalog
    from nfvcat.packaging import site
    from nfvcat.plan import document

    written = site.build(catalog.require_root(), Path(args.output),
                         plan=document.of_template, check_mirror=args.mirror)
    print(f"{Path(args.output) / 'index.html'}: {len(written)} file(s)")
    return 0
