"""``nfvcat plan``: where a chain's VNFs land on a host inventory (Nova's own NUMA, huge page and PCI
fitting), why a VNF does not fit, and ``--capacity``: how many copies fit and what runs out first."""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import sys
import time
from pathlib import Path
from typing import Any

from nfvcat.catalog import history
from nfvcat.commands import options
from nfvcat.core import yamlpos
from nfvcat.core.errors import EXIT_ENGINE, EXIT_FINDINGS, EXIT_OK, UserError
from nfvcat.validation import client


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("plan", help="plan VNF placement on a host inventory with Nova's fitting",
                              description=__doc__)
    _arguments(p)
    p.set_defaults(func=run)


def parse_command_line(argv: list[str]) -> dict[str, Any]:
    """``nfvcat plan ARGV...``'s call as plain data (what the engine server runs for the command line);
    SystemExit where the command would print usage, help or a usage error instead."""
    call = _call(_own_parser().parse_args(argv))
    if options.tabular(argparse.Namespace(**call)):  # cliff formats for the caller's terminal and CLIFF_* settings
        call["no_server"] = True
    if call.get("candidates_from"):  # the caller's clouds.yaml and credentials
        call["no_server"] = True
    return call


@functools.cache
def _own_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="nfvcat plan")
    _arguments(p)
    return p


def _call(args: argparse.Namespace) -> dict[str, Any]:
    return {k: v for k, v in vars(args).items() if k not in ("func", "command")}


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("request", nargs="?", help="placement request YAML, HOT template, or a catalog entry's name or "
                                              "directory (chain-vrouter)")
    p.add_argument("--flavor", help="place this catalog flavor (name or flavor.yaml path) instead of a request")
    p.add_argument("--count", type=int, default=1, help="instances of --flavor (default 1)")
    p.add_argument("--port", action="append", default=[], metavar="VNIC[:PHYSNET]",
                   help="a port of the --flavor VNF, e.g. direct:sriov1 (repeatable)")
    p.add_argument("--inventory", help="host inventory (default: the reference inventory)")
    p.add_argument("--nova-conf", metavar="FILE",
                   help="the cloud's nova.conf: its [filter_scheduler] enabled_filters and [pci] alias replace the "
                        "inventory's, its weighers and pci_in_placement apply (e.g. .devcloud/etc/nova/nova.conf)")
    p.add_argument("--candidates-from", metavar="CLOUD",
                   help="with PCI devices tracked in Placement (nova.conf's pci_in_placement): ask this cloud's "
                        "Placement (clouds.yaml name, admin) the order of its allocation candidates, which decides "
                        "a device's NUMA cell; offline, the cells Nova may choose instead are listed")
    p.add_argument("--flavors", action="append", metavar="DIR", help="catalog flavors directory")
    options.add_environments(p, "Heat environment file whose parameters the HOT template gets, or the name of one "
                                "of the entry's examples (e.g. sriov); repeatable")
    options.add_parameters(p, "HOT parameter value (repeatable)")
    p.add_argument("--strategy", choices=("spread", "pack"), default="spread", help="host weighing")
    p.add_argument("--capacity", action="store_true", help="how many copies fit, and what runs out first")
    p.add_argument("--max-copies", type=int, default=100000, help="stop --capacity at this many copies")
    options.add_format(p, columns=True)
    options.add_no_server(p, "plan in this process, not in the engine server (also NFVCAT_NO_SERVER=1)")


def _chain(args: argparse.Namespace) -> Any:
    from nfvcat.plan import hot_reader, request

    dirs = args.flavors
    if args.flavor and args.request:
        raise UserError("give either a request/template or --flavor, not both")
    if args.flavor:
        if args.count < 1:
            raise UserError("--count must be at least 1")
        flavor = request.find_flavor(args.flavor, dirs)
        ports = [request.port_from_data(p, "--port") for p in args.port]
        return request.Chain(source=f"flavor {flavor.name}",
                             vnfs=[request.Vnf(name=flavor.name, flavor=flavor, ports=ports, count=args.count)])
    if not args.request:
        raise UserError("nothing to plan: give a placement request, a HOT template or --flavor")
    found = history.template(args.request)  # a file, an entry by name (chain-vrouter) or NAME@VERSION
    path = args.request if found.path == Path(args.request) else str(found.path)  # a file: as given
    try:
        with open(path, encoding="utf-8") as f:
            data = yamlpos.load(f.read(yamlpos.MAX_BYTES + 1))[0]
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except yamlpos.DocumentError as exc:
        raise UserError(f"{path}:{exc.line}:{exc.column}: {exc.message}") from None
    if isinstance(data, dict) and "heat_template_version" in data:  # -e: files, or the entry's examples by name
        return hot_reader.from_template(path, data, found.environments(args.environment), dict(args.parameter), dirs)
    return request.load(path, dirs)


def run(args: argparse.Namespace) -> int:
    """Through the engine server (started when none runs: Nova stays imported there), else in-process (also
    the table, value, csv and yaml formats: cliff formats them for this process's terminal and settings)."""
    if not (args.no_server or client.disabled() or options.tabular(args) or args.candidates_from):
        answer = client.run(_call(args), "plan")
        if answer is not None:
            code, out, err = answer
            sys.stdout.write(out)
            sys.stderr.write(err)
            return code
    return execute(args)


def serve(call: dict[str, Any]) -> tuple[int, str, str]:
    """The engine server's run of a call: (exit code, stdout, stderr) as ``execute`` prints them."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = execute(argparse.Namespace(**call))
    return code, out.getvalue(), err.getvalue()


def execute(args: argparse.Namespace) -> int:
    from nfvcat.catalog import inventory

    inv = inventory.load(args.inventory)
    weighing, in_placement = None, False
    if args.nova_conf:
        from nfvcat.plan import novaconf, weigher

        filters, aliases = novaconf.read(args.nova_conf)
        weighing = novaconf.weighing(args.nova_conf, weigher.OPTIONS)
        in_placement = novaconf.pci_in_placement(args.nova_conf)
        inv.enabled_filters = filters if filters is not None else inv.enabled_filters
        inv.pci_alias = aliases if aliases is not None else inv.pci_alias
    chain = _chain(args)
    from nfvcat.plan import capacity, output
    from nfvcat.plan.filters import NEEDS_HOST_ACCESS
    from nfvcat.plan.planner import Planner

    started = time.perf_counter()
    placement = None
    if in_placement:
        from nfvcat.plan import pciplacement

        placement = pciplacement.Candidates()
    elif args.candidates_from:
        raise UserError("--candidates-from: the cloud's nova.conf (--nova-conf) does not track PCI devices in "
                        "Placement ([filter_scheduler] pci_in_placement): Nova's own fit decides the cells")
    planner = Planner(inv, args.strategy, weighing=weighing, placement=placement)
    if placement is not None and args.candidates_from:
        from nfvcat.cloud import connect

        conn = connect.connect(args.candidates_from)
        planner.placement = pciplacement.ask(
            lambda path: connect.call(conn.placement, "GET", path, "Placement",
                                      microversion=pciplacement.MICROVERSION),
            [planner.demand(v) for v in chain.vnfs], planner.hosts)
    meta = output.meta(inv.path, len(inv.hosts), chain.source, args.strategy, inv.enabled_filters)
    if args.capacity:
        if args.max_copies < 1:
            raise UserError("--max-copies must be at least 1")
        res = capacity.run(planner, chain, args.max_copies)
        meta["seconds"] = round(time.perf_counter() - started, 3)
        if options.tabular(args):  # a row per resource: what the copies use of it
            options.emit(args, ("resource", "used", "total"),
                         [[name, u["used"], u["total"]] for name, u in res.usage.items()])
        else:
            print(output.capacity_json(res, meta) if args.format == "json" else output.capacity_text(res, meta))
        return EXIT_OK if res.copies > 0 else EXIT_FINDINGS
    result = planner.place_chain(chain)
    meta["seconds"] = round(time.perf_counter() - started, 3)
    meta["exact_fits"] = planner.exact_fits
    if options.tabular(args):  # a row per instance: the JSON document's placements, then what did not fit
        options.emit(args, PLAN_COLUMNS, [[*(getattr(p, c) for c in PLAN_COLUMNS[:-1]), None]
                                          for p in result.placements]
                     + [[f.vnf, f.instance, None, None, [], [], [], None, None, [], output.grouped(f)[0]["message"]]
                        for f in result.failures])
    else:
        print(output.plan_json(result, meta) if args.format == "json" else output.plan_text(result, meta))
    if any(r.code == NEEDS_HOST_ACCESS for f in result.failures for _, r in f.reasons):
        return EXIT_ENGINE  # placed nowhere it can see, but a host it cannot see may take it: unknown
    return EXIT_FINDINGS if result.failures else EXIT_OK


PLAN_COLUMNS = ("vnf", "instance", "host", "role", "numa_cells", "pinned_cpus", "emulator_cpus", "page_size",
                "cpu_policy", "pci_devices", "does_not_fit")
