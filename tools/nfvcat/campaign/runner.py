"""``nfvcat test``: each test of a Test Description File runs validate -> plan -> onboard -> instantiate ->
check -> data plane -> terminate, every step a test case with its verdict and duration. A failed step stops
its test (the next steps are skipped), never the campaign; cleanup steps (terminate, lab teardown) always run
once their setup step started. On a lab target the cloud steps are replaced by the lab's own."""

from __future__ import annotations

import os
import time
import traceback
from pathlib import Path
from typing import Any

from nfvcat.campaign import controlplane as cp
from nfvcat.campaign import targets
from nfvcat.campaign.results import ERROR, FAIL, PASS, SKIP, CampaignRecord, Step, TestRecord
from nfvcat.campaign.targets import Plan, Say
from nfvcat.catalog.tdf import Expectation, Tdf, TestSpec
from nfvcat.core.errors import EXIT_ENGINE, UserError


def _run_step(record: TestRecord, plan: Plan, say: Say) -> Step:
    step = Step(plan.name, plan.label, start=time.time())
    record.steps.append(step)
    say(f"[{record.name}] {plan.label} ...")
    try:
        step.message = plan.fn()
        step.status = PASS
    except cp.StepFailed as exc:
        step.status, step.message = FAIL, str(exc)
    except cp.CannotRun as exc:
        step.status, step.message = ERROR, str(exc)
    except UserError as exc:
        step.status, step.message = (ERROR if exc.exit_code == EXIT_ENGINE else FAIL), str(exc)
    except (RuntimeError, OSError, ValueError, KeyError, TimeoutError) as exc:
        step.status, step.message = FAIL, f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # a bug of ours: the step is red and says where
        tb = traceback.extract_tb(exc.__traceback__)[-1]
        step.status = ERROR
        step.message = f"internal error {type(exc).__name__}: {exc} ({Path(tb.filename).name}:{tb.lineno})"
    step.stop = time.time()
    say(f"[{record.name}] {plan.label}: {step.status} in {step.duration:.1f} s"
        + (f": {step.message}" if step.message and step.status != PASS else ""))
    return step


def evaluate(exp: Expectation, record: TestRecord, figures: dict[str, Any],
             done: dict[str, TestRecord]) -> dict[str, Any]:
    """One expected figure: value, reference, bound and verdict (unknown figures are no pass)."""
    key = f"{exp.metric}/{exp.frame}" if exp.metric.startswith("throughput") else exp.metric
    value = figures.get(key)
    out: dict[str, Any] = {"name": exp.name, "metric": exp.metric, "frame": exp.frame, "min": exp.min,
                           "max": exp.max, "value": value, "relative_to": exp.relative_to,
                           "per_added_vnf_vs": exp.per_added_vnf_vs}
    ref_name = exp.relative_to or exp.per_added_vnf_vs
    figure = value
    # a figure that is only a lower bound (capped by max_rate_pps): the true one may be higher, so what is
    # derived from it may be higher (it is the value) or lower (it is the reference) than computed
    may_be_higher = key in (figures.get("at_least") or [])
    may_be_lower = False
    if ref_name is not None:
        ref = done.get(ref_name)
        ref_figures = (ref.details.get("figures") or {}) if ref else {}
        ref_value = ref_figures.get(key)
        may_be_lower = key in (ref_figures.get("at_least") or [])
        out["reference"] = ref_value
        if value is None or ref_value is None:
            figure = None
        elif exp.relative_to:
            figure = value / ref_value if ref_value else None
        else:
            assert ref is not None and record.vnfs is not None and ref.vnfs is not None
            figure = (value - ref_value) / (record.vnfs - ref.vnfs)
    out["figure"] = None if figure is None else round(float(figure), 4)
    if figure is None:
        out["status"], out["why"] = FAIL, "unknown: a figure it needs was not measured"
        return out
    below = exp.min is not None and figure < exp.min
    above = exp.max is not None and figure > exp.max
    if not (below or above):  # within: sure unless the true figure may lie past a bound
        unsure = (exp.min is not None and may_be_lower) or (exp.max is not None and may_be_higher)
    else:  # outside: sure if the true figure cannot lie back within
        unsure = not ((below and not may_be_higher) or (above and not may_be_lower))
    out["status"] = PASS if not (below or above or unsure) else FAIL
    if unsure:
        which = " and ".join(n for n, low in (("its figure", may_be_higher), (f"{ref_name}'s", may_be_lower)) if low)
        out["why"] = (f"unknown: {which} {key} lost nothing at max_rate_pps, the top of the range asked, so it is "
                      "only a lower bound; raise max_rate_pps")
    return out


def _control_plane(tdf: Tdf, test: TestSpec, record: TestRecord, cloud: cp.CloudRun | None) -> list[Plan]:
    """validate, plan, then (with a cloud) onboard, instantiate and check."""
    g = tdf.general
    plans: list[Plan] = []
    if test.chain:
        plans.append(Plan("validate", f"validate {test.chain}", lambda: cp.validate(test)))

        def plan() -> str:
            try:
                msg, rows = cp.plan(test, g)
            except cp.WithRows as exc:
                record.placement += exc.rows
                raise
            record.placement += rows
            return msg

        if test.plan:
            plans.append(Plan("plan", f"plan {test.chain} on the inventory", plan))
    if cloud is not None:
        def check() -> str:
            rows = cloud.check()
            record.placement += rows
            return cp.judge_checks(rows, test.placement)

        plans += [Plan("onboard", f"onboard images, flavors and networks on {g.cloud}", cloud.onboard),
                  Plan("instantiate", f"instantiate {test.chain} on {g.cloud}", cloud.instantiate),
                  Plan("check", f"check placement and binding on {g.cloud}", check)]
        for spec in test.day2:
            plans.append(Plan(f"day2-{spec.name}", f"{spec.op} {test.chain} under traffic ({spec.name}), then check",
                              _day2_step(cloud, spec, record, check)))
    return plans


def _day2_step(cloud: cp.CloudRun, spec: Any, record: TestRecord, check: Any) -> Any:
    """The day-2 operation under traffic (nfvcat.campaign.day2), then check on the new placement."""
    def step() -> str:
        from nfvcat.campaign import day2

        measured = day2.run(cloud, spec, record, evaluate)
        return f"{measured}; {check()}"
    return step


def _target(tdf: Tdf, ctx: targets.Context) -> targets.Steps | None:
    """The data-plane target of the test: through the cloud's chain, or the namespace lab."""
    test, g = ctx.test, tdf.general
    if ctx.cloud is not None and g.dataplane == "cloud" and test.dataplane and not test.lab:
        return targets.open_target("cloud", "cloud: test endpoints", ctx)
    if g.lab == "vm" and test.lab:
        return _VmUnsupported()
    if test.lab:
        return targets.open_target("lab", "lab: render day-0", ctx)
    return None


class _VmUnsupported:
    def __init__(self) -> None:
        def unsupported() -> str:
            raise cp.CannotRun("lab: vm is not run by nfvcat test yet (the VM pair runs in the day-0 tier's VM tests)")
        self.plans = [Plan("lab-build", "lab: vm", unsupported)]

    def close(self) -> None:
        return None


def _run_plans(record: TestRecord, plans: list[Plan], say: Say) -> None:
    """Each step in turn; after a failure only the cleanups of steps that started run."""
    started: set[str] = set()
    failed = False
    for p in plans:
        if failed and not (p.cleanup_of and p.cleanup_of in started):
            record.steps.append(Step(p.name, p.label, SKIP, message="an earlier step failed"))
            continue
        started.add(p.name)
        step = _run_step(record, p, say)
        failed = failed or step.status in (FAIL, ERROR)


def run_test(tdf: Tdf, test: TestSpec, index: int, done: dict[str, TestRecord], keep: bool, say: Say) -> TestRecord:
    g = tdf.general
    record = TestRecord(test.name, test.description, test.chain, test.lab.vnfs if test.lab else None,
                        test.lab.topology if test.lab else None, start=time.time())
    cloud = cp.CloudRun(g.cloud, test, g, say) if g.cloud and test.chain else None
    plans = _control_plane(tdf, test, record, cloud)
    target = _target(tdf, targets.Context(tdf, test, index, record, done, cloud, keep, say))
    if target is not None:
        plans += target.plans
    if cloud is not None:
        plans.append(Plan("terminate", f"terminate on {g.cloud}",
                          (lambda: "kept (--keep)") if keep else cloud.terminate, cleanup_of="instantiate"))
    try:
        _run_plans(record, plans, say)
    finally:  # interrupted: nothing half-created left behind
        if target is not None:
            target.close()
    record.stop = time.time()
    return record


def run(tdf: Tdf, only: set[str] | None = None, keep: bool = False, say: Say = lambda s: None) -> CampaignRecord:
    from nfvcat import __version__

    unknown = sorted((only or set()) - {t.name for t in tdf.tests})
    if unknown:
        raise UserError(f"--only {', '.join(unknown)}: no such test in {tdf.path} "
                        f"(have: {', '.join(t.name for t in tdf.tests)})")
    camp = CampaignRecord(str(tdf.path), tdf.target, tdf.general.project)
    camp.environment = {"nfvcat": __version__, "installer": os.environ.get("INSTALLER_TYPE"),
                        "scenario": os.environ.get("DEPLOY_SCENARIO"), "pod_name": os.environ.get("NODE_NAME"),
                        "build_tag": os.environ.get("BUILD_TAG")}
    done: dict[str, TestRecord] = {}
    try:
        for i, test in enumerate(tdf.tests):
            if only and test.name not in only:
                continue
            say(f"== test {i + 1}/{len(tdf.tests)}: {test.name}")
            record = run_test(tdf, test, i, done, keep, say)
            done[test.name] = record
            camp.tests.append(record)
            failed = record.failed_step()
            say(f"== {test.name}: {record.status} in {record.stop - record.start:.1f} s"
                + (f" (step {failed.name}: {failed.message})" if failed else ""))
    finally:
        cp.shutdown()
    camp.stop = time.time()
    return camp
