"""``nfvcat list``: what nfvcat deployed on the cloud (Heat stacks and Tacker VNF instances carrying its
``nfvcat:NAME@VERSION`` mark), each with its catalog entry, version and status, the newest version the catalog
offers (its releases and the working tree) and ``outdated`` where that one is newer (``nfvcat upgrade``), and
the images its servers boot from, each ``catalog`` (the catalog's image, its lock's sha256), ``rebuild (N
packages differ)`` (a local rebuild, made when Debian's mirror moved on) or ``unknown`` (no nfvcat provenance
in Glance), as the image's Glance properties say. ``-f json`` gives each image's provenance in full.
``-f table|value|csv|yaml`` and ``-c COLUMN`` print as the openstack CLI does."""

from __future__ import annotations

import argparse
import json

from nfvcat.commands import options
from nfvcat.core.errors import EXIT_OK


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("list", help="deployed chains and VNF instances, their entry version and whether "
                              "the catalog has a newer one", description=__doc__)
    options.add_cloud(p)
    options.add_timeout(p, None, "the cloud's answers")
    options.add_format(p, columns=True)
    p.set_defaults(func=run)


COLUMNS = ("via", "name", "entry", "version", "status", "newest", "outdated", "images")


def run(args: argparse.Namespace) -> int:
    from nfvcat import catalog
    from nfvcat.cloud.connect import cloud_errors
    from nfvcat.cloud.deployed import listing

    root = catalog.require_root()
    conn = options.cloud_connection(args)
    with cloud_errors("list"):
        rows = listing(conn, root)
    if options.tabular(args):  # -f table|value|csv|yaml, -c COLUMN: as `openstack stack list`
        text = args.format in ("table", "value", "csv")  # images: `NAME catalog, ...`; in json and yaml, data
        options.emit(args, COLUMNS, [[(r.images_text if text else r.images) if c == "images" else r.as_dict()[c]
                                      for c in COLUMNS] for r in rows])
        return EXIT_OK
    if args.format == "json":
        print(json.dumps([r.as_dict() for r in rows], indent=2))
        return EXIT_OK
    table = [COLUMNS] + [tuple("outdated" if c == "outdated" and r.outdated else "" if c == "outdated" else
                               (r.images_text if c == "images" else str(getattr(r, c) or "")) or "-"
                               for c in COLUMNS) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(COLUMNS))]
    for row in table:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
    if not rows:
        print("(nothing deployed by nfvcat on this cloud)")
    return EXIT_OK
