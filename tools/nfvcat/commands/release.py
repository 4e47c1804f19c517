"""``nfvcat release``: record the catalog's released versions (RELEASES.yaml) and tag them."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from nfvcat import catalog
from nfvcat.catalog import releases, versions
from nfvcat.commands import options
from nfvcat.core.errors import EXIT_FINDINGS, EXIT_OK, UserError
from nfvcat.packaging import release_artifacts
from nfvcat.packaging.images import refs


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "release",
        help="record every entry's released version, file digests and interface in RELEASES.yaml",
        description="Check the catalog against the last release record (as `nfvcat versions` does; refuses "
        "to release when that fails), then write RELEASES.yaml: every entry's version, the day it was "
        "released (today for a version the record did not hold), the sha256 of its files and its interface. "
        "Commit the record; run `nfvcat release` again on the commit holding it and it tags each entry version "
        "that has no tag yet (ENTRY/vVERSION, e.g. templates/heat/vnf-vrouter/v1.0.1).",
    )
    parser.add_argument("--root", metavar="DIR", help="catalog root (default: found from the current directory)")
    parser.add_argument("--no-tag", action="store_true", help="write the record only; make no git tag")
    parser.add_argument("-o", "--output", metavar="DIR",
                        help="also build the release's artefacts into DIR: every image (NAME-VERSION.qcow2, built "
                        "or from the cache of its lock) with its CycloneDX SBOM (.cdx.json), every VNF package, "
                        "the catalog site (site/index.html, as `nfvcat site` builds it) and SHA256SUMS")
    options.add_sign(parser)
    options.add_format(parser)
    parser.set_defaults(func=run)


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    root = Path(args.root) if args.root else catalog.find_root()
    if root is None:
        raise UserError("not inside a catalog; give --root")
    failed: list[versions.EntryReport] = []
    try:
        _, reports = versions.compare(str(root))
        failed = [r for r in reports if r.errors]
    except versions.VersionsError as exc:
        if not exc.missing:
            raise UserError(str(exc)) from None
    if failed:
        for r in failed:
            for err in r.errors:
                print(f"{r.entry}: error: {err}")
        print(f"not released: {len(failed)} entries fail `nfvcat versions`")
        return EXIT_FINDINGS
    from nfvcat.packaging.images import renew

    stale, known = renew.drifted(root)
    for line in known:  # released before the mirror moved: deployable (a local rebuild), renew when you will
        print(f"note: {line}", file=sys.stderr)
    if stale:
        for line in stale:
            print(f"error: {line}")
        print(f"not released: {len(stale)} new image versions whose locks the mirror no longer serves")
        return EXIT_FINDINGS
    artefacts: list[str] = []
    today = datetime.now(UTC).date().isoformat()  # the release date of every version this release records
    if args.output:  # first: a build may lock an unreleased image version, which the record then holds
        signer = options.signer(args)
        from nfvcat.plan import document

        artefacts = [str(p) for p in release_artifacts.build_all(root, Path(args.output), _say, signer, today,
                                                                  plan=document.of_template)]
    drift = refs.sync(root, write=False)
    if drift:
        print("not released: image checksums differ from the image locks in "
              + ", ".join(str(d.path.relative_to(root)) for d in drift) + " (run `nfvcat docs`)")
        return EXIT_FINDINGS
    dated: dict[Path, str] = {}
    try:
        dated = releases.date_entry_changelogs(root, releases.read_record(root), today)
        entries = releases.snapshot(root)
        path, changed, number = releases.write_record(root, entries, today)
        dated = {}  # recorded: the dated headings stay
        if changed:
            releases.date_tool_changelog(root, number, today)
        tags, why = ([], "--no-tag") if args.no_tag else releases.tag(root, entries)
    except (OSError, releases.RecordError) as exc:
        for changelog, text in dated.items():  # nothing half-applied: the headings as they were
            changelog.write_text(text, encoding="utf-8")
        raise UserError(str(exc)) from None
    if args.format == "json":
        print(json.dumps({"record": str(path), "release": number, "changed": changed, "entries": len(entries),
                          "tags": tags, "not_tagged": why, "artefacts": artefacts}, indent=2))
        return EXIT_OK
    for a in artefacts:
        print(f"wrote {a}")
    print(f"{path}: release {number}, {len(entries)} entries" + (" (written)" if changed else " (unchanged)"))
    for t in tags:
        print(f"tagged {t}")
    if why and not args.no_tag:
        print(why)
    return EXIT_OK
