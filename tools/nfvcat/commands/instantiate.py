"""``nfvcat instantiate CHAIN``: a Heat stack from the catalog's templates, waited for, then checked.

Nested templates and files are bundled as ``openstack stack create`` does. On failure the failing resource's
reason is shown (e.g. Nova's "No valid host") and the stack is deleted, so nothing is left. Re-running after
an interruption converges: a stack in progress is waited for, a complete one is updated in place, a failed
one is replaced. Secret parameters come from ``--secrets FILE`` (YAML mapping) or ``NFVCAT_SECRET_<PARAM>``
environment variables and are never printed.

``--via tacker vnfd/NAME``: the VNF package of the entry, onboarded on the cloud, instantiated by Tacker's v2
VNF LCM (deployment flavour, instantiation level, external virtual links to the catalog's provider networks,
``-P`` values and secrets as additionalParams), the LCM operation waited for; on failure its reason is shown,
it is rolled back and the VNF instance deleted. Then ``check`` runs on the stack Tacker made. ``--via tacker
vnfd/NAME@VERSION``: that release's images (the Glance names of its VNFD), then its VNF package, are put on the
cloud first, as for Heat.

After the stack, each VNF's ready line (``NFVCAT-<VNF>-READY``, printed by its day-0 hook) is waited for in Nova's
console log, with progress (``--ready-timeout``); a VNF in ERROR or not ready in time fails (the stack is kept).
"""

from __future__ import annotations

import argparse
import os

from nfvcat.commands import options
from nfvcat.core.errors import EXIT_FINDINGS, EXIT_OK


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("instantiate", help="deploy a chain of the catalog as a Heat stack (or a VNF package "
                              "through Tacker), then check it", description=__doc__)
    p.add_argument("chain", help="catalog entry in templates/heat (e.g. chain-vrouter), its directory or a template, "
                                 "or NAME@VERSION for a released version (its files from the release record and git "
                                 "history, its images put on the cloud first: the build of that release's image "
                                 "lock, a local rebuild when Debian's mirror moved on, or --image-dir/--image); "
                                 "with --via tacker, a vnfd entry (e.g. vnfd/vnf-vrouter)")
    options.add_via(p, "heat", "tacker")
    tk = p.add_argument_group("--via tacker")
    tk.add_argument("--vnf", metavar="NAME", help="VNF instance name (default: the entry's name)")
    tk.add_argument("--flavour", default="default", help="deployment flavour (default: default)")
    tk.add_argument("--instantiation-level", metavar="ID", help="instantiation level (default: the flavour's)")
    tk.add_argument("--ext-net", action="append", default=[], type=options.parameter, metavar="CP=NETWORK",
                    help="network of an external CP (repeatable; default: the entry's ext_networks)")
    p.add_argument("--stack", help="stack name (default: the chain's name)")
    p.add_argument("--secrets", help="YAML file of secret parameters (never echoed)")
    p.add_argument("--day0", choices=["config-drive", "metadata"], default="config-drive",
                   help="day-0 delivery (sets use_config_drive when the template has it)")
    options.add_stack_change(
        p, environments="environment file, or the name of one of the entry's examples (e.g. sriov)",
        waited="the stack (or Tacker's LCM operation)",
        wait=("--ready-timeout", 900, "seconds to wait, after the stack, for each VNF's ready line in Nova's "
              "console log (default 900; 0: do not wait)"))
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nfvcat import catalog
    from nfvcat.catalog import entries, history
    from nfvcat.cloud import release_images
    from nfvcat.cloud.check import check_stack
    from nfvcat.cloud.connect import cloud_errors
    from nfvcat.cloud.marks import mark
    from nfvcat.cloud.readiness import stack_ready
    from nfvcat.cloud.stacks import Stacks, bundle, converge, stack_parameters
    from nfvcat.cloud.verdicts import passed, report

    if args.via == "tacker":
        return _via_tacker(args)
    found = history.template(args.chain)
    released = history.split(args.chain)[1] is not None and not os.path.exists(args.chain)
    image_dir, overrides = options.image_overrides(args)
    b = bundle(found.path, found.environments(args.environment))
    params = stack_parameters(b.template, dict(args.parameter), args.day0, args.secrets)
    inv, access = options.open_checked(args)
    meta = entries.read_meta(found.entry_dir) if found.entry_dir else None  # a release's passed its day's schema
    name = args.stack or (str(meta["name"]) if meta else found.path.stem)
    tags = [mark(str(meta["name"]), str(meta["version"]))] if meta and "version" in meta else None
    conn = options.cloud_connection(args)
    say = options.progress(args)

    with cloud_errors(f"instantiate {name}"):
        if released:  # that release's images (its Glance names), on the cloud before Heat is called
            skip = release_images.unused(b, {**(b.environment.get("parameters") or {}), **dict(args.parameter)}, meta)
            release_images.ensure(conn, catalog.require_root(), meta, image_dir, overrides, say, skip=skip)
        sid = converge(Stacks(conn, say), name, b, params, args.timeout, tags)
        say(f"{name}: stack {sid} complete" + (f" ({tags[0].removeprefix('nfvcat:')})" if tags else ""))
        ready = stack_ready(conn, name, args.ready_timeout, say)
        if args.no_check:
            return EXIT_OK
        verdicts = ready + check_stack(conn, name, inv, access)
    print(report(verdicts, name, args.format))
    return EXIT_OK if passed(verdicts) else EXIT_FINDINGS


def _via_tacker(args: argparse.Namespace) -> int:
    from nfvcat import catalog
    from nfvcat.catalog import history
    from nfvcat.cloud import release_images, tacker_lcm
    from nfvcat.cloud.connect import cloud_errors

    root = catalog.require_root()
    entry = history.resolve(root, args.chain, "vnfd")
    released = history.split(args.chain)[1] is not None and not os.path.exists(args.chain)
    image_dir, overrides = options.image_overrides(args)
    req = tacker_lcm.Request(name=args.vnf or entry.name, flavour=args.flavour, level=args.instantiation_level,
                             ext_networks=dict(args.ext_net),
                             additional=tacker_lcm.additional_params(entry.dir, dict(args.parameter), args.secrets))
    inv, access = options.open_checked(args)
    conn = options.cloud_connection(args)
    say = options.progress(args)
    tk = tacker_lcm.Tacker(conn, say)
    if released:  # that release's images (the Glance names its VNFD's sw_image_data gives), then its package
        with cloud_errors(f"instantiate {req.name}"):
            release_images.ensure_vnf(conn, root, entry, tacker_lcm.vnfd_id(entry.dir, entry.meta["template"]),
                                      image_dir, overrides, say)
    vnf = tacker_lcm.instantiate(conn, tk, entry.dir, entry.meta, req, args.timeout)
    text, ok = tacker_lcm.check_and_report(conn, vnf, inv, access, args.format, check=not args.no_check)
    print(text)
    return EXIT_OK if ok else EXIT_FINDINGS
