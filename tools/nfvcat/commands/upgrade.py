"""``nfvcat upgrade NAME [--to VERSION]``: move a deployed stack to another version of its catalog entry (default:
the newest the catalog offers), after a preview that always comes first.

The preview is Heat's own (the update's dry run, nested stacks included): resources replaced, updated, added,
deleted and unchanged, every server the update deletes or replaces named (that is downtime); then the interface
change from the release record (parameters and outputs added, removed, changed) and the entry's CHANGELOG
from the deployed version to the target ("Upgrading to X" notes included).

Version rules: a major bump is refused unless every removed or renamed parameter is mapped (``--map OLD=NEW``
carries OLD's value to NEW, ``--map OLD=`` drops it) and every new parameter without a default is given (``-P``);
a minor or patch bump goes ahead after the preview. ``--dry-run`` stops after the preview; ``--yes`` skips the
question. The update keeps the stack's parameters (secrets included), reports each resource's progress, and on
failure Heat rolls it back; the failed resource and Heat's reason are shown. Then ``check`` runs and the new
version is the stack's mark (``nfvcat list``). An upgrade interrupted anywhere (Ctrl-C, killed, heat-engine
restarted) is finished by running the same command again.

``--rolling``: the members of each server group the update takes down (the vRouter HA pair) go one at a time
through Heat's pre-update hooks: the VRRP backups first; before a member is touched another holds the master role
(read from the members' consoles; a master hands it over first: Nova stops it cleanly); each must announce its role
again, and anti-affinity hold, before the next (``nfvcat.cloud.rolling``). Unknown roles refuse it before anything
changes, unless ``--accept-unknown-roles``.

``--via tacker``: NAME is a VNF instance; Tacker's v2 change_vnfpkg (RollingUpdate of every VDU) moves it to the
target version's VNF package, onboarded first beside the one it runs (and the images it names before it); then its
mark, then ``check``. The preview names the VNFCs the rolling update replaces and the CHANGELOG; a BaseHOT that
drops a resource of the running one is refused (Tacker merges templates). ``--map``, ``-P`` and ``-e`` are Heat's
only.

Exit codes: 0 upgraded (or already there) and checked; 1 refused or bad usage; 2 the update failed (rolled back)
or a check failed; 3 the cloud could not be asked.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from nfvcat.commands import options
from nfvcat.core.errors import EXIT_OK, EXIT_USAGE, UserError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("upgrade", help="upgrade a deployed stack to another catalog version of its entry "
                              "(preview first)", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("stack", metavar="NAME", help="the stack, or with --via tacker the VNF instance (as `nfvcat "
                                                "list` shows it)")
    options.add_via(p, "heat", "tacker")
    p.add_argument("--to", metavar="VERSION", help="target version: VERSION, or the entry as NAME@VERSION, NAME (the "
                   "working tree's) or its directory (default: the newest the catalog offers)")
    p.add_argument("--dry-run", action="store_true", help="print the preview and stop (the target version's images "
                   "are put on the cloud first, as for the update: Heat's preview validates them)")
    p.add_argument("--yes", action="store_true", help="do not ask before updating")
    p.add_argument("--accept-loss", action="store_true", help="go ahead although the preview names a port "
                   "replaced (MAC and IP change), a volume deleted or a server group membership lost")
    p.add_argument("--rolling", action="store_true", help="upgrade the members of each server group (a VRRP pair) one "
                   "at a time: the backups first; before a member is touched another holds the VRRP master role (a "
                   "master hands it over: Nova stops it cleanly); each must rejoin, and anti-affinity hold, before "
                   "the next (nfvcat.cloud.rolling)")
    p.add_argument("--accept-unknown-roles", action="store_true", help="with --rolling: go ahead where a member's "
                   "VRRP role is unknown (its console shows no NFVCAT-VRRP line: an older day-0, or a hypervisor that "
                   "runs no guest); one member at a time and the placement checks still apply")
    p.add_argument("--map", action="append", default=[], type=options.parameter, metavar="OLD=NEW",
                   help="carry removed/renamed parameter OLD's value to NEW (OLD= drops it); repeatable")
    options.add_stack_change(
        p, environments="environment file, or the name of one of the target entry's examples",
        waited="the stack update",
        wait=("--stall", 600, "an update in progress with no new event for this long is taken as lost "
              "(heat-engine restarted) and sent again (default 600)"))
    options.add_traffic(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.accept_unknown_roles and not args.rolling:
        raise UserError("--accept-unknown-roles goes with --rolling", EXIT_USAGE)
    if args.via == "tacker":
        return _via_tacker(args)
    from nfvcat import catalog
    from nfvcat.cloud import release_images, upgrade
    from nfvcat.cloud.check import check_stack
    from nfvcat.cloud.connect import cloud_errors
    from nfvcat.cloud.stacks import Stacks

    root = catalog.require_root()
    conn = options.cloud_connection(args)
    say = options.progress(args)
    stacks = Stacks(conn, say)
    maps = dict(args.map)
    with cloud_errors(f"upgrade {args.stack}"):
        lost = upgrade.resume(stacks, args.stack, args.timeout, args.stall)
        image_dir, overrides = options.image_overrides(args)
        plan, b, params, clear = upgrade.prepare(
            stacks, root, args.stack, args.to, args.environment, dict(args.parameter), maps,
            images=lambda meta, skip: release_images.ensure(conn, root, meta, image_dir, overrides, say, skip=skip))
        why = upgrade.refusal(plan, args.accept_loss)
        if args.format == "text":
            print(text(plan))
        if why or args.dry_run:
            if args.format == "json":
                print(json.dumps({"plan": plan.as_dict(), "refused": why, "upgraded": False}, indent=2))
            if why:
                raise UserError(why, EXIT_USAGE)
            return EXIT_OK
        if not args.yes and not confirm(plan):
            raise UserError("not confirmed (--yes skips the question)", EXIT_USAGE)
        steps: list[Any] = []

        def update() -> str:
            if not args.rolling:
                return upgrade.apply(stacks, plan, b, params, clear, args.timeout, args.stall, lost)
            from nfvcat.cloud import rolling_heat

            status, done = rolling_heat.apply(conn, stacks, plan, b, params, clear, args.timeout, args.stall,
                                              args.accept_unknown_roles)
            steps.extend(done)
            return status

        status, outage = options.measured(
            args, conn, args.stack, f"upgrade {args.stack} {plan.entry} {plan.current} -> {plan.target}"
            + (" (rolling)" if args.rolling else ""), update, set(plan.servers_down))
        say(f"{args.stack}: {status}, {plan.entry}@{plan.target}")
        verdicts = [] if args.no_check else check_stack(conn, args.stack, *options.open_checked(args))
    return options.report_stack(
        args, args.stack, verdicts, outage,
        {"plan": plan.as_dict(), "refused": None, "upgraded": True, "status": status,
         "rolling": [s.as_dict() for s in steps] if args.rolling else None},
        [f"rolling: {s.member}: roles before {s.roles_before}{' (handed over)' if s.handover else ''}; upgraded in "
         f"{s.upgraded_s:.0f} s, rejoined in {s.rejoined_s:.0f} s; placement {'; '.join(s.placement) or 'holds'}"
         for s in steps])


def _via_tacker(args: argparse.Namespace) -> int:
    from nfvcat import catalog
    from nfvcat.cloud import release_images, tacker_lcm, tacker_upgrade
    from nfvcat.cloud.connect import cloud_errors

    heat_only = [o for o, given in (("--map", args.map), ("-P", args.parameter), ("-e", args.environment)) if given]
    if heat_only:
        raise UserError(f"{', '.join(heat_only)}: Heat upgrades only (a VNF package carries its parameters)",
                        EXIT_USAGE)
    root = catalog.require_root()
    conn = options.cloud_connection(args)
    say = options.progress(args)
    tk = tacker_lcm.Tacker(conn, say)
    plan = tacker_upgrade.preview(tk, root, args.stack, args.to)
    if args.format == "text":
        print(tacker_upgrade.preview_text(plan))
    if args.dry_run:
        if args.format == "json":
            print(json.dumps({"plan": plan, "upgraded": False}, indent=2))
        return EXIT_OK
    if not args.yes and not confirm(plan):
        raise UserError("not confirmed (--yes skips the question)", EXIT_USAGE)

    image_dir, overrides = options.image_overrides(args)

    def onboard(entry: Any, vnfd_id: str) -> None:  # the target's images, then its package, before change_vnfpkg
        with cloud_errors(f"upgrade {args.stack}"):
            release_images.ensure_vnf(conn, root, entry, vnfd_id, image_dir, overrides, say)

    inst = tacker_lcm.summary(tacker_lcm.instantiated(tk, args.stack))
    vnf, outage = options.measured(  # a rolling update: every VNFC's server is replaced
        args, conn, inst["stack"], f"change_vnfpkg {args.stack} {plan['from']} -> {plan['to']}",
        lambda: tacker_upgrade.upgrade(tk, root, args.stack, args.to, args.timeout, onboard),
        {v["server"] for v in inst["vnfcs"] if v["server"]})
    say(f"{args.stack}: {vnf['upgrade']['entry']}@{vnf['upgrade']['to']} (vnfdId {vnf['upgrade']['vnfdId']})")
    return options.report_checked(args, conn, vnf, outage)


def confirm(plan: Any) -> bool:
    if not sys.stdin.isatty():
        raise UserError("asks before updating, and standard input is no terminal: pass --yes", EXIT_USAGE)
    return input("Update now? [y/N] ").strip().lower() in ("y", "yes")


def text(p: Any) -> str:
    """The plan for people: the preview, the servers that go down, the interface change, the CHANGELOG."""
    from nfvcat.cloud.upgrade import KINDS

    out = [f"{p.stack}: {p.entry} {p.current} -> {p.target} ({p.bump}), stack {p.status}",
           "Heat's update preview:"]
    for kind in KINDS:
        items = p.changes.get(kind) or []
        if kind == "unchanged":
            out.append(f"  unchanged  {len(items)} resource(s)")
            continue
        for r in items:
            where = f"{r['parent']}/" if r["parent"] else ""
            out.append(f"  {kind:9}  {where}{r['name']} ({r['type']})")
    out.append("Servers that go down: " + ("none" if not p.downtime else ""))
    out += [f"  {d}" for d in p.downtime]
    if p.corrected:
        out.append("Not going down, though Heat's preview replaces them:")
        out += [f"  {x}" for x in p.corrected]
    if p.losses:
        out.append("Reasons to stop (lost for good):")
        out += [f"  {x}" for x in p.losses]
    if p.state:
        out.append("State a replacement does not inherit:")
        out += [f"  {s}" for s in p.state]
    out.append("Interface change:" + ("" if any(p.interface.values()) else " none"))
    for kind, items in p.interface.items():
        out += [f"  {kind:8} {i}" for i in items]
    if p.breaking:
        out.append("Breaking: " + "; ".join(p.breaking))
    if p.unmapped:
        out.append("Needs mapping: " + "; ".join(p.unmapped))
    for version, notes in p.notes:
        out.append(f"CHANGELOG {version}:")
        out += [f"  {line}" for line in notes.splitlines()]
    return "\n".join(out)
