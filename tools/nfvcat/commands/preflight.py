"""``nfvcat preflight``: will each catalog entry run on this cloud? Per entry and environment: runs, does not run
or unknown, each reason named with the Nova, Neutron, Heat or Tacker rule behind it, read from the cloud's APIs
(admin shows more) and, with ``--host-access``, from its hosts; every entry is then planned with Nova's own
fitting on what was read. ``-f junit``: one test case per entry and environment, for a cloud's readiness in CI.
Exit 2 only when an entry named on the command line does not run."""

from __future__ import annotations

import argparse
import io
import json
from typing import Any

from nfvcat.commands import options
from nfvcat.core.errors import EXIT_FINDINGS, EXIT_OK

COLUMNS = ("entry", "version", "environment", "verdict", "reasons")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("preflight", help="will each catalog entry run on this cloud, and if not, why not",
                              description=__doc__)
    p.add_argument("entries", nargs="*", metavar="ENTRY",
                   help="Heat entries to judge (default: all); exit 2 when one of them does not run")
    options.add_cloud(p)
    options.add_timeout(p, None, "the cloud's answers")
    options.add_host_access(p)
    options.add_format(p, "junit", columns=True)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nfvcat import catalog
    from nfvcat.cloud import preflight
    from nfvcat.cloud.hostaccess import open_access, reader

    root = catalog.require_root()
    preflight.cases(root, args.entries)  # unknown names: a usage error before the cloud is asked anything
    access = open_access(args.host_access)
    conn = options.cloud_connection(args)
    cases, cloud = preflight.run(conn, root, args.entries or None, reader(access))
    if args.format == "json":
        print(json.dumps({"cloud": cloud, "cases": [c.as_dict() for c in cases]}, indent=2))
    elif args.format == "junit":
        print(junit(cases), end="")
    elif options.tabular(args):
        options.emit(args, COLUMNS, [[c.entry, c.version, c.environment, c.verdict,
                                      [f"{r.status}: {r.rule}: {r.detail}" for r in c.reasons]] for c in cases])
    else:
        print(text(cases, cloud), end="")
    named = set(args.entries or [])
    return EXIT_FINDINGS if any(c.entry in named and c.verdict == preflight.DOES_NOT_RUN for c in cases) else EXIT_OK


def text(cases: list[Any], cloud: dict[str, Any]) -> str:
    out = [f"cloud: Nova microversion {cloud['nova_microversion'] or 'unknown'}; availability zones "
           f"{cloud['availability_zones'] if cloud['availability_zones'] is not None else 'unknown'}; "
           f"{cloud['hosts'] if cloud['hosts'] is not None else 'unknown'} host(s)"
           + (f", estimated: {', '.join(cloud['estimated_hosts'])}" if cloud["estimated_hosts"] else "")
           + f"; Tacker VIMs: {cloud['tacker_vims']}"]
    for c in cases:
        out.append(f"{c.entry} {c.version} [{c.environment}]: {c.verdict.upper()}")
        for r in c.reasons:
            if r.status != "pass" or c.verdict == "runs":
                out.append(f"  {r.status}: {r.rule}: {r.detail}")
    return "\n".join(out) + "\n"


def junit(cases: list[Any]) -> str:
    """One test case per entry and environment: does not run is a failure, unknown is skipped."""
    from junitparser import Failure, Skipped, xunit2

    from nfvcat.campaign.reports import xml_text

    top = xunit2.JUnitXml(name="nfvcat preflight")
    suite = xunit2.TestSuite("preflight")
    for c in cases:
        case = xunit2.TestCase(xml_text(f"{c.entry} [{c.environment}]"), classname=xml_text(f"preflight.{c.entry}"))
        lines = xml_text("\n".join(f"{r.status}: {r.rule}: {r.detail}" for r in c.reasons))
        bad = [r for r in c.reasons if r.status == "fail"]
        if bad:
            result = Failure(xml_text(f"{bad[0].rule}: {bad[0].detail}"[:500]), "does not run")
            result.text = lines
            case.result = [result]
        elif c.verdict == "unknown":
            unknown = next(r for r in c.reasons if r.status == "unknown")
            case.result = [Skipped(xml_text(f"unknown: {unknown.rule}: {unknown.detail}"[:500]))]
            case.system_out = lines
        else:
            case.system_out = lines
        suite.add_testcase(case)
    top.add_testsuite(suite)
    top.update_statistics()
    out = io.BytesIO()
    top.write(out, pretty=True)
    return out.getvalue().decode("utf-8")
