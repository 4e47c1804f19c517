"""Control-plane steps of a campaign test: validate and plan (offline, any target), and onboard, instantiate,
check and terminate on a cloud of clouds.yaml (the library functions the lifecycle commands use)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nfvcat import catalog, yamlpos
from nfvcat.campaign.results import FAIL, PASS
from nfvcat.campaign.tdf import General, TestSpec
from nfvcat.errors import EXIT_ENGINE, UserError


class StepFailed(Exception):
    """The step ran and did not meet its criteria."""


class CannotRun(Exception):
    """The step could not run (engine, cloud or tool unavailable): the answer is unknown."""


def chain_files(test: TestSpec) -> tuple[Path, list[Path]]:
    from nfvcat.cloud import catalog as cloud_catalog

    assert test.chain is not None
    entry = cloud_catalog.heat_entry(test.chain)
    envs = []
    for e in test.environment:
        path = Path(e) if Path(e).is_file() else entry.example(e)
        if path is None:
            raise StepFailed(f"environment {e}: no such file, nor an example of {entry.name}")
        envs.append(path)
    return entry.template, envs


def validate(test: TestSpec) -> str:
    from nfvcat.validate import Options, validate_paths

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
        raise _WithRows(msg, rows)
    return msg, rows


def _place(template: str, params: dict[str, Any], inv_path: str | None) -> tuple[bool, str, list[dict[str, str]]]:
    from nfvcat.plan import hot_reader, inventory, request
    from nfvcat.plan.planner import Planner

    data = _read_yaml(template)
    networks = catalog.provider_networks(catalog.find_root(), _read_yaml)
    try:
        chain = hot_reader.load(template, data, params, request.default_flavor_dirs(), networks)
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


class _WithRows(StepFailed):
    def __init__(self, message: str, rows: list[dict[str, str]]):
        super().__init__(message)
        self.rows = rows


def verdict_rows(verdicts: list[Any], source: str) -> list[dict[str, str]]:
    return [{"source": source, **v.as_dict(), "status": PASS if v.status == "pass" else
             (FAIL if v.status == "FAIL" else v.status)} for v in verdicts]


def judge_checks(rows: list[dict[str, str]], wanted: list[str] | None) -> str:
    """Every check named in ``wanted`` (all when None) ran and passed; 'needs admin' or 'unknown' is no pass."""
    counted = [r for r in rows if wanted is None or r["check"] in wanted]
    missing = sorted(set(wanted or []) - {r["check"] for r in rows})
    if missing:
        raise StepFailed(f"expected check(s) did not run: {', '.join(missing)}")
    bad = [r for r in counted if r["status"] != PASS]
    if bad:
        b = bad[0]
        raise StepFailed(f"{len(bad)} of {len(counted)} check(s) not passed, first: {b['vnf']} {b['subject']} "
                         f"{b['check']}: {b['status']} {b['detail']}".rstrip())
    return f"all {len(counted)} check(s) pass"


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

    def _connect(self) -> Any:
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
        from nfvcat.cloud import catalog as cloud_catalog
        from nfvcat.cloud import onboarding

        known = {str(f["name"]) for f in cloud_catalog.flavors()}
        unknown = sorted(set(self.test.flavors) - known)
        if unknown:
            raise StepFailed(f"flavor(s) not in the catalog: {', '.join(unknown)} (have: {', '.join(sorted(known))})")
        conn = self._connect()
        plan = onboarding.Plan()

        def work() -> None:
            if self.general.image_dir is not None:
                plan.add(*onboarding.images(conn, self.general.image_dir, {}, False, self.say))
            plan.add(*onboarding.flavors(conn, False, set(self.test.flavors) or None))
            plan.add(*onboarding.networks(conn, False, self.say, 600))

        self._api("onboard", work)
        return f"{plan.changes} change(s), {len(plan.actions) - plan.changes} unchanged"

    def instantiate(self, timeout: float = 900) -> str:
        from nfvcat.cloud.stacks import StackFailed, Stacks, bundle

        conn = self._connect()
        template, envs = chain_files(self.test)
        b = bundle(template, envs)
        stacks = Stacks(conn, self.say)
        params = dict(self.test.parameters)
        for name in b.template.get("parameters") or {}:  # secrets as `nfvcat instantiate` takes them
            secret = os.environ.get(f"NFVCAT_SECRET_{str(name).upper()}")
            if secret is not None:
                params[str(name)] = secret
        if self.general.availability_zone and "availability_zone" in (b.template.get("parameters") or {}):
            params.setdefault("availability_zone", self.general.availability_zone)

        def work() -> str:
            existing = stacks.find(self.stack_name)
            if existing is not None:  # a run that was killed: start from nothing
                stacks.delete(self.stack_name, str(existing["id"]))
                stacks.wait(self.stack_name, str(existing["id"]), "DELETE", timeout)
            self.stack_id = stacks.create(self.stack_name, b, params, int(timeout // 60) + 1)
            try:
                stacks.wait(self.stack_name, self.stack_id, "CREATE", timeout)
            except StackFailed as exc:
                raise StepFailed(f"{self.stack_name}: {exc.reason}") from None
            return f"stack {self.stack_name} ({self.stack_id}) CREATE_COMPLETE"

        return str(self._api(f"instantiate {self.stack_name}", work))

    def check(self) -> list[dict[str, str]]:
        from nfvcat.cloud.placement_check import check_stack
        from nfvcat.plan import inventory

        conn = self._connect()
        inv = inventory.load(str(self.general.inventory) if self.general.inventory else None)
        verdicts = self._api(f"check {self.stack_name}", lambda: check_stack(conn, self.stack_name, inv))
        return verdict_rows(verdicts, "check")

    def terminate(self, timeout: float = 900) -> str:
        from nfvcat.cloud.stacks import Stacks

        if self.stack_id is None:
            return "no stack was created"
        conn = self._connect()
        stacks = Stacks(conn, self.say)
        sid = self.stack_id

        def work() -> None:
            stacks.delete(self.stack_name, sid)
            stacks.wait(self.stack_name, sid, "DELETE", timeout)

        self._api(f"terminate {self.stack_name}", work)
        return f"stack {self.stack_name} deleted"


