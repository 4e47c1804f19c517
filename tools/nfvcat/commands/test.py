"""``nfvcat test TDF``: run the test campaign a Test Description File describes. Each test runs validate ->
plan -> onboard -> instantiate -> check -> data plane -> terminate (on a ``lab:`` target the cloud steps are
replaced by the lab's: render day-0, build the namespace chain, check it, tear it down); every step is a test
case with its verdict and duration. A failed step stops its test, not the campaign; cleanup always runs.
Reports: junit.xml, results.json (every trial of every RFC 2544 search; xtesting result records) and
report.html in the results directory.

Exit codes: 0 every test passed; 1 usage error (bad TDF, unknown --only); 2 a test failed; 3 a step could not
run (cloud, engine or lab tool unavailable) and none failed.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path

from nfvcat.commands import options
from nfvcat.core.errors import EXIT_ENGINE, EXIT_FINDINGS, EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("test", help="run a test campaign (Test Description File) and write its reports",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("tdf", metavar="TDF", help="Test Description File (kind: nfvcat/test-description)")
    p.add_argument("--only", action="append", default=[], metavar="TEST",
                   help="run only this test (repeatable; expectations on tests not run are unknown, so they fail)")
    p.add_argument("--keep", action="store_true", help="leave each chain up (namespaces, stacks) for debugging")
    p.add_argument("-o", "--results-dir", type=Path, metavar="DIR",
                   help="where the reports go (default: the TDF's general.results_dir)")
    options.add_format(p, help="what to print at the end (progress goes to stderr)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=run)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def run(args: argparse.Namespace) -> int:
    from nfvcat.campaign import reports, runner
    from nfvcat.catalog import tdf

    description = tdf.load(args.tdf)
    for sig in (signal.SIGTERM, signal.SIGHUP):  # unwind: every chain of the campaign is torn down
        signal.signal(sig, _interrupt)

    def say(text: str) -> None:
        if not args.quiet:
            print(text, file=sys.stderr, flush=True)

    camp = runner.run(description, set(args.only) or None, args.keep, say)
    paths = reports.write_all(camp, args.results_dir or description.general.results_dir)
    if args.format == "json":
        print(json.dumps(reports.as_json(camp), indent=2, sort_keys=True))
    else:
        for t in camp.tests:
            failed = t.failed_step()
            print(f"{t.status:5} {t.name:28} {t.stop - t.start:7.1f} s"
                  + (f"  {failed.name}: {failed.message}" if failed else ""))
        print(f"{camp.status}: {sum(t.status == 'PASS' for t in camp.tests)}/{len(camp.tests)} test(s) passed in "
              f"{camp.stop - camp.start:.0f} s; reports: {', '.join(str(p) for p in paths.values())}")
    statuses = {t.status for t in camp.tests}
    if "FAIL" in statuses:
        return EXIT_FINDINGS
    if "ERROR" in statuses:
        return EXIT_ENGINE
    return EXIT_OK
