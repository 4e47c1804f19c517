"""``nfvcat fetch-schema``: get cloud-init's schema (pinned Debian package, sha256-verified) now, instead
of on first use; tools/setup.sh runs it with ``--into`` the venv. Exit 0 when the schema is here, 3 when
it cannot be had (offline, bad hash), with one line saying how to provide it."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from nfvcat.commands import options
from nfvcat.core.errors import EXIT_ENGINE, EXIT_OK, UserError
from nfvcat.validation import cloudinit_schema


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fetch-schema", help="fetch cloud-init's schema (pinned Debian package) for offline use",
                       description=__doc__)
    p.add_argument("--into", metavar="DIR", type=Path,
                   help="unpack into DIR (default: the cache, ~/.cache/nfvcat/cloud-init/<version>)")
    options.add_format(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        found = (cloudinit_schema.fetch(args.into, quiet=args.format == "json") if args.into
                 else cloudinit_schema.find() or cloudinit_schema.fetch(quiet=args.format == "json"))
    except cloudinit_schema.SchemaUnavailable as exc:
        raise UserError(str(exc), EXIT_ENGINE) from None
    if args.format == "json":
        print(json.dumps({"path": str(found.path), "source": found.source, "version": cloudinit_schema.VERSION,
                          "sha256": cloudinit_schema.SHA256}, indent=2))
    else:
        print(f"{found.path} (from {found.source})")
    return EXIT_OK
