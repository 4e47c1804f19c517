"""``nfvcat validate [PATH ...]``: offline validation with Heat's, Nova's, tosca-parser's, tacker's and
cloud-init's own code, plus nfvcat's rules where none of them looks.

Exit codes: 0 no error (warnings allowed unless --strict); 1 usage error; 2 errors found (or warnings
with --strict); 3 an engine could not run, so the result is incomplete.
"""

from __future__ import annotations

import argparse
import os
import sys

from nfvcat import project
from nfvcat.commands import options
from nfvcat.errors import EXIT_ENGINE, EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, UserError
from nfvcat.validation import client
from nfvcat.validation import report as output
from nfvcat.validation.model import Options, Report


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("validate", help="validate templates, VNFDs, packages, flavors and day-0 data offline",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="files or directories (default: the whole catalog)")
    options.add_environments(p, "Heat environment file for the templates (repeatable)")
    options.add_parameters(p)
    options.add_format(p, "sarif")
    p.add_argument("--strict", action="store_true", help="warnings fail too")
    p.add_argument("--site", metavar="FILE", help="site profile: which physnet is SR-IOV, which OVS-DPDK")
    p.add_argument("--no-cache", action="store_true", help="run every engine, ignore cached results")
    p.add_argument("--no-server", action="store_true",
                   help="run the engines in this process's own workers, not in the engine server that the "
                        "first validate starts (also NFVCAT_NO_SERVER=1)")
    p.add_argument("--timings", action="store_true", help="print where the time went (stderr)")
    p.add_argument("--skip-unknown", action="store_true",
                   help="the paths are a list (a pre-commit hook's): skip files that are none of nfvcat's kinds")
    p.add_argument("--show-suppressed", action="store_true",
                   help="list the findings suppressed by templates, comments and .nfvcat.yaml")
    p.add_argument("--require-signed", action="store_true",
                   help="a VNF package without a signed manifest is an error (E4006)")
    p.add_argument("--stdin-filename", metavar="PATH",
                   help="validate standard input as the content of PATH, saved or not (an editor's buffer): "
                        "nested templates, get_file and examples are PATH's")
    p.add_argument("--trust-ca", metavar="FILE",
                   help="PEM CA certificate(s) a signed package's certificate must chain to (E4006)")
    p.set_defaults(func=run)


def exit_code(report: Report, strict: bool) -> int:
    if report.engine_failed:
        return EXIT_ENGINE
    failing = {"error", "warning"} if strict else {"error"}
    return EXIT_FINDINGS if any(f.severity in failing for f in report.findings) else EXIT_OK


def run(args: argparse.Namespace) -> int:
    for env in args.environment:
        try:
            with open(env, "rb"):
                pass
        except OSError as exc:
            raise UserError(f"environment file {env}: {exc.strerror}") from None
    overlays = {}
    if args.stdin_filename:
        if args.paths:
            raise UserError("--stdin-filename validates standard input as that file: give no PATH", EXIT_USAGE)
        overlays[os.path.abspath(args.stdin_filename)] = sys.stdin.read()
        args.paths = [args.stdin_filename]
    proj = project.load()
    options = Options(environments=args.environment, parameters=dict(args.parameter), site=args.site or proj.site,
                      use_cache=not args.no_cache, project=proj, skip_unknown=args.skip_unknown,
                      require_signed=args.require_signed, trust_ca=args.trust_ca, overlays=overlays)
    report = None
    if not (args.no_server or client.disabled()):
        report = client.validate(args.paths, options)
    if report is None:
        from nfvcat.validation.pipeline import validate_paths

        report = validate_paths(args.paths, options)
    if args.format == "json":
        print(output.as_json(report.findings, report.files, report.skipped, report.excluded, report.suppressed))
    elif args.format == "sarif":
        from nfvcat.rules import all_rules

        print(output.sarif(report.findings, all_rules(), report.suppressed))
    else:
        print(output.text(report.findings, report.files, len(report.skipped), len(report.excluded),
                          report.suppressed, args.show_suppressed))
    if args.timings:
        print(timings_text(report), file=sys.stderr)
    return exit_code(report, args.strict or proj.strict)


def timings_text(report: Report) -> str:
    lines = [f"timings: {report.files} file(s), {sum(report.jobs.values())} engine job(s), "
             f"{report.cache_hits} from cache"]
    for name, seconds in sorted(report.timings.items(), key=lambda kv: (kv[0] == "total", kv[0])):
        jobs = report.jobs.get(name.removeprefix("engine "), "")
        lines.append(f"  {name:<16} {seconds:7.3f} s" + (f"  ({jobs} job(s))" if jobs else ""))
    return "\n".join(lines)
