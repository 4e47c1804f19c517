"""What an operation costs the traffic (nfvcat.cloud.outage): the figures from synthetic sink records, the wait
for full rate around the operation, the preview's prediction against what went down, the flow given as a command,
and `nfvcat upgrade --traffic-command` reporting the outage."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from openstack.exceptions import ResourceNotFound

from nfvcat import cli
from nfvcat.cloud import flows, outage
from nfvcat.cloud.outage import FlowRecord, Prediction
from nfvcat.commands import options
from nfvcat.core.errors import EXIT_FINDINGS, EXIT_USAGE, UserError
from tests.unit.cloudfake import HEAT
from tests.unit.test_day2 import DemoStack, heat, no_sleep, repo  # noqa: F401 (fixtures)
from tests.unit.test_tacker_lcm import ENTRY, _req, _tk, fake  # noqa: F401 (fixture)


def synthetic(rate: float, sent: int, lost: set[int], t0: float = 1000.0, latency: float = 0.001,
              stop: bool = True) -> FlowRecord:
    """A flow of ``sent`` packets at ``rate`` from ``t0``: each one not in ``lost`` arrives ``latency`` later."""
    lines = [json.dumps({"start": t0, "rate_pps": rate})]
    lines += [json.dumps({"seq": n, "t": t0 + n / rate + latency}) for n in range(sent) if n not in lost]
    if stop:
        lines.append(json.dumps({"sent": sent, "stop": t0 + sent / rate}))
    return outage.parse(lines)


def test_a_flow_that_lost_nothing_has_no_outage() -> None:
    f = outage.figures(synthetic(100, 500, set()), op_start=1001.0)
    assert (f.sent, f.received, f.lost, f.time_to_full_rate_s) == (500, 500, 0, 0.0)
    assert f.longest_gap_s == pytest.approx(0.01)  # one packet's interval


def test_an_outage_in_the_middle_is_its_lost_packets_its_gap_and_the_time_back_to_full_rate() -> None:
    # 100 pps; packets 300..499 lost (2 s); the operation started at 2.5 s (t0 + 2.5)
    f = outage.figures(synthetic(100, 1000, set(range(300, 500))), op_start=1002.5)
    assert (f.sent, f.received, f.lost) == (1000, 800, 200)
    assert f.longest_gap_s == pytest.approx(2.01)  # from packet 299 to packet 500
    assert f.time_to_full_rate_s == pytest.approx(5.001 - 2.5)  # packet 500 arrived at t0 + 5.001


def test_losses_at_either_end_count_from_the_flows_start_and_to_its_stop() -> None:
    head = outage.figures(synthetic(100, 400, set(range(0, 50))), op_start=1000.0)
    assert head.lost == 50 and head.longest_gap_s == pytest.approx(0.501)  # start to packet 50
    tail = outage.figures(synthetic(100, 400, set(range(250, 400))), op_start=1001.0)
    assert tail.lost == 150 and tail.longest_gap_s == pytest.approx(1.509)  # packet 249 to the stop (t0 + 4)
    assert tail.time_to_full_rate_s is None  # still losing when the flow stopped


def test_a_late_stray_loss_moves_the_time_back_to_full_rate_and_duplicates_count_once() -> None:
    rec = synthetic(100, 1000, {100, 101, 700})
    rec.add(json.dumps({"seq": 5, "t": 2000.0}))  # a duplicate: the first arrival counts
    rec.add("not json")
    rec.add(json.dumps([1, 2]))
    f = outage.figures(rec, op_start=1000.5)
    assert (f.received, f.lost, rec.malformed) == (997, 3, 2)
    assert f.time_to_full_rate_s == pytest.approx(7.011 - 0.5)  # packet 701: every packet after it arrived


def test_at_full_rate_needs_every_packet_of_the_last_seconds_since_a_time() -> None:
    rec = synthetic(100, 600, set(range(200, 400)), stop=False)
    assert outage.at_full_rate(rec, since=1000.0, hold_s=1.0)  # packets 500..599 all arrived
    assert not outage.at_full_rate(rec, since=1005.5, hold_s=1.0)  # not all of them after 5.5 s
    assert not outage.at_full_rate(synthetic(100, 350, set(range(200, 300)), stop=False), 1000.0, 1.0)
    assert not outage.at_full_rate(FlowRecord(rate_pps=100), 0.0, 1.0)


def test_the_prediction_holds_when_the_servers_named_went_down_and_no_other() -> None:
    before = {"a": "t1", "b": "t1", "c": "t1"}
    replaced = Prediction({"a"}, before, {"a2": "t2", "b": "t1", "c": "t1"})
    assert replaced.held is True and replaced.as_dict()["new_servers"] == ["a2"]
    rebuilt = Prediction({"a"}, before, {"a": "t1", "b": "t9", "c": "t1"})  # b rebuilt (launched_at), a kept
    assert rebuilt.held is False
    assert (rebuilt.as_dict()["unexpected"], rebuilt.as_dict()["missed"]) == (["b"], ["a"])
    assert Prediction(None, before, before).held is None
    assert Prediction(set(), before, before).held is True


class FakeFlow:
    """Packets at ``rate`` on the fake clock; none arrive while ``down`` (the operation sets it)."""

    def __init__(self, clock: list[float], rate: float = 100) -> None:
        self.clock, self.rate, self.describe = clock, rate, "fake"
        self.t0 = 0.0
        self.outages: list[tuple[float, float]] = []
        self.closed = self.stopped = False

    def start(self) -> None:
        self.t0 = self.clock[0]

    def record(self) -> FlowRecord:
        rec = FlowRecord(self.rate, self.t0)
        n = int((self.clock[0] - self.t0) * self.rate)
        for seq in range(n):
            t = self.t0 + seq / self.rate
            if not any(a <= t < b for a, b in self.outages):
                rec.arrivals[seq] = t
        if self.stopped:
            rec.sent, rec.stop = n, self.clock[0]
        return rec

    def stop(self) -> FlowRecord:
        self.stopped = True
        return self.record()

    def close(self) -> None:
        self.closed = True


def fake_time() -> tuple[list[float], Any, Any]:
    clock = [100.0]

    def sleep(s: float) -> None:
        clock[0] += s
    return clock, (lambda: clock[0]), sleep


def test_measure_runs_the_operation_at_full_rate_and_waits_until_it_is_back() -> None:
    clock, now, sleep = fake_time()
    flow = FakeFlow(clock)

    def operation() -> str:  # 20 s of update; the server is down for 12 s of them, from 5 s in
        start = clock[0]
        flow.outages.append((start + 5, start + 17))
        clock[0] += 20
        return "UPDATE_COMPLETE"

    servers = iter([{"srv-1": "t1"}, {"srv-2": "t2"}])
    said: list[str] = []
    found = outage.measure(flow, "upgrade demo", operation, lambda: next(servers), {"srv-1"}, said.append,
                           clock=now, sleep=sleep)
    assert found.result == "UPDATE_COMPLETE" and found.baseline and flow.closed
    f = found.figures
    assert f.lost == 1200 and f.longest_gap_s == pytest.approx(12.01)
    assert f.time_to_full_rate_s == pytest.approx(17.0)
    assert found.prediction.held is True and found.ok
    assert found.metrics() == {"sent": f.sent, "lost": 1200, "longest_gap_s": f.longest_gap_s,
                               "time_to_full_rate_s": f.time_to_full_rate_s, "prediction_held": 1}
    assert "lost 1200" in found.text() and "prediction held" in found.text()


def test_measure_refuses_an_operation_whose_flow_never_reached_full_rate() -> None:
    clock, now, sleep = fake_time()
    flow = FakeFlow(clock)
    flow.outages.append((0, 1e9))  # the chain forwards nothing
    ran: list[int] = []
    with pytest.raises(UserError, match="does not pass the chain at full rate before upgrade demo"):
        outage.measure(flow, "upgrade demo", lambda: ran.append(1), lambda: {}, set(), lambda s: None,
                       clock=now, sleep=sleep)
    assert ran == [] and flow.closed
    # a heal is what brings the chain back: it runs anyway, and says the chain was down before
    found = outage.measure(flow, "heal demo", lambda: flow.outages.clear(), lambda: {}, None, lambda s: None,
                           need_baseline=False, clock=now, sleep=sleep)
    assert not found.baseline and found.figures.time_to_full_rate_s is not None and found.ok


def test_a_flow_never_back_at_full_rate_is_no_pass() -> None:
    clock, now, sleep = fake_time()
    flow = FakeFlow(clock)

    def operation() -> None:
        flow.outages.append((clock[0], 1e9))
        clock[0] += 10

    found = outage.measure(flow, "upgrade demo", operation, lambda: {}, set(), lambda s: None, recover_s=60,
                           clock=now, sleep=sleep)
    assert found.figures.time_to_full_rate_s is None and not found.ok
    assert "not back at full rate when the flow stopped" in found.text()


FLOW_SCRIPT = r"""
import json, signal, sys, time
rate, drop = float(sys.argv[1]), range(int(sys.argv[2]), int(sys.argv[3]))
stop = []
signal.signal(signal.SIGINT, lambda *a: stop.append(1))
t0 = time.time()
print(json.dumps({"start": t0, "rate_pps": rate}), flush=True)
n = 0
while not stop:
    time.sleep(max(0.0, t0 + n / rate - time.time()))
    if n not in drop:
        print(json.dumps({"seq": n, "t": time.time()}), flush=True)
    n += 1
print(json.dumps({"sent": n, "stop": time.time()}), flush=True)
"""


def flow_command(tmp_path: Path, drop_from: int, drop_to: int) -> str:
    script = tmp_path / "flow.py"
    script.write_text(FLOW_SCRIPT)
    return f"{sys.executable} {script} 200 {drop_from} {drop_to}"


def test_a_command_is_a_flow_its_records_read_as_it_runs(tmp_path: Path) -> None:
    flow = flows.open_flow(None, flow_command(tmp_path, 10, 30), None, "demo", 200, lambda s: None)
    assert isinstance(flow, flows.CommandFlow)
    flow.start()
    try:
        time.sleep(0.5)
        running = flow.record()
        assert running.sent is None and running.rate_pps == 200 and 10 not in running.arrivals
        rec = flow.stop()
    finally:
        flow.close()
    assert rec.sent is not None and rec.sent > 50 and outage.figures(rec, rec.start or 0).lost == 20
    assert not flow.dir.exists()


def test_a_flow_that_is_neither_installed_nor_a_command_is_a_usage_error() -> None:
    with pytest.raises(UserError, match="--traffic nosuch: no such flow"):
        flows.open_flow("nosuch", None, None, "demo", 200, lambda s: None)
    with pytest.raises(UserError, match="give one"):
        flows.open_flow("a", "b", None, "demo", 200, lambda s: None)
    with pytest.raises(UserError, match="No closing quotation"):
        flows.open_flow(None, "'unclosed", None, "demo", 200, lambda s: None)


def test_upgrade_under_traffic_reports_the_outage_and_whether_the_preview_held(
        heat: Any, capsys: Any, no_sleep: None,  # noqa: F811 (fixtures)
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stack = DemoStack(heat, "1.0.0", ["CREATE_COMPLETE"])
    stack.preview["replaced"] = [{"resource_name": "server", "resource_type": "OS::Nova::Server",
                                  "physical_resource_id": "srv-1"}]
    heat.get(f"{HEAT}/stacks/demo/s1/resources", json={"resources": [
        {"resource_name": "server", "physical_resource_id": "srv-1"}]})
    servers = iter([{"srv-1": "t1", "srv-x": "t1"}, {"srv-2": "t2", "srv-x": "t1"},
                    {"srv-1": "t1", "srv-x": "t1"}, {"srv-3": "t3", "srv-x": "t9"}])
    monkeypatch.setattr(outage, "stack_servers", lambda conn, name: next(servers))
    # 200 pps; packets 700..799 lost (3.5 s to 4 s in: after the 3 s the flow needs at full rate first)
    args = ["upgrade", "demo", "--to", "1.1.0", "--yes", "--os-cloud", "x", "--no-check", "--format", "json",
            "--traffic-command", flow_command(tmp_path, 700, 800), "--traffic-rate", "200"]
    assert cli.main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    found = doc["outage"]
    assert found["lost"] == 100 and found["sent"] > 800 and found["baseline_at_full_rate"]
    assert 0.45 < found["longest_gap_s"] < 1.0 and found["time_to_full_rate_s"] is not None
    assert found["prediction"] == {"predicted_down": ["srv-1"], "went_down": ["srv-1"], "held": True,
                                   "unexpected": [], "missed": [], "new_servers": ["srv-2"]} and found["ok"]
    # the same again, where a server the preview did not name went down too: exit 2
    stack.tags, stack.updated = ["nfvcat:demo@1.0.0"], "2026-11-26T10:30:00Z"
    assert cli.main([*args[:-4], "--traffic-command", flow_command(tmp_path, 0, 0)]) == EXIT_FINDINGS
    found = json.loads(capsys.readouterr().out)["outage"]
    assert found["prediction"]["unexpected"] == ["srv-x"] and not found["ok"] and found["lost"] == 0


# ---- what an upgrade loses for good: reasons to stop -----------------------------------------------------------

def test_an_upgrade_that_replaces_a_port_deletes_a_volume_or_a_server_group_stops_unless_accepted(
        heat: Any, capsys: Any, no_sleep: None) -> None:  # noqa: F811 (fixtures)
    stack = DemoStack(heat, "1.0.0", ["CREATE_COMPLETE"])
    stack.preview["replaced"] = [{"resource_name": "port", "resource_type": "OS::Neutron::Port",
                                  "parent_resource": "vnf"},
                                 {"resource_name": "group", "resource_type": "OS::Nova::ServerGroup"}]
    stack.preview["deleted"] = [{"resource_name": "data", "resource_type": "OS::Cinder::Volume"}]
    args = ["upgrade", "demo", "--to", "1.1.0", "--yes", "--os-cloud", "x", "--no-check"]
    assert cli.main(args) == EXIT_USAGE
    out, err = capsys.readouterr()
    assert "Reasons to stop (lost for good):\n  port vnf/port: replaced: its MAC address and IP address change\n" \
           "  server group group: replaced: its members lose their group (anti-affinity)\n" \
           "  volume data: deleted: its data is deleted\n" in out
    assert "loses what a chain cannot get back: port vnf/port: replaced" in err and "--accept-loss" in err
    assert stack.updates() == []
    assert cli.main([*args, "--accept-loss"]) == 0 and len(stack.updates()) == 1


def test_a_server_whose_scheduler_hint_group_is_gone_in_the_target_is_a_loss() -> None:
    from nfvcat.cloud import upgrade
    from nfvcat.cloud.stacks import Bundle

    member = "type: OS::Nova::Server\n    properties:\n      scheduler_hints: {group: {get_param: group}}\n"
    old = Bundle({"resources": {"a": {"type": "vnf.yaml"}}},
                 {"file:///x/vnf.yaml": f"resources:\n  server:\n    {member}"}, {})
    new = Bundle({"resources": {"a": {"type": "vnf.yaml"}}},
                 {"file:///y/vnf.yaml": "resources:\n  server:\n    type: OS::Nova::Server\n"}, {})
    assert upgrade.grouped(old) == {("vnf.yaml/", "server")} and upgrade.grouped(new) == set()
    conditional = Bundle({"resources": {"server": {"type": "OS::Nova::Server", "properties": {
        "scheduler_hints": {"if": ["has_group", {"group": {"get_param": "group"}}]}}}}}, {}, {})
    assert upgrade.grouped(conditional) == {("", "server")}  # as vnf-vrouter gives it


def test_heal_via_tacker_under_traffic_reports_the_outage_of_the_healed_vnfc(
        fake: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:  # noqa: F811
    import functools

    from nfvcat.cloud import tacker_lcm

    _, conn, _ = fake
    tacker_lcm.instantiate(conn, _tk(conn, []), ENTRY.dir, ENTRY.meta, _req(), 60)
    monkeypatch.setattr("nfvcat.cloud.connect.connect", lambda name, *deadlines: conn)
    monkeypatch.setattr(tacker_lcm.Tacker, "__init__", functools.partialmethod(tacker_lcm.Tacker.__init__, poll=0))
    servers = iter([{"srv-1": "t1"}, {"srv-1-healed": "t2"}])
    monkeypatch.setattr(outage, "stack_servers", lambda c, stack: next(servers))
    assert cli.main(["heal", "vr1", "--vnfc", "VDU_VROUTER-srv-1", "--os-cloud", "x", "--no-check",
                     "--format", "json", "--traffic-command", flow_command(tmp_path, 0, 0)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["vnf"]["healed"]["new_server"] == "srv-1-healed"
    assert doc["outage"]["operation"] == "heal vr1 VDU_VROUTER-srv-1" and doc["outage"]["lost"] == 0
    assert doc["outage"]["prediction"]["predicted_down"] == ["srv-1"] and doc["outage"]["prediction"]["held"]


def test_the_operations_own_error_is_never_reported_as_the_flows(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # an openstacksdk error is an OSError (requests' exceptions are): it once came out as "traffic flow through ..."
    def gone() -> None:
        raise ResourceNotFound("No Server found for srv-1")

    args = argparse.Namespace(traffic=None, traffic_command=None, traffic_rate=200.0, recover_timeout=60.0,
                              format="json")
    with pytest.raises(ResourceNotFound, match="No Server found for srv-1"):
        options.measured(args, None, "demo", "op", gone, None)
    monkeypatch.setattr(outage, "stack_servers", lambda conn, stack: {})
    args.traffic_command = flow_command(tmp_path, 10 ** 9, 10 ** 9)  # a flow that loses nothing
    with pytest.raises(ResourceNotFound, match="No Server found for srv-1"):
        options.measured(args, None, "demo", "op", gone, None)
