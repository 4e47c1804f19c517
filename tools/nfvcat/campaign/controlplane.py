"""Control-plane steps of a campaign test: validate and plan (offline, any target), and onboard, instantiate,
check and terminate on a cloud of clouds.yaml (the library functions the lifecycle commands use)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nfvcat import catalog
from nfvcat.campaign.results import FAIL, PASS
from nfvcat.catalog.tdf import General, TestSpec
from nfvcat.core import yamlpos
from nfvcat.core.errors import EXIT_ENGINE, UserError


class StepFailed(Exception):
    """The step ran and did not meet its criteria."""


class CannotRun(Exception):
    """The step could not run (engine, cloud or tool unavailable): the answer is unknown."""


def chain_files(test: TestSpec) -> tuple[Path, list[Path]]:
    """The chain's template and its environments (files, or names of the entry's examples)."""
    from nfvcat.catalog import history

    assert test.chain is not None
    found = history.template(test.chain)
    return found.path, found.environments(test.environment)


def validate(test: TestSpec) -> str:
    from nfvcat.validation.model import Options
    from nfvcat.validation.pipeline import validate_paths

    template, envs = chain_files(test)
    report = validate_paths([str(template)], Options(environments=[str(e) for e in envs],
                                                      parameters=dict(test.parameters)))
    errors = [f for f in report.findings if f.severity == "error"]
    if errors:
        first = errors[0]
        raise StepFailed(f"{len(errors)} error(s), first: {first.rule_id} {first.message} ({first.file}:{first.line})")
    if report.engine_failed:
        raise CannotRun("an engine could not run: the validation is incomplete")
    warnings = sum(f.severity == "warning" for f in report.findings)
    return f"{report.files} file(s) valid, {warnings} warning(s)"


def _env_parameters(path: Path) -> dict[str, Any]:
    try:
        data, _ = yamlpos.load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yamlpos.DocumentError) as exc:
        raise StepFailed(f"{path}: not a Heat environment: {getattr(exc, 'message', exc)}") from None
    params = data.get("parameters") if isinstance(data, dict) else None
    return dict(params) if isinstance(params, dict) else {}


def _read_yaml(path: Any) -> Any:
    try:
        return yamlpos.load(Path(path).read_text(encoding="utf-8"))[0]
    except (OSError, UnicodeDecodeError, yamlpos.DocumentError):
        return None


_pool: list[Any] = []


def _planner() -> Any:
    """One worker process for the planner: Nova's code (the planner's) and Heat's (day-0 rendering) register
    the same oslo.config options and cannot share a process; the worker loads Nova once per campaign."""
    if not _pool:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        _pool.append(ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")))
    return _pool[0]


def shutdown() -> None:
    while _pool:
        _pool.pop().shutdown(wait=True, cancel_futures=True)


def plan(test: TestSpec, general: General) -> tuple[str, list[dict[str, str]]]:
    """Where the chain's VNFs land on the inventory (Nova's fitting), as placement-table rows."""
    template, envs = chain_files(test)
    params: dict[str, Any] = {}
    for env in envs:
        params.update(_env_parameters(env))
    params.update(test.parameters)
    inv = str(general.inventory) if general.inventory else None
    failed, msg, rows = _planner().submit(_place, str(template), params, inv).result()
    if failed:
        raise WithRows(msg, rows)
    return msg, rows


def _place(template: str, params: dict[str, Any], inv_path: str | None) -> tuple[bool, str, list[dict[str, str]]]:
    from nfvcat.catalog import inventory
    from nfvcat.plan import hot_reader
    from nfvcat.plan.planner import Planner

    data = _read_yaml(template)
    networks = catalog.provider_networks(catalog.find_root(), _read_yaml)
    try:
        chain = hot_reader.load(template, data, params, None, networks)
        inv = inventory.load(inv_path)
    except UserError as exc:
        return True, str(exc), []
    result = Planner(inv).place_chain(chain)
    rows = []
    for p in result.placements:
        detail = (f"NUMA {','.join(map(str, p.numa_cells)) or '-'}, {p.cpu_policy} CPUs "
                  f"{','.join(map(str, p.pinned_cpus)) or '-'}, pages {p.page_size}")
        rows.append({"source": "plan", "vnf": p.vnf, "subject": p.host, "check": "placed", "status": PASS,
                     "detail": detail})
    for f in result.failures:
        why = f.reasons[0][1].message if f.reasons else "no host"
        rows.append({"source": "plan", "vnf": f.vnf, "subject": f.instance, "check": "placed", "status": FAIL,
                     "detail": why})
    if result.failures:
        return True, f"{len(result.failures)} VNF(s) do not fit: {rows[-1]['detail']}", rows
    return False, f"{len(result.placements)} VNF(s) placed on {len(inv.hosts)} host(s) of {Path(inv.path).name}", rows


class WithRows(StepFailed):
    def __init__(self, message: str, rows: list[dict[str, str]]):
        super().__init__(message)
        self.rows = rows


def verdict_rows(verdicts: list[Any], source: str) -> list[dict[str, str]]:
    return [{"source": source, **v.as_dict(), "status": PASS if v.status == "pass" else
             (FAIL if v.status == "FAIL" else v.status)} for v in verdicts]


def judge_checks(rows: list[dict[str, str]], wanted: list[str] | None) -> str:
    """Every check named in ``wanted`` (all when None) ran and passed; 'needs admin' or 'unknown' is no pass, a
    server on a local rebuild of a catalog image passes. The message names the image each server booted."""
    from nfvcat.cloud.verdicts import REBUILD

    counted = [r for r in rows if wanted is None or r["check"] in wanted]
    missing = sorted(set(wanted or []) - {r["check"] for r in rows})
    if missing:
        raise StepFailed(f"expected check(s) did not run: {', '.join(missing)}")
    bad = [r for r in counted if r["status"] not in (PASS, REBUILD)]
    if bad:
        b = bad[0]
        raise StepFailed(f"{len(bad)} of {len(counted)} check(s) not passed, first: {b['vnf']} {b['subject']} "
                         f"{b['check']}: {b['status']} {b['detail']}{images_tested(rows)}".rstrip())
    return f"all {len(counted)} check(s) pass{images_tested(rows)}"


def images_tested(rows: list[dict[str, str]]) -> str:
    """``; images: SERVER NAME catalog, ...``: what each server booted, from check's image provenance rows."""
    from nfvcat.cloud.image_provenance import CHECK
    from nfvcat.cloud.verdicts import REBUILD

    kind = {PASS: "catalog", REBUILD: "local rebuild"}
    named = [f"{r['subject']} {r['detail'].split(' ', 1)[0].rstrip(':')} {kind.get(r['status'], 'unknown provenance')}"
             for r in rows if r["check"] == CHECK]
    return f"; images: {', '.join(named)}" if named else ""


@dataclass
class CloudRun:
    """One test's chain on a cloud: onboard, instantiate (a stack named after the test), check, terminate."""

    cloud: str
    test: TestSpec
    general: General
    say: Callable[[str], None]
    conn: Any = None
    stack_id: str | None = None

    @property
    def stack_name(self) -> str:
        return f"nfvcat-test-{self.test.name}"

    def connect(self) -> Any:
        from nfvcat.cloud.connect import connect

        if self.conn is None:
            try:
                self.conn = connect(self.cloud)
            except UserError as exc:
                raise CannotRun(str(exc)) from None
        return self.conn

    def _api(self, what: str, fn: Callable[[], Any]) -> Any:
        from nfvcat.cloud.connect import cloud_errors

        try:
            with cloud_errors(what):
                return fn()
        except UserError as exc:
            if exc.exit_code == EXIT_ENGINE:
                raise CannotRun(str(exc)) from None
            raise StepFailed(str(exc)) from None

    def onboard(self) -> str:
        from nfvcat.catalog import flavors as catalog_flavors
        from nfvcat.cloud import onboarding

        root = catalog.require_root()
        known = {f.name for f in catalog_flavors.all_flavors(root)}
        unknown = sorted(set(self.test.flavors) - known)
        if unknown:
            raise StepFailed(f"flavor(s) not in the catalog: {', '.join(unknown)} (have: {', '.join(sorted(known))})")
        conn = self.connect()
        plan = onboarding.Plan()

        def work() -> None:
            if self.general.image_dir is not None:
                plan.add(*onboarding.images(conn, root, self.general.image_dir, {}, False, self.say))
            plan.add(*onboarding.flavors(conn, root, False, set(self.test.flavors) or None))
            plan.add(*onboarding.networks(conn, root, False, self.say, 600))

        self._api("onboard", work)
        return f"{plan.changes} change(s), {len(plan.actions) - plan.changes} unchanged"

    def instantiate(self, timeout: float = 900) -> str:
        from nfvcat.cloud.readiness import stack_ready
        from nfvcat.cloud.stacks import Stacks, bundle, converge, stack_parameters

        conn = self.connect()
        template, envs = chain_files(self.test)
        b = bundle(template, envs)
        given = dict(self.test.parameters)
        if self.general.availability_zone and "availability_zone" in (b.template.get("parameters") or {}):
            given.setdefault("availability_zone", self.general.availability_zone)
        params = stack_parameters(b.template, given)  # use_config_drive, NFVCAT_SECRET_* as instantiate does
        stacks = Stacks(conn, self.say)
        self.stack_id = str(self._api(f"instantiate {self.stack_name}",
                                      lambda: converge(stacks, self.stack_name, b, params, timeout)))
        # as `nfvcat instantiate`: each VNF's ready line in Nova's console log (not observable on a simulated host)
        ready = self._api(f"instantiate {self.stack_name}",
                          lambda: stack_ready(conn, self.stack_name, timeout, self.say))
        return f"stack {self.stack_name} ({self.stack_id}) complete" + "".join(
            f"; {v.vnf} ready: {v.detail}" for v in ready)

    def check(self) -> list[dict[str, str]]:
        from nfvcat.catalog import inventory
        from nfvcat.cloud.check import check_stack

        conn = self.connect()
        inv = inventory.load(str(self.general.inventory) if self.general.inventory else None)
        verdicts = self._api(f"check {self.stack_name}", lambda: check_stack(conn, self.stack_name, inv))
        return verdict_rows(verdicts, "check")

    def terminate(self, timeout: float = 900) -> str:
        from nfvcat.cloud.stacks import Stacks, delete_and_verify

        conn = self.connect()
        stacks = Stacks(conn, self.say)
        left = self._api(f"terminate {self.stack_name}",
                         lambda: delete_and_verify(conn, stacks, self.stack_name, timeout))
        if left is None:
            return "no stack to delete"
        if left:
            raise StepFailed(f"stack {self.stack_name} deleted, but still there: {', '.join(left)}")
        return f"stack {self.stack_name} deleted, every server, port and network of it gone"
