"""``nfvcat image build|list``: the catalog's VNF images (images/NAME), built reproducibly."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from nfvcat.commands import options
from nfvcat.core.errors import EXIT_OK
from nfvcat.packaging.images import build, recipe


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("image", help="build the catalog's VNF images (images/NAME)")
    sub = parser.add_subparsers(dest="image_command", required=True)
    b = sub.add_parser(
        "build", help="build an image entry's qcow2 and write its lock",
        description="Build images/NAME reproducibly (mmdebstrap, no loop mounts; ~2-3 minutes of CPU, "
        "packages from Debian's mirrors). The lock images/NAME/image.lock records every package version, "
        "the sha256 and the size. Same lock, same sha256: a cached build is reused. When the mirror serves "
        "other versions than the lock of a released version, the new lock is written and the build fails "
        "(exit 2) asking for a version bump.")
    b.add_argument("names", nargs="*", metavar="NAME", help="image entries (default: all)")
    b.add_argument("-o", "--output", metavar="DIR", help="also copy each image to DIR/NAME-VERSION.qcow2")
    b.add_argument("--force", action="store_true", help="build even when the cache holds the lock's image")
    options.add_format(b)
    b.set_defaults(func=run_build)
    ls = sub.add_parser("list", help="image entries, versions, locked sha256 and whether a build is cached")
    options.add_format(ls)
    ls.set_defaults(func=run_list)


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run_build(args: argparse.Namespace) -> int:
    results: list[dict[str, Any]] = []
    for name in args.names or recipe.names():
        r = recipe.load(name)
        built = build.build(r, _say, force=args.force)
        path = build.export(built, Path(args.output)) if args.output else built.disk
        results.append({"image": r.name, "version": r.version, "sha256": built.lock.sha256,
                        "size": built.lock.size, "file": str(path), "lock": built.lock_status,
                        "seconds": built.seconds, "changes": built.changes})
    if args.format == "json":
        print(json.dumps(results, indent=2))
        return EXIT_OK
    for res in results:
        how = "cached" if res["seconds"] is None else f"built in {res['seconds']:.0f} s"
        print(f"{res['image']} {res['version']}: {res['file']} sha256 {res['sha256']} {res['size']} bytes "
              f"({how}; lock {res['lock']})")
        for c in res["changes"]:
            print(f"  {c}")
    return EXIT_OK


def run_list(args: argparse.Namespace) -> int:
    rows = []
    for name in recipe.names():
        r = recipe.load(name)
        lock = recipe.read_lock(r)
        hit = build.cached(r)
        rows.append({"image": name, "version": r.version, "sha256": lock.sha256 if lock else None,
                     "cached": str(hit.disk) if hit else None})
    if args.format == "json":
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    for row in rows:
        print(f"{row['image']} {row['version']} sha256 {row['sha256'] or '(no lock: never built)'}"
              f"{'  cached' if row['cached'] else ''}")
    return EXIT_OK
