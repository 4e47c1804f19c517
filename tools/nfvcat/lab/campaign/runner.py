"""``nfvcat test``: each test of a Test Description File runs validate -> plan -> onboard -> instantiate ->
check -> data plane -> terminate, every step a test case with its verdict and duration. A failed step stops
its test (the next steps are skipped), never the campaign; cleanup steps (terminate, lab teardown) always run
once their setup step started. On a lab target the cloud steps are replaced by the lab's own."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nfvcat import catalog
from nfvcat.catalog.tdf import Expectation, Tdf, TestSpec
from nfvcat.core.errors import EXIT_ENGINE, UserError
from nfvcat.lab.campaign import cloudtarget, labtarget
from nfvcat.lab.campaign import controlplane as cp
from nfvcat.lab.campaign.results import ERROR, FAIL, PASS, SKIP, CampaignRecord, Step, TestRecord
from nfvcat.lab.netns import Lab

Say = Callable[[str], None]


@dataclass
class _Plan:
    name: str
    label: str
    fn: Callable[[], str]
    cleanup_of: str | None = None  # runs whenever that step started, whatever happened after


def _run_step(record: TestRecord, plan: _Plan, say: Say) -> Step:
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


def _lab_ready(topology: str) -> None:
    if os.geteuid() != 0:
        raise cp.CannotRun("the namespace lab needs root (network namespaces, nftables, trafgen)")
    missing = labtarget.missing_tools(topology)
    if missing:
        raise cp.CannotRun(f"missing {', '.join(missing)}: install tools/debs/day0.txt")


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


def run_test(tdf: Tdf, test: TestSpec, index: int, done: dict[str, TestRecord], keep: bool, say: Say) -> TestRecord:
    g = tdf.general
    record = TestRecord(test.name, test.description, test.chain, test.lab.vnfs if test.lab else None,
                        test.lab.topology if test.lab else None, start=time.time())
    plans: list[_Plan] = []
    if test.chain:
        plans.append(_Plan("validate", f"validate {test.chain}", lambda: cp.validate(test)))

        def plan() -> str:
            try:
                msg, rows = cp.plan(test, g)
            except cp.WithRows as exc:
                record.placement += exc.rows
                raise
            record.placement += rows
            return msg

        if test.plan:
            plans.append(_Plan("plan", f"plan {test.chain} on the inventory", plan))
    cloud = cp.CloudRun(g.cloud, test, g, say) if g.cloud and test.chain else None
    if cloud is not None:
        def check() -> str:
            rows = cloud.check()
            record.placement += rows
            return cp.judge_checks(rows, test.placement)

        plans += [_Plan("onboard", f"onboard images, flavors and networks on {g.cloud}", cloud.onboard),
                  _Plan("instantiate", f"instantiate {test.chain} on {g.cloud}", cloud.instantiate),
                  _Plan("check", f"check placement and binding on {g.cloud}", check)]
    lab: Lab | None = None
    workdir: Path | None = None
    run: labtarget.LabRun | None = None
    cloud_dp: cloudtarget.CloudDataplane | None = None
    if cloud is not None and g.dataplane == "cloud" and test.dataplane and not test.lab:
        steps, cloud_dp = _cloud_dataplane(record, cloud, test, index, done, say)
        plans += steps
    elif g.lab == "vm" and test.lab:
        plans.append(_Plan("lab-build", "lab: vm", _vm_unsupported))
    elif test.lab:
        lab = Lab(tag=f"{os.getpid()}-t{index}")
        workdir = Path(tempfile.mkdtemp(prefix=f"nfvcat-test-{test.name}-"))
        run = labtarget.LabRun(test.lab, lab, workdir)
        record.dataplane = "netns" if test.dataplane else None
        instead = g.lab is not None

        def render() -> str:
            _lab_ready(test.lab.topology if test.lab else "")
            assert run is not None
            return run.render()

        def build() -> str:
            assert run is not None
            return run.build()

        def lab_check() -> str:
            assert run is not None
            rows = cp.verdict_rows(run.check(), "lab check")
            record.placement += rows
            return cp.judge_checks(rows, test.placement if instead else None)

        def measure() -> str:
            assert run is not None and test.dataplane is not None
            return _measure(record, run.lab, run.endpoints, run.workdir, test, done, say)

        def teardown() -> str:
            assert lab is not None and workdir is not None
            if keep:
                return f"kept (--keep): namespaces {' '.join(lab.namespaces)}, files in {workdir}"
            n = len(lab.namespaces)
            lab.close()
            shutil.rmtree(workdir, ignore_errors=True)
            return f"{n} namespace(s) and their daemons removed"

        what = "in place of onboard" if instead else "for the data plane"
        plans += [_Plan("render", f"lab: render day-0 ({what})", render),
                  _Plan("build", f"lab: build the namespace chain{' (in place of instantiate)' if instead else ''}",
                        build),
                  _Plan("lab-check", f"lab: check the chain{' (in place of check)' if instead else ''}", lab_check)]
        if test.dataplane:
            plans.append(_Plan("dataplane", "data plane: RFC 2544 throughput and latency", measure))
        plans.append(_Plan("teardown", f"lab: tear down{' (in place of terminate)' if instead else ''}", teardown,
                           cleanup_of="build"))
    if cloud is not None:
        plans.append(_Plan("terminate", f"terminate on {g.cloud}",
                           (lambda: "kept (--keep)") if keep else cloud.terminate, cleanup_of="instantiate"))
    started: set[str] = set()
    failed = False
    try:
        for p in plans:
            if failed and not (p.cleanup_of and p.cleanup_of in started):
                record.steps.append(Step(p.name, p.label, SKIP, message="an earlier step failed"))
                continue
            started.add(p.name)
            step = _run_step(record, p, say)
            failed = failed or step.status in (FAIL, ERROR)
    finally:  # interrupted: nothing half-created left behind
        if cloud_dp is not None and not keep:
            if cloud_dp.plugged:
                cloud_dp.unplug()
            cloud_dp.lab.close()
            shutil.rmtree(cloud_dp.workdir, ignore_errors=True)
        if lab is not None and not keep:
            lab.close()
        if workdir is not None and not keep:
            shutil.rmtree(workdir, ignore_errors=True)
    record.stop = time.time()
    return record


def _measure(record: TestRecord, lab: Lab, endpoints: Any, workdir: Path, test: TestSpec,
             done: dict[str, TestRecord], say: Say, pacing: str = "rate") -> str:
    """The data-plane step, in the lab or through the cloud: the search, the figures, the expectations."""
    assert test.dataplane is not None and endpoints is not None
    searches, latency = labtarget.measure(lab, endpoints, workdir, test.dataplane, say, pacing)
    record.details["pacing"] = pacing
    record.searches = [s.as_dict() for s in searches]
    record.latency = latency.as_dict() if latency else None
    record.details["figures"] = {**record.details.get("figures", {}), **labtarget.figures(searches, latency)}
    record.expectations = [evaluate(e, record, record.details["figures"], done) for e in test.dataplane.expect]
    bad = [e for e in record.expectations if e["status"] != PASS]
    summary = ", ".join(f"{s.frame} B {s.throughput_pps:.0f} pps" for s in searches)
    if bad:
        b = bad[0]
        raise cp.StepFailed(f"{len(bad)} expectation(s) not met, first: {b['name']}: {b['figure']} "
                            f"(min {b['min']}, max {b['max']}){' ' + b.get('why', '') if 'why' in b else ''}")
    return summary + (f"; {len(record.expectations)} expectation(s) met" if record.expectations else "")


def _cloud_dataplane(record: TestRecord, cloud: cp.CloudRun, test: TestSpec, index: int,
                     done: dict[str, TestRecord], say: Say) -> tuple[list[_Plan], cloudtarget.CloudDataplane]:
    """The steps of a data plane through the chain the cloud deployed (general.dataplane: cloud)."""
    lab = Lab(tag=f"{os.getpid()}-c{index}")
    workdir = Path(tempfile.mkdtemp(prefix=f"nfvcat-test-{test.name}-"))
    dp = cloudtarget.CloudDataplane(None, cloud.stack_name, lab, workdir)
    record.dataplane = "cloud"

    def plug() -> str:
        dp.conn = cloud.conn or cloud._connect()
        return dp.plug()

    def check() -> str:
        rows = cp.verdict_rows(dp.check(), "cloud check")
        record.placement += rows
        record.details.setdefault("figures", {})["tcp_mbps"] = round(dp.tcp_mbps, 3)
        return cp.judge_checks(rows, None)

    def measure() -> str:  # frames at a constant rate: the guest's rate limits and queues see what RFC 2544 means
        return _measure(record, lab, dp.endpoints, workdir, test, done, say, pacing="gap")

    def acl() -> str:
        assert test.dataplane is not None and test.dataplane.acl is not None
        found = dp.acl(test.dataplane.acl, say)
        record.details["acl"] = found
        summary = ", ".join(f"{k} {v['status']} ({v['passed']}/{v['probed']} probed"
                            + (f", {v['not_observable']} not observable" if v["not_observable"] else "") + ")"
                            for k, v in found["classes"].items())
        if any(v["status"] != PASS for v in found["classes"].values()):
            raise cp.StepFailed(f"ACL probes: {summary}")
        return f"{found['rules']} rules: {summary}"

    def qos() -> str:
        assert test.dataplane is not None and test.dataplane.qos is not None
        found = dp.qos(test.dataplane.qos, catalog.require_root(), say)
        record.details["qos"] = found
        figures = record.details.setdefault("figures", {})
        bw, dscp = found["bandwidth_limit"], found["dscp_marking"]
        figures.update(qos_limit_mbps=bw["limit_mbps"], qos_limited_mbps=bw["limited_median_mbps"],
                       qos_unlimited_mbps=bw["unlimited_median_mbps"], dscp_with_policy=dscp["with_policy"],
                       dscp_without=dscp["without"])
        summary = f"bandwidth limit: {bw['status']}: {bw['detail']}; DSCP: {dscp['status']}: {dscp['detail']}"
        if found["status"] != PASS:
            raise cp.StepFailed(summary)
        return summary

    def unplug() -> str:
        try:
            return dp.unplug()
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    plans = [_Plan("endpoints", f"cloud: test endpoints on {test.chain}'s left and right networks", plug),
             _Plan("cloud-check", "cloud: ping and TCP through the deployed chain", check),
             _Plan("dataplane", "data plane through the cloud: RFC 2544 throughput and latency", measure)]
    if test.dataplane is not None and test.dataplane.acl is not None:
        plans.append(_Plan("acl", "cloud: the VNF's ACL as deployed, probed class by class", acl))
    if test.dataplane is not None and test.dataplane.qos is not None:
        plans.append(_Plan("qos", "cloud: the catalog's QoS policies on the VNF's ports", qos))
    return [*plans, _Plan("unplug", "cloud: unplug the test endpoints", unplug, cleanup_of="endpoints")], dp


def _vm_unsupported() -> str:
    raise cp.CannotRun("lab: vm is not run by nfvcat test yet (the VM pair runs in the day-0 tier's VM tests)")


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
