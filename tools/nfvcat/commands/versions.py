"""``nfvcat versions``: check entry versions against the release record (``RELEASES.yaml``)."""

from __future__ import annotations

import argparse
import json

from nfvcat import catalog
from nfvcat.catalog import versions
from nfvcat.commands import options
from nfvcat.core.errors import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, UserError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "versions",
        help="check that changed entries bumped their version",
        description="Compare each catalog entry with the release record RELEASES.yaml (written by `nfvcat "
        "release`, committed with the catalog, so this works in any clone). Fails (exit 2) when an entry's "
        "files changed without a version bump, when a parameter or output was removed, renamed or retyped "
        "(or one without a default added), a VNFD flavour or input removed, a flavor extra spec removed or "
        "changed, or a hook placeholder added without a major bump, when a major bump has no 'Upgrading to "
        "X.0.0' note in the entry's CHANGELOG.md, or when there is no record.",
    )
    parser.add_argument("--against", metavar="REF",
                        help="compare with the record as committed at this git ref (default: the working tree's)")
    parser.add_argument("--root", metavar="DIR", help="catalog root (default: found from the current directory)")
    options.add_format(parser, columns=True)
    parser.add_argument("-v", "--verbose", action="store_true", help="also list unchanged and new entries")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    root = args.root or catalog.find_root()
    if root is None:
        raise UserError("not inside a catalog; give --root")
    try:
        where, reports = versions.compare(str(root), args.against)
    except versions.VersionsError as exc:
        raise UserError(str(exc), EXIT_FINDINGS if exc.missing else EXIT_USAGE) from None
    failed = [r for r in reports if r.errors]
    if options.tabular(args):  # a row per entry: the fields of the JSON document's entries
        rows = [r.as_dict() for r in reports]
        options.emit(args, list(rows[0]) if rows else ["entry"], [list(row.values()) for row in rows])
        return EXIT_FINDINGS if failed else EXIT_OK
    if args.format == "json":
        print(json.dumps({"against": where, "ok": not failed, "entries": [r.as_dict() for r in reports]},
                         indent=2))
        return EXIT_FINDINGS if failed else EXIT_OK
    for r in reports:
        for err in r.errors:
            print(f"{r.entry}: error: {err}")
        if args.verbose or r.changed_files or r.notes:
            for note in r.notes:
                print(f"{r.entry}: {note}")
            if r.changed_files and not r.errors:
                print(f"{r.entry}: changed, {r.version_old} -> {r.version_new}")
            elif args.verbose and not r.changed_files and not r.notes:
                print(f"{r.entry}: unchanged ({r.version_new})")
    changed = sum(1 for r in reports if r.changed_files)
    print(f"against {where}: {len(reports)} entries, {changed} changed, {len(failed)} failing")
    return EXIT_FINDINGS if failed else EXIT_OK
