"""``nfvcat image build|list``: the catalog's VNF images (images/NAME), built reproducibly."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from nfvcat.commands import options
from nfvcat.core.errors import EXIT_ENGINE, EXIT_OK
from nfvcat.packaging.images import build, mirror, obtain, recipe


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
    rn = sub.add_parser(
        "renew", help="renew the images whose lock Debian's mirror no longer serves: rebuild, new lock, bumps",
        description="For each image (default: all) whose lock Debian's mirror no longer serves (see `nfvcat image "
        "list`): a patch bump of the image entry (unless its version is unreleased), a build from what the mirror "
        "serves (~2-3 minutes, root) writing the new lock, and every catalog entry referencing the image follows: "
        "its image reference and Glance name nfvcat-NAME-VERSION (templates, examples, VNFD, README), a patch bump "
        "unless its version is unreleased, a CHANGELOG line naming the updated packages; checksums and VNFD "
        "identities as `nfvcat docs` makes them. `nfvcat versions` passes on the result: review and commit it.")
    rn.add_argument("names", nargs="*", metavar="NAME", help="image entries (default: all)")
    rn.add_argument("--force", action="store_true", help="renew even when the mirror still serves the lock")
    options.add_format(rn)
    rn.set_defaults(func=run_renew)
    ls = sub.add_parser("list", help="image entries, versions, locked sha256, whether Debian's mirror still serves "
                        "each lock (the packages it serves newer, security updates named) and what is cached",
                        description="Each image entry, its lock's sha256, whether the image cache holds the lock's "
                        "build or a local rebuild, and whether Debian's mirror still serves the lock: a build "
                        "installs exactly the locked versions. Drift lists every package the mirror serves newer: "
                        "a security update (the -security suite), a stable update (-updates) or a point release. "
                        "Exit 3 when the mirror could not be read (drift unknown).")
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


def run_renew(args: argparse.Namespace) -> int:
    from nfvcat import catalog
    from nfvcat.packaging.images import renew

    done = renew.renew(catalog.require_root(), list(args.names), _say, force=args.force)
    if args.format == "json":
        print(json.dumps([d.as_dict() for d in done], indent=2))
        return EXIT_OK
    for d in done:
        how = "cached build" if d.seconds is None else f"built in {d.seconds:.0f} s"
        print(f"{d.image} {d.old} -> {d.new}: sha256 {d.sha256} {d.size} bytes ({how})")
        for u in d.updates:
            print(f"  {u}")
        for e in d.entries:
            print(f"  {e}")
    if not done:
        print("nothing to renew: the mirror serves every lock")
    return EXIT_OK


def run_list(args: argparse.Namespace) -> int:
    rows = [obtain.describe(recipe.load(name)) for name in recipe.names()]
    unknown = [row for row in rows if row["mirror"] is not None and row["mirror"]["serves_lock"] is None]
    if args.format == "json":
        print(json.dumps(rows, indent=2))
        return EXIT_ENGINE if unknown else EXIT_OK
    for row in rows:
        cached = {"catalog": "  cached", "rebuild": f"  cached: local rebuild sha256 {row.get('rebuild_sha256')}",
                  None: ""}[row["source"]]
        print(f"{row['image']} {row['version']} sha256 {row['sha256'] or '(no lock: never built)'}{cached}")
        m = row["mirror"]
        if m is None:
            continue
        if m["serves_lock"] is None:
            print(f"  mirror: unknown ({m['error']})")
            continue
        if m["serves_lock"]:
            print("  mirror: serves the lock (a build reproduces its sha256)")
            continue
        kinds = [n["kind"] for n in m["newer"]]
        counts = ", ".join(f"{kinds.count(k)} {label}s" for k, label in mirror.KINDS.items() if k in kinds)
        print(f"  mirror: no longer serves the lock: {len(m['newer'])} packages newer ({counts})"
              + (f", {len(m['missing'])} locked versions gone" if m["missing"] else "")
              + f" (`nfvcat image renew {row['image']}`)")
        for n in m["newer"]:
            print(f"    {n['package']} {n['locked']} -> {n['newest']} ({mirror.KINDS[n['kind']]}, {n['suite']})")
        for gone in m["missing"]:
            if not any(n["package"] == gone["package"] for n in m["newer"]):
                print(f"    {gone['package']} {gone['locked']}: no longer served")
    if unknown:
        print("the mirror could not be read: drift unknown", file=sys.stderr)
    return EXIT_ENGINE if unknown else EXIT_OK
