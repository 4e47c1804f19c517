"""``nfvcat watch NAME``: the closed loop on a deployed chain. The health probes its catalog entry declares
(entry.yaml ``health``: the ready line, a probe through the chain, an ACL probe) run every ``interval`` seconds;
a VNF that fails them ``failures`` rounds in a row is healed through its lifecycle manager (``--via heat``: its
server marked unhealthy and the stack updated; ``--via tacker``: heal of its VNFC), then ``check`` runs on the new
placement. Each event is printed with its time as it happens (``--format json``: one JSON object a line); at the
end, per repair, the time to detect (from the last passing round) and the time to repair (from detection until
every probe passes again).

No heal storm: after a heal the VNF is not healed again for ``backoff`` seconds (doubled at each heal within the
hour), and never more than ``max_heals_per_hour`` times an hour (``held`` events say so).

The chain and ACL probes need a traffic flow through the chain (``--traffic NAME`` or ``--traffic-command CMD``,
as ``upgrade``); without one they are "unknown", which never heals and never passes.

``--export prometheus|tacker`` prints the same probes for the tools operators run instead, and watches nothing.

Exit codes: 0 every round ended with every probe passing (or interrupted); 2 a probe still failed at the end or a
check after a heal failed; 1 bad usage (no health probes declared); 3 the cloud could not be asked.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from nfvcat.commands import options
from nfvcat.core.errors import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, UserError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("watch", help="run a deployed chain's health probes, heal a failing VNF, check after",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("stack", metavar="NAME", help="the stack (heat) or the VNF instance (tacker)")
    options.add_via(p, "heat", "tacker")
    p.add_argument("--rounds", type=int, default=None, metavar="N", help="stop after N rounds (default: run until "
                   "interrupted)")
    p.add_argument("--interval", type=float, default=None, metavar="SECONDS",
                   help="seconds between rounds (default: the entry's health.interval)")
    p.add_argument("--export", choices=("prometheus", "tacker"), help="print the probes as Prometheus alert rules "
                   "or Tacker's auto-heal configuration, and watch nothing")
    p.add_argument("--metrics", metavar="FILE", help="after each round, write the probes' results there in "
                   "Prometheus' text format (node-exporter's textfile collector; what --export prometheus alerts on)")
    options.add_timeout(p, 900, "each heal")
    options.add_traffic(p)
    options.add_checked(p, skippable=False)
    p.set_defaults(func=run)


def _entry_health(root: Any, entry: str, version: str, kind: str, say: Any) -> Any:
    """The health the deployed version of the entry declares; the catalog's current entry's when that release
    declared none (said so)."""
    from nfvcat.catalog import entries, history
    from nfvcat.cloud import watch

    try:
        found = history.resolve(root, f"{entry}@{version}", kind)
    except UserError:  # a version not released yet: the working tree's, when it is that version
        found = entries.find(root, entry, kind)
        if str(found.meta.get("version")) != version:
            raise
    if "health" not in found.meta:
        now = entries.find(root, entry, kind)
        say(f"{entry}@{version} declares no health probes; using those of the catalog's {entry} "
            f"{now.meta.get('version')}")
        found = now
    return watch.health(found.meta, f"{entry}@{found.meta.get('version')}")


def run(args: argparse.Namespace) -> int:
    from nfvcat import catalog
    from nfvcat.cloud import flows, outage, watch
    from nfvcat.cloud.connect import cloud_errors

    root = catalog.require_root()
    conn = options.cloud_connection(args)
    say = options.progress(args)
    with cloud_errors(f"watch {args.stack}"):
        target = _target(args, conn, say)
        h = _entry_health(root, target["entry"], target["version"], target["kind"], say)
        if args.interval is not None:
            h = watch.Health(args.interval, h.probes, h.failures, h.backoff, h.max_heals_per_hour)
        if args.export:
            print(watch.export(h, args.export, target))
            return EXIT_OK
        inv, access = options.open_checked(args)
        flow = flows.open_flow(args.traffic, args.traffic_command, conn, target["stack"],
                               outage.check_rate(args.traffic_rate), say)
        events: list[Any] = []

        def log(ev: Any) -> None:
            events.append(ev)
            print(ev.line(args.format), flush=True)

        try:
            if flow is not None:
                flow.start()
            probes = watch.StackProbes(conn, target["servers"], flow)
            w = watch.Watcher(h, probes, target["heal"], lambda vnf: _check(conn, target["stack"], inv, access),
                              log, on_results=_metrics_writer(args.metrics, target["stack"]))
            try:
                w.run(args.rounds)
            except KeyboardInterrupt:
                say("interrupted")
        finally:
            if flow is not None:
                flow.close()
    summary = {"repairs": w.figures, "heals": sum(e.kind == "heal" for e in events),
               "held": sum(e.kind == "held" for e in events)}
    if args.format == "json":
        print(json.dumps({"summary": summary}))
    else:
        for r in w.figures:
            print(f"{r['vnf']}: detected {r['time_to_detect_s']} s after the last passing round, repaired "
                  f"{r['time_to_repair_s']} s after detection ({r['heals']} heal(s))")
    failing = any(st.detected is not None for st in w.vnfs.values())
    bad_check = any(e.kind == "check" and not e.data.get("ok") for e in events)
    return EXIT_FINDINGS if failing or bad_check else EXIT_OK


def _metrics_writer(path: str | None, stack: str) -> Any:
    if not path:
        return None
    import os
    from pathlib import Path

    from nfvcat.cloud import watch

    def write(results: list[Any]) -> None:
        tmp = Path(f"{path}.tmp")
        tmp.write_text(watch.metrics_text(stack, results))
        os.replace(tmp, path)  # the collector never reads half a file
    return write


def _check(conn: Any, stack: str, inv: Any, access: Any) -> tuple[bool, str]:
    from nfvcat.cloud.check import check_stack
    from nfvcat.cloud.verdicts import passed

    verdicts = check_stack(conn, stack, inv, access)
    bad = [v for v in verdicts if v.status != "pass"]
    return passed(verdicts), (f"{len(verdicts)} check(s) pass" if not bad else
                              f"{len(bad)} of {len(verdicts)} not passed, first: {bad[0].check} {bad[0].status} "
                              f"{bad[0].detail}")


def _target(args: argparse.Namespace, conn: Any, say: Any) -> dict[str, Any]:
    """What the watcher works on: the stack, the entry and version deployed, each VNF's server, its heal."""
    from nfvcat.cloud import heat_heal, tacker_lcm
    from nfvcat.cloud.stacks import Stacks, servers_of

    if args.via == "heat":
        from nfvcat.cloud.upgrade import deployed_stack

        stacks = Stacks(conn, say)
        _, entry, version = deployed_stack(stacks, args.stack)
        return {"stack": args.stack, "entry": entry, "version": version, "kind": "heat", "vnf_instance": None,
                "servers": lambda: dict(servers_of(conn, args.stack)),
                "heal": lambda vnf: heat_heal.heal(conn, stacks, args.stack, vnf, "nfvcat watch: probes failed",
                                                   args.timeout)}
    from nfvcat.cloud.tacker_upgrade import deployed_entry

    tk = tacker_lcm.Tacker(conn, say)
    inst = tacker_lcm.instantiated(tk, args.stack)
    entry, version = deployed_entry(inst)

    def vnfcs() -> dict[str, tuple[str, str]]:  # VDU -> (vnfcInstanceId, server)
        s = tacker_lcm.summary(tacker_lcm.instantiated(tk, args.stack))
        return {str(v["vduId"]): (str(v["vnfcInstanceId"]), str(v["server"])) for v in s["vnfcs"]}

    def heal(vdu: str) -> dict[str, Any]:
        found = vnfcs().get(vdu)
        if found is None:
            raise UserError(f"{args.stack}: no VNFC of VDU {vdu}", EXIT_USAGE)
        return dict(tacker_lcm.heal(tk, args.stack, found[0], args.timeout)["healed"])

    return {"stack": tacker_lcm.stack_name(inst), "entry": entry, "version": version, "kind": "vnfd",
            "vnf_instance": inst["id"], "vnfc_ids": lambda: {vdu: v[0] for vdu, v in vnfcs().items()},
            "servers": lambda: {vdu: v[1] for vdu, v in vnfcs().items()}, "heal": heal}
