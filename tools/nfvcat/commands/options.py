"""The options several commands share, each defined once: ``-P``, ``-e``, ``--format``, ``--os-cloud``,
``--inventory``, ``--host-access``. Only command modules use this; values are handed to the library as plain data."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from cliff.columns import FormattableColumn


def parameter(value: str) -> tuple[str, str]:
    """``NAME=VALUE`` (the value may be empty or hold '=')."""
    name, sep, val = value.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {value!r}")
    return name, val


def add_parameters(p: argparse.ArgumentParser, help: str = "template parameter (repeatable)") -> None:
    """``-P NAME=VALUE``, repeatable; ``args.parameter`` is a list of (name, value) pairs."""
    p.add_argument("-P", "--parameter", action="append", default=[], type=parameter, metavar="NAME=VALUE",
                   help=help)


def add_environments(p: argparse.ArgumentParser,
                     help: str = "Heat environment file (repeatable)") -> None:
    p.add_argument("-e", "--environment", action="append", default=[], metavar="ENV", help=help)


TABULAR = ("table", "value", "csv", "yaml")  # the openstack CLI's -f, written by cliff's formatters


def add_format(p: argparse.ArgumentParser, *extra: str, columns: bool = False,
               help: str = "output format (default text)") -> None:
    """``-f/--format text|json`` (plus ``extra`` formats, e.g. sarif). ``columns``: a listing or reporting
    command that also prints as the openstack CLI does, ``-f table|value|csv|yaml`` and ``-c COLUMN``
    (repeatable), through cliff's formatters (``emit``)."""
    p.add_argument("-f", "--format", choices=("text", "json", *extra, *(TABULAR if columns else ())),
                   default="text", help=help)
    if columns:
        p.add_argument("-c", "--column", action="append", default=[], dest="columns", metavar="COLUMN",
                       help="the column(s) to print (repeatable), as the openstack CLI's -c: alone, a table of them; "
                            "with -f value|csv|yaml|json, in that format")


def tabular(args: argparse.Namespace) -> bool:
    """Whether the command's output goes through ``emit``: -f table|value|csv|yaml, or -f json with -c (the
    openstack CLI's JSON of the chosen columns). Without -c, -f json stays the command's own document."""
    from nfvcat.core.errors import UserError

    chosen = getattr(args, "columns", None)
    if chosen and args.format == "text":  # -c alone: a table of those columns, as the openstack CLI gives
        args.format = "table"
    if chosen and args.format not in (*TABULAR, "json"):
        raise UserError(f"-c selects columns of -f {', '.join(TABULAR)} or json, not -f {args.format}")
    return args.format in TABULAR or bool(chosen)


def emit(args: argparse.Namespace, columns: Sequence[str], rows: Iterable[Sequence[Any]], one: bool = False) -> None:
    """Print ``rows`` (of ``columns``; ``one``: a single record, as a show command) with cliff's formatter for
    ``args.format``, keeping the ``-c`` columns in the command's order (cliff's rule: names match without case,
    '_' for ' '); a mapping or list value is one cell in a table, data in yaml and json."""
    from cliff.formatters import commaseparated, json_format, table, value, yaml_format

    from nfvcat.core.errors import UserError

    kinds: dict[str, Any] = {"table": table.TableFormatter, "value": value.ValueFormatter,
                             "csv": commaseparated.CSVLister, "yaml": yaml_format.YAMLFormatter,
                             "json": json_format.JSONFormatter}
    formatter = kinds[args.format]()
    defaults = argparse.ArgumentParser(add_help=False)
    formatter.add_argument_group(defaults)
    settings = defaults.parse_args([])  # cliff's own defaults (CLIFF_MAX_TERM_WIDTH, CLIFF_FIT_WIDTH honoured)
    wanted = [c.lower().strip().replace(" ", "_") for c in args.columns or []]
    keep = [i for i, c in enumerate(columns) if not wanted or c.lower().strip().replace(" ", "_") in wanted]
    if not keep:
        raise UserError(f"-c {' -c '.join(args.columns)}: no such column (columns: {', '.join(columns)})")
    names = [columns[i] for i in keep]
    data = [[Cell(row[i]) if isinstance(row[i], (dict, list)) else row[i] for i in keep] for row in rows]
    if one:
        if isinstance(formatter, commaseparated.CSVLister):  # cliff has no CSV of one record: a one-row list
            formatter.emit_list(names, data, sys.stdout, settings)
        else:
            formatter.emit_one(names, data[0], sys.stdout, settings)
    else:
        formatter.emit_list(names, data, sys.stdout, settings)


class Cell(FormattableColumn[Any]):
    """A mapping or list as cliff's formatters print one: data in json and yaml, ``key='value', ...`` or
    ``a, b`` in a table, value or csv cell (as osc-lib's DictColumn and ListColumn do)."""

    def human_readable(self) -> str:
        value = self.machine_readable()
        if isinstance(value, dict):
            return ", ".join(f"{k}='{value[k]}'" for k in sorted(value))
        return ", ".join(str(x) for x in value)


def add_no_server(p: argparse.ArgumentParser, help: str) -> None:
    """``--no-server``: run in this process, not in the engine server (validate, plan)."""
    p.add_argument("--no-server", action="store_true", help=help)


def size(value: str) -> int:
    """A size in bytes, or with a k/M/G suffix (1024-based)."""
    from nfvcat.core.confine import parse_size

    try:
        return parse_size(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a size in bytes (or with k, M, G), got {value!r}") from None


def add_confinement(p: argparse.ArgumentParser) -> None:
    """``--allow-root DIR`` (repeatable) and ``--max-file-size SIZE``: what a validation may read
    (nfvcat.core.confine; also ``allow_roots`` and ``max_file_size`` in .nfvcat.yaml)."""
    p.add_argument("--allow-root", action="append", default=[], metavar="DIR",
                   help="a directory outside the project that templates may reference (get_file, nested templates, "
                        "resource_registry; repeatable). By default only files whose real path is under the project "
                        "(the nearest directory with .nfvcat.yaml or .git), the catalog or the paths given are read")
    p.add_argument("--max-file-size", type=size, default=None, metavar="SIZE",
                   help="the largest file read, in bytes or with k/M/G (default $NFVCAT_MAX_FILE_SIZE, else "
                        "max_file_size in .nfvcat.yaml, else 8M)")


def add_sign(p: argparse.ArgumentParser) -> None:
    """``--sign-key`` and ``--sign-cert``: sign VNF packages' manifests (CMS, SOL004)."""
    p.add_argument("--sign-key", metavar="KEY", help="PEM private key: sign the manifest with CMS (SOL004)")
    p.add_argument("--sign-cert", metavar="CERT", help="PEM certificate of --sign-key, put in the package")


def signer(args: argparse.Namespace) -> tuple[Any, Any] | None:
    """The loaded (key, certificate) of --sign-key/--sign-cert, or None."""
    from nfvcat.core.errors import UserError
    from nfvcat.packaging import signing

    if bool(args.sign_key) != bool(args.sign_cert):
        raise UserError("--sign-key and --sign-cert go together")
    return signing.load_signer(Path(args.sign_key), Path(args.sign_cert)) if args.sign_key else None


def add_via(p: argparse.ArgumentParser, *choices: str) -> None:
    """``--via``: which lifecycle manager does the work (the first choice is the default)."""
    p.add_argument("--via", choices=choices, default=choices[0],
                   help=f"lifecycle manager (default {choices[0]}): heat = a Heat stack of the catalog's "
                        "templates; tacker = Tacker's v2 VNF LCM with the onboarded VNF package")


def add_timeout(p: argparse.ArgumentParser, default: float | None, what: str) -> None:
    """``--timeout``: how long a command that talks to a cloud waits for ``what`` (a lifecycle command: what it
    started; a reading one, ``default`` None: the cloud's answers); no request to the cloud waits longer
    (``cloud_connection``)."""
    shown = f"default {default:g}" if default else "default: --api-timeout"
    p.add_argument("--timeout", type=float, default=default, metavar="SECONDS",
                   help=f"seconds to wait for {what} ({shown}); no request to the cloud waits longer")


def cloud_connection(args: argparse.Namespace) -> Any:
    """The connection to the cloud ``add_cloud``'s options name, each request bounded by --api-timeout and
    --timeout, saying on standard error what it waits for (``progress``)."""
    from nfvcat.cloud.connect import connect

    return connect(args.os_cloud, args.api_timeout, getattr(args, "timeout", None), progress(args))


def add_checked(p: argparse.ArgumentParser, *, skippable: bool = True, columns: bool = False) -> None:
    """What a command that ends with ``nfvcat check`` takes: the cloud, the output format (``columns``: the
    openstack CLI's too), the host inventory and host access (and ``--no-check`` when the check can be skipped)."""
    if skippable:
        p.add_argument("--no-check", action="store_true", help="skip nfvcat check at the end")
    add_cloud(p)
    add_format(p, columns=columns)
    add_inventory(p)
    add_host_access(p)


def add_stack_change(p: argparse.ArgumentParser, *, environments: str, waited: str,
                     wait: tuple[str, float, str]) -> None:
    """What a command that creates or updates a stack from a catalog entry, then checks it, takes (instantiate,
    upgrade): environments (``environments``: their help), parameters, the image files, ``--timeout`` for
    ``waited``, one wait of its own after it (``wait``: the option, its default in seconds and its help) and
    ``add_checked``'s options."""
    add_environments(p, environments)
    add_parameters(p)
    add_images(p)
    add_timeout(p, 900, waited)
    option, default, help = wait
    p.add_argument(option, type=float, default=default, metavar="SECONDS", help=help)
    add_checked(p)


def open_checked(args: argparse.Namespace) -> tuple[Any, Any]:
    """What ``add_checked``'s ``--inventory`` and ``--host-access`` name, opened: (inventory, host access)."""
    from nfvcat.catalog import inventory
    from nfvcat.cloud.hostaccess import open_access

    return inventory.load(args.inventory), open_access(args.host_access)


def progress(args: argparse.Namespace) -> Callable[[str], None]:
    """Where a lifecycle command says what it is waiting for: standard error, and only with ``--format text``
    (JSON output stays one document on standard output)."""
    def say(text: str) -> None:
        if getattr(args, "format", "text") == "text":
            print(text, file=sys.stderr, flush=True)
    return say


def add_cloud(p: argparse.ArgumentParser) -> None:
    """``--os-cloud`` and ``--api-timeout``: which cloud, and how long one request to it may take."""
    p.add_argument("--os-cloud", default=None, metavar="NAME",
                   help="clouds.yaml entry (default: $OS_CLOUD, else a sourced openrc's OS_* variables, else the "
                        "only cloud of clouds.yaml: openstacksdk's order)")
    p.add_argument("--api-timeout", type=float, default=None, metavar="SECONDS",
                   help="seconds one request to the cloud may take before the command gives up, exit 3 naming the "
                        "endpoint (default: openstacksdk's api_timeout of the cloud, from clouds.yaml or "
                        "$OS_API_TIMEOUT, else 60)")


def add_inventory(p: argparse.ArgumentParser) -> None:
    p.add_argument("--inventory", default=os.environ.get("NFVCAT_INVENTORY"),
                   help="host inventory (format of nfvcat plan) with each host's CPU sets and PF-to-NUMA map "
                        "(default: $NFVCAT_INVENTORY, else the reference inventory shipped with nfvcat)")


def add_host_access(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host-access", metavar="DIR|NAME", default=None,
                   help="read what no API shows (emulator-thread pCPUs, Nova's VF of a Neutron port): a directory of "
                        "libvirt domain XML, or a source an installed plugin offers by name (nfvcat-testbeds: "
                        "'devcloud', the dev cloud's recorded state) "
                        "(virsh dumpxml, one <instance uuid>.xml per server); without it those verdicts are "
                        "'needs host access'")


def add_traffic(p: argparse.ArgumentParser) -> None:
    """A constant-rate flow through the chain while the operation runs, and what it lost (nfvcat.cloud.outage)."""
    g = p.add_argument_group("traffic", "measure what the operation costs the traffic (nfvcat.cloud.flows)")
    g.add_argument("--traffic", metavar="NAME", help="a flow of the nfvcat.traffic_flows entry points (the test "
                   "beds: devcloud, endpoints on the dev cloud's real host)")
    g.add_argument("--traffic-command", metavar="CMD", help="a command that runs the flow and prints its records "
                   "(JSON lines: see nfvcat.cloud.flows)")
    g.add_argument("--traffic-rate", type=float, default=200, metavar="PPS", help="packets a second (default 200)")
    g.add_argument("--recover-timeout", type=float, default=600, metavar="SECONDS",
                   help="how long the flow may take to be at full rate again after the operation (default 600)")


def measured(args: argparse.Namespace, conn: Any, stack: str, label: str, operation: Callable[[], Any],
             predicted: set[str] | None, need_baseline: bool = True) -> tuple[Any, Any]:
    """``operation()`` under the flow ``add_traffic``'s options name (none: just run): (its result, the
    ``Outage`` or None)."""
    from nfvcat.cloud import flows, outage
    from nfvcat.core.errors import EXIT_ENGINE, UserError

    rate = outage.check_rate(args.traffic_rate)
    say = progress(args)
    failed: list[BaseException] = []  # the operation's own error: never taken for the flow's

    def run() -> Any:
        try:
            return operation()
        except BaseException as exc:
            failed.append(exc)
            raise

    try:
        flow = flows.open_flow(args.traffic, args.traffic_command, conn, stack, rate, say)
    except (RuntimeError, OSError) as exc:  # the flow's endpoints or processes (a plugin's)
        raise UserError(f"traffic flow through {stack}: {exc}", EXIT_ENGINE) from None
    if flow is None:
        return operation(), None
    try:
        found = outage.measure(flow, label, run, lambda: outage.stack_servers(conn, stack), predicted, say,
                               recover_s=args.recover_timeout, need_baseline=need_baseline)
    except (RuntimeError, OSError) as exc:
        if failed and exc is failed[0]:
            raise
        raise UserError(f"traffic flow through {stack}: {exc}", EXIT_ENGINE) from None
    return found.result, found


def report_stack(args: argparse.Namespace, stack: str, verdicts: list[Any], outage: Any, doc: dict[str, Any],
                 lines: Sequence[str] = ()) -> int:
    """A Heat operation's end: in JSON ``doc`` with the outage (``--traffic``) and the check; in text ``lines``,
    the outage and the check's report. The exit code: 0 when the check and the outage pass."""
    import json

    from nfvcat.cloud.verdicts import passed, report
    from nfvcat.core.errors import EXIT_FINDINGS, EXIT_OK

    if args.format == "json":
        print(json.dumps({**doc, "outage": outage.as_dict() if outage else None,
                          "check": json.loads(report(verdicts, stack, "json")) if verdicts else None}, indent=2))
    else:
        for line in [*lines, *([outage.text()] if outage else []), *([report(verdicts, stack, "text")]
                                                                       if verdicts else [])]:
            print(line)
    return EXIT_OK if (not verdicts or passed(verdicts)) and (outage is None or outage.ok) else EXIT_FINDINGS


def report_checked(args: argparse.Namespace, conn: Any, vnf: dict[str, Any], outage: Any,
                   extra: list[Any] | None = None, checked: tuple[Any, Any] | None = None) -> int:
    """A Tacker operation's end: ``check`` on the VNF's stack, the report, and the outage (``--traffic``).
    ``checked``: ``open_checked``'s (inventory, host access), opened before the operation (None: opened now)."""
    import json

    from nfvcat.cloud import tacker_lcm
    from nfvcat.core.errors import EXIT_FINDINGS, EXIT_OK

    inv, access = checked or open_checked(args)
    text, ok = tacker_lcm.check_and_report(conn, vnf, inv, access, args.format, check=not args.no_check,
                                           extra=extra)
    if outage is not None:
        if args.format == "json":
            doc = json.loads(text)
            doc["outage"] = outage.as_dict()
            text = json.dumps(doc, indent=2)
        else:
            text = f"{outage.text()}\n{text}"
        ok = ok and outage.ok
    print(text)
    return EXIT_OK if ok else EXIT_FINDINGS


def add_images(p: argparse.ArgumentParser) -> None:
    """Where the image files are (onboard; instantiate NAME@VERSION and upgrade --to, for the release's images)."""
    p.add_argument("--image-dir", default=os.environ.get("NFVCAT_IMAGE_DIR"),
                   help="where the image files are, as `nfvcat image build -o DIR` names them (IMAGE-VERSION.qcow2; "
                   "default: $NFVCAT_IMAGE_DIR, else the builds of `nfvcat image build` in the image cache, built when "
                   "missing, from what Debian's mirror serves when it no longer serves the lock)")
    p.add_argument("--image", action="append", default=[], metavar="NAME=FILE",
                   help="the file of one image (NAME: its Glance name or image entry), e.g. the released bits; "
                   "every file is verified against its image lock's sha256 before anything is uploaded")


def image_overrides(args: argparse.Namespace) -> tuple[Path | None, dict[str, Path]]:
    """``--image-dir`` and the ``--image NAME=FILE`` files."""
    from nfvcat.core.errors import UserError

    overrides: dict[str, Path] = {}
    for item in args.image:
        name, sep, path = item.partition("=")
        if not sep or not Path(path).is_file():
            raise UserError(f"--image {item}: expected NAME=FILE with an existing file")
        overrides[name] = Path(path)
    return (Path(args.image_dir) if args.image_dir else None), overrides
