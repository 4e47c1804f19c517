"""``nfvcat server start|stop|status|run``: the engine server that ``nfvcat validate`` and ``nfvcat lsp`` use.

The first ``nfvcat validate`` starts it (``start`` runs ``run`` in the background: ``run`` is the server itself,
in the foreground, until it exits); it exits by itself after NFVCAT_SERVER_IDLE seconds without a
request (default 900). Exit codes: 0 ok; 3 the server could not start (``status``: none runs).
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from nfvcat.commands import options
from nfvcat.core.errors import EXIT_ENGINE, EXIT_OK
from nfvcat.validation import client, server, wire


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("server", help="start, stop or show the engine server that keeps the engines warm",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", choices=("start", "stop", "status", "run"))
    p.add_argument("--idle", type=float, metavar="SECONDS",
                   help="start, run: exit after this long without a request (default $NFVCAT_SERVER_IDLE or 900)")
    p.add_argument("--site", metavar="FILE", help="start, run: the site profile validations will use")
    options.add_format(p, columns=True)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.action == "run":
        import os

        from nfvcat.commands import plan, validate

        running = client.status()
        if running is not None:
            _print(args, {"status": running}, f"an engine server already runs (pid {running['pid']})")
            return EXIT_OK
        site = os.path.abspath(args.site) if args.site else None
        os.chdir("/")
        idle = args.idle if args.idle is not None else server.idle_timeout()
        return server.Server(site, idle, validate.parse_command_line,
                             {"plan": (plan.parse_command_line, plan.serve)}).serve()
    if args.action == "stop":
        pid = client.stop()
        _print(args, {"stopped": pid}, f"stopped the engine server (pid {pid})" if pid else "no engine server runs")
        return EXIT_OK
    if args.action == "start":
        status = client.start(server.site_for(args.site), args.idle)
        if status is None:
            _print(args, {"status": None}, f"the engine server did not start; see {wire.server_dir()}/server.log")
            return EXIT_ENGINE
    else:
        status = client.status()
        if status is None:
            _print(args, {"status": None}, "no engine server runs")
            return EXIT_ENGINE
    workers = ", ".join(f"{name} {'pid ' + str(w['pid']) if w['pid'] else 'not loaded'}"
                        + (f" ({w['restarts']} restart(s))" if w["restarts"] else "")
                        for name, w in status["workers"].items())
    _print(args, {"status": status},
           f"engine server pid {status['pid']} on {status['socket']}, up {time.time() - status['started']:.0f} s, "
           f"{status['requests']} request(s), idle {status['idle_for']:.0f}/{status['idle_timeout']:.0f} s, "
           f"RSS {status['rss_kib'] / 1024:.0f} MiB\n  workers: {workers}")
    return EXIT_OK


def _print(args: argparse.Namespace, data: dict[str, Any], text: str) -> None:
    if options.tabular(args):  # one record, as the openstack CLI's show commands print one
        record = data["status"] if isinstance(data.get("status"), dict) else data
        options.emit(args, list(record), [list(record.values())], one=True)
    else:
        print(json.dumps(data, indent=2) if args.format == "json" else text)
