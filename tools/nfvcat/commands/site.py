"""``nfvcat site -o DIR``: the catalog as a static web site (index with search, a page per entry with its chain
diagram, the plan of each chain on the reference inventory, versions, images with their locks and SBOMs, flavors
and commands; a flavors page), built from the catalog and its release record. Open DIR/index.html in a browser:
no server, nothing loaded from outside. Debian's mirror is read only with --mirror."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from nfvcat.core.errors import EXIT_ENGINE, EXIT_OK


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
    from nfvcat.packaging.site import images
    from nfvcat.plan import document

    root, out = catalog.require_root(), Path(args.output)
    found = images.collect(root, out, check_mirror=args.mirror)
    written = site.build(root, out, plan=document.of_template, found_images=found)
    print(f"{out / 'index.html'}: {len(written)} file(s)")
    unknown = [i.name for i in found.values() if args.mirror and i.sha256 and i.mirror_moved is None]
    if unknown:
        print(f"the mirror could not be read: drift unknown for {', '.join(unknown)} (the pages say so)",
              file=sys.stderr)
        return EXIT_ENGINE
    return EXIT_OK
