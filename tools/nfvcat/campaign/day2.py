"""A campaign test's day-2 steps (TDF ``tests[].day2``): each lifecycle operation runs on the test's stack inside a
constant-rate flow through the chain (``nfvcat.cloud.outage``), the same functions ``nfvcat upgrade`` and
``nfvcat heal --via heat`` use; its figures go to the test's record and its ``expect:`` bounds them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nfvcat import catalog
from nfvcat.campaign.controlplane import CannotRun, CloudRun, StepFailed
from nfvcat.campaign.results import PASS, TestRecord
from nfvcat.catalog.tdf import Day2Spec


def operation(cloud: CloudRun, spec: Day2Spec) -> tuple[str, Any, set[str] | None, bool]:
    """(label, the operation, the servers its preview says go down, whether the flow must be at full rate first)."""
    from nfvcat.cloud import heat_heal, release_images, upgrade
    from nfvcat.cloud.stacks import Stacks

    conn, stack = cloud.connect(), cloud.stack_name
    stacks = Stacks(conn, cloud.say)
    if spec.op == "upgrade":
        envs = spec.environment if spec.environment is not None else cloud.test.environment
        root = catalog.require_root()
        plan, b, params, clear = upgrade.prepare(  # the target's images as `nfvcat upgrade` puts them on the cloud
            stacks, root, stack, spec.to, envs, dict(spec.parameters), {},
            images=lambda meta, skip: release_images.ensure(conn, root, meta, cloud.general.image_dir, {}, cloud.say,
                                                            skip=skip))
        why = upgrade.refusal(plan)
        if why:
            raise StepFailed(why)
        return (f"upgrade {stack} {plan.entry} {plan.current} -> {plan.target}",
                lambda: upgrade.apply(stacks, plan, b, params, clear, spec.timeout, spec.timeout),
                set(plan.servers_down), True)
    assert spec.server is not None  # the schema's
    old = heat_heal.server_resource(conn, stack, spec.server).get("physical_resource_id")
    return (f"heal {stack} {spec.server}",
            lambda: heat_heal.heal(conn, stacks, stack, spec.server or "", "nfvcat test", spec.timeout),
            {str(old)} if old else None, False)


def run(cloud: CloudRun, spec: Day2Spec, record: TestRecord, evaluate: Callable[..., dict[str, Any]]) -> str:
    """The operation under traffic; its outage in ``record.details["day2"][name]``, its bounds judged by
    ``evaluate`` (the runner's, as the data plane's)."""
    from nfvcat.cloud import flows, outage
    from nfvcat.cloud.connect import cloud_errors
    from nfvcat.core.errors import EXIT_ENGINE, UserError

    conn = cloud.connect()
    try:
        with cloud_errors(f"{spec.op} {cloud.stack_name}"):
            label, op, predicted, need = operation(cloud, spec)
            flow = flows.open_flow(spec.traffic, spec.traffic_command, conn, cloud.stack_name, spec.rate_pps,
                                   cloud.say)
            if flow is None:
                raise CannotRun("no traffic flow")  # the schema asks one
            found = outage.measure(flow, label, op, lambda: outage.stack_servers(conn, cloud.stack_name),
                                   predicted, cloud.say, recover_s=spec.recover_timeout, need_baseline=need)
    except UserError as exc:
        if exc.exit_code == EXIT_ENGINE:
            raise CannotRun(str(exc)) from None
        raise StepFailed(str(exc)) from None
    except (RuntimeError, OSError) as exc:
        raise CannotRun(f"traffic flow through {cloud.stack_name}: {exc}") from None
    record.details.setdefault("day2", {})[spec.name] = found.as_dict()
    verdicts = [evaluate(e, record, found.metrics(), {}) for e in spec.expect]
    record.expectations += verdicts
    f = found.figures
    summary = (f"lost {f.lost} of {f.sent}, longest gap {f.longest_gap_s:.3f} s, full rate "
               + ("never again" if f.time_to_full_rate_s is None else f"{f.time_to_full_rate_s:.1f} s after")
               + f"; prediction {({None: 'none', True: 'held', False: 'did not hold'})[found.prediction.held]}")
    bad = [v for v in verdicts if v["status"] != PASS]
    if bad or not found.ok:
        what = "; ".join(f"{v['name']}: {v['metric']} {v['value']} ({v.get('why') or 'out of bounds'})" for v in bad)
        raise StepFailed(f"{summary}" + (f"; {what}" if what else ""))
    return summary
