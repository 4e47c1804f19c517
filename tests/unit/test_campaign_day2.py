"""A Test Description File's day-2 steps (nfvcat.campaign.day2): the schema's rules, the operation run inside a
flow (fake flow, fake clock), its outage in the record and the `expect:` bounds judged on its figures."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
import yaml

from nfvcat.campaign import controlplane as cp
from nfvcat.campaign import day2
from nfvcat.campaign.reports import xtesting_record
from nfvcat.campaign.results import FAIL, PASS, CampaignRecord, TestRecord
from nfvcat.campaign.runner import _control_plane, evaluate
from nfvcat.catalog import tdf
from nfvcat.cloud import flows, outage
from nfvcat.core.errors import UserError
from tests.unit.test_outage import FakeFlow, fake_time


def _doc(**day2_op: Any) -> dict[str, Any]:
    op = {"name": "replace", "op": "upgrade", "to": "1.2.0", "traffic": "devcloud",
          "expect": [{"name": "loses at most 2000", "metric": "lost", "max": 2000},
                     {"name": "back within 30 s", "metric": "time_to_full_rate_s", "max": 30},
                     {"name": "the preview holds", "metric": "prediction_held", "min": 1}], **day2_op}
    return {"kind": "nfvcat/test-description", "general": {"target": {"cloud": "nfvcat-dev"}},
            "tests": [{"name": "t", "chain": "chain-vrouter", "plan": False, "day2": [op]}]}


def _load(tmp_path: Path, doc: dict[str, Any]) -> tdf.Tdf:
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump(doc))
    return tdf.load(path)


def test_day2_steps_are_read_and_follow_the_check(tmp_path: Path) -> None:
    t = _load(tmp_path, _doc())
    [spec] = t.tests[0].day2
    assert (spec.op, spec.to, spec.traffic, spec.rate_pps, [e.metric for e in spec.expect]) == \
        ("upgrade", "1.2.0", "devcloud", 200, ["lost", "time_to_full_rate_s", "prediction_held"])
    cloud = cp.CloudRun("nfvcat-dev", t.tests[0], t.general, lambda s: None)
    plans = [p.name for p in _control_plane(t, t.tests[0], TestRecord("t", "", None, None, None), cloud)]
    assert plans == ["validate", "onboard", "instantiate", "check", "day2-replace"]


@pytest.mark.parametrize(("change", "message"), [
    ({"traffic": None}, "E0013 /tests/0/day2/0: "),  # neither traffic nor a command
    ({"op": "heal"}, "'server' is a required property"),
    ({"op": "scale"}, "'scale' is not one of"),
    ({"expect": [{"name": "x", "metric": "lost"}]}, "is not valid under any of the given schemas"),
])
def test_a_day2_step_the_schema_refuses_is_one_line_naming_the_place(tmp_path: Path, change: dict[str, Any],
                                                                     message: str) -> None:
    doc = _doc(**change)
    op = doc["tests"][0]["day2"][0]
    for k in [k for k, v in op.items() if v is None]:
        del op[k]
    with pytest.raises(UserError, match=message) as err:
        _load(tmp_path, doc)
    assert "E0013 /tests/0/day2/0" in str(err.value)


def test_day2_needs_a_cloud_target(tmp_path: Path) -> None:
    doc = _doc()
    doc["general"] = {"target": {"lab": "netns"}}
    with pytest.raises(UserError, match="day2 operations run on a cloud target's stack"):
        _load(tmp_path, doc)


@pytest.fixture
def faked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[cp.CloudRun, Any, FakeFlow]:
    """The campaign's stack and a flow on a fake clock; the upgrade takes 20 s, its server down 12 s of them."""
    clock, now, sleep = fake_time()
    flow = FakeFlow(clock)
    monkeypatch.setattr(outage, "measure", functools.partial(outage.measure, clock=now, sleep=sleep))
    monkeypatch.setattr(flows, "open_flow", lambda *a: flow)
    servers = iter([{"srv-1": "t1"}, {"srv-2": "t2"}])
    monkeypatch.setattr(outage, "stack_servers", lambda conn, stack: next(servers))

    def upgrade() -> str:
        flow.outages.append((clock[0] + 5, clock[0] + 17))
        clock[0] += 20
        return "UPDATE_COMPLETE"

    monkeypatch.setattr(day2, "operation", lambda cloud, spec: ("upgrade t", upgrade, {"srv-1"}, True))
    t = _load(tmp_path, _doc())
    return cp.CloudRun("nfvcat-dev", t.tests[0], t.general, lambda s: None, conn=object()), t, flow


def test_the_operation_runs_under_traffic_and_its_figures_meet_the_bounds(faked: Any) -> None:
    cloud, t, flow = faked
    record = TestRecord("t", "", "chain-vrouter", None, None)
    summary = day2.run(cloud, t.tests[0].day2[0], record, evaluate)
    assert summary.startswith("lost 1200 of ") and "prediction held" in summary and flow.closed
    assert record.details["day2"]["replace"]["lost"] == 1200
    assert [(e["metric"], e["value"], e["status"]) for e in record.expectations] == [
        ("lost", 1200, PASS), ("time_to_full_rate_s", 17.0, PASS), ("prediction_held", 1, PASS)]
    camp = CampaignRecord("c.yaml", "cloud nfvcat-dev", "nfvcat")
    pushed = xtesting_record(camp, record)["details"]  # what goes to the test results database
    assert pushed["day2"]["replace"]["prediction"]["held"] is True and pushed["day2"]["replace"]["lost"] == 1200


def test_a_figure_past_its_bound_fails_the_step(faked: Any) -> None:
    cloud, t, _ = faked
    spec = t.tests[0].day2[0]
    spec.expect[0].max = 0  # an upgrade that must lose nothing
    record = TestRecord("t", "", "chain-vrouter", None, None)
    with pytest.raises(cp.StepFailed, match="loses at most 2000: lost 1200"):
        day2.run(cloud, spec, record, evaluate)
    assert [e["status"] for e in record.expectations] == [FAIL, PASS, PASS]
