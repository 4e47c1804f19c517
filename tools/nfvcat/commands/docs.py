"""``nfvcat docs``: generate the parameter and output tables of every HOT entry's README, and the image
checksums of every entry (entry.yaml, a VNFD's sw_image_data) from the image locks.

``--check`` writes nothing and reports drift."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from nfvcat import catalog
from nfvcat.catalog import readme_tables, vnfd_ids
from nfvcat.core.errors import EXIT_FINDINGS, EXIT_OK, UserError
from nfvcat.packaging.images import refs


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "docs",
        help="generate README parameter/output tables of HOT entries",
        description="Write the parameter and output tables of each HOT entry into its README.md, between "
        f"the lines {readme_tables.BEGIN} and {readme_tables.END}. With --check, change nothing and exit "
        f"{EXIT_FINDINGS} naming every entry whose README drifted from its template. Also writes each image "
        "reference's checksum (entry.yaml images:, the VNFD's sw_image_data version, hash and size) from "
        "images/NAME/image.lock, and reports its drift with --check.",
    )
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="entry directories or catalog trees (default: the whole catalog)")
    parser.add_argument("--check", action="store_true", help="report drift, write nothing")
    parser.set_defaults(func=run)


def _entries(paths: list[str]) -> list[readme_tables.HotEntry]:
    if not paths:
        root = catalog.find_root()
        if root is None:
            raise UserError("not inside a catalog (no templates/ and flavors/ above the current directory); "
                            "give a PATH")
        paths = [str(root / d) for d in catalog.CATALOG_DIRS if (root / d).is_dir()]
    found: dict[str, readme_tables.HotEntry] = {}
    for path in paths:
        if not os.path.isdir(path):
            raise UserError(f"{path}: not a directory")
        for entry in readme_tables.find_hot_entries(path):
            found[entry.directory] = entry
    return [found[k] for k in sorted(found)]


def _report(status: str, where: str, message: str, *, drift: str, updated: str) -> int:
    """Print one generated file's outcome; 1 when it counts as a failure (drifted, or cannot be generated)."""
    if status == "drift":
        print(f"{where}: {drift}")
        return 1
    if status == "error":
        print(f"{where}: {message}", file=sys.stderr)
        return 1
    if status == "updated":
        print(updated)
    return 0


def run(args: argparse.Namespace) -> int:
    entries = _entries(list(args.paths))
    if not entries:
        raise UserError("no HOT entries (entry.yaml with kind: heat) found")
    failed = 0
    for entry in entries:
        outcome = readme_tables.process(entry, write=not args.check)
        shown = os.path.relpath(entry.readme)
        failed += _report(outcome.status, f"{entry.name}: {shown}", outcome.message,
                          drift=f"{outcome.message} (run `nfvcat docs` to regenerate)",
                          updated=f"{entry.name}: updated {shown}")
    root = catalog.find_root()
    generated: list[tuple[str, Any]] = []
    if root is not None and not args.paths:
        write = not args.check
        generated = [("image checksums", x) for x in refs.sync(root, write)]
        generated += [("descriptor_id, descriptor_version", x) for x in vnfd_ids.sync(root, write)]
    for what, item in generated:
        shown = os.path.relpath(item.path)
        failed += _report(item.status, shown, item.message,
                          drift=f"{what} differ from what the image locks and entry versions give (run `nfvcat docs`)",
                          updated=f"updated {shown} ({what})")
    if args.check and not failed:
        also = "" if args.paths else "; image checksums and VNFD identities too"
        print(f"{len(entries)} README(s) up to date{also}")
    return EXIT_FINDINGS if failed else EXIT_OK
