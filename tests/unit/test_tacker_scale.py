"""``nfvcat scale --via tacker`` (nfvcat.cloud.tacker_scale) against an HTTP-level Tacker and Heat
(tests.unit.cloudfake), and the VNFD scaling model it and the generated BaseHOT share (nfvcat.packaging.scaling)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests_mock
import yaml

from nfvcat.catalog import entries
from nfvcat.cloud import tacker_lcm, tacker_scale
from nfvcat.cloud.verdicts import FAIL, PASS
from nfvcat.core.errors import EXIT_FINDINGS, EXIT_USAGE, UserError
from nfvcat.packaging import basehot, scaling
from tests.conftest import ROOT
from tests.unit.cloudfake import (
    HEAT,
    TackerFake,
    instantiated_via_tacker,
    sent,
)

ENTRY = entries.load(ROOT / "vnfd" / "vnf-vrouter")
VNFD_ID = tacker_lcm.vnfd_id(ENTRY.dir, ENTRY.meta["template"])
ASPECT = "VDU_VROUTER_scale"
TOPOLOGY = basehot.vnfd_topology(ENTRY.dir, ENTRY.meta["template"], "default")


@pytest.fixture
def fake() -> Iterator[tuple[requests_mock.Mocker, Any, TackerFake, tacker_lcm.Tacker]]:
    with requests_mock.Mocker() as m:
        conn, tacker, tk = instantiated_via_tacker(m, ENTRY.dir, ENTRY.meta, VNFD_ID)
        yield m, conn, tacker, tk


def _stack_servers(m: requests_mock.Mocker, count: int) -> None:
    """Heat's resource list of the stack Tacker made: ``count`` VDU servers, each in a scaling group member."""
    resources = [{"resource_name": "VDU_VROUTER_scale_group", "resource_type": "OS::Heat::AutoScalingGroup"}]
    for i in range(count):
        resources += [{"resource_name": f"member-{i}", "resource_type": "vrouter.yaml",
                       "parent_resource": "VDU_VROUTER_scale_group"},
                      {"resource_name": "VDU_VROUTER", "resource_type": "OS::Nova::Server",
                       "parent_resource": f"member-{i}"}]
    m.get(f"{HEAT}/stacks/vnf-inst-1/stack-1/resources?nested_depth=5", json={"resources": resources})


def test_the_vnfd_scales_the_vrouter_by_one_up_to_two() -> None:
    model = scaling.model(TOPOLOGY)
    assert list(model.aspects) == [ASPECT]
    assert model.aspects[ASPECT] == scaling.Aspect(ASPECT, 1, {"VDU_VROUTER": 1})
    assert model.levels == {"instantiation_level_1": {ASPECT: 0}, "instantiation_level_2": {ASPECT: 1}}
    assert [model.instances("VDU_VROUTER", {ASPECT: n}) for n in (0, 1)] == [1, 2]
    assert scaling.bounds(model, "VDU_VROUTER", TOPOLOGY["node_templates"]["VDU_VROUTER"]) == (1, 2)


def test_the_basehot_puts_the_vdu_in_a_scaling_group_tacker_sizes(tmp_path: Path) -> None:
    files = basehot.basehot_files(ENTRY.dir, ENTRY.meta)
    top = yaml.safe_load(files["BaseHOT/default/vnf-vrouter.yaml"])
    group = top["resources"]["VDU_VROUTER_scale_group"]
    assert group["type"] == "OS::Heat::AutoScalingGroup" and "VDU_VROUTER" not in top["resources"]
    props = group["properties"]
    assert (props["min_size"], props["max_size"]) == (1, 2)
    assert props["desired_capacity"] == {"get_param": ["nfv", "VDU", "VDU_VROUTER", "desired_capacity"]}
    assert props["resource"]["type"] == "vrouter.yaml"
    assert top["outputs"]["server_id"]["value"] == {"get_attr": ["VDU_VROUTER_scale_group", "outputs_list",
                                                                 "server_id"]}


@pytest.mark.parametrize("change, error", [
    (lambda p: p[0]["scaling_aspects"]["properties"]["aspects"][ASPECT].update(step_deltas=["delta_1", "d2"]),
     "give one step delta"),
    (lambda p: p[2]["VDU_VROUTER_scaling_aspect_deltas"]["properties"].update(aspect="nope"),
     "aspect nope is no ScalingAspects aspect"),
    (lambda p: p[0]["scaling_aspects"]["properties"]["aspects"][ASPECT].update(max_scale_level=3),
     r"its scaling aspects give 1 to 4 instances, outside its vdu_profile \(1 to 2\)"),
    (lambda p: p[3]["instantiation_levels"]["properties"]["levels"]["instantiation_level_2"]["scale_info"][ASPECT]
     .update(scale_level=2), "beyond its max_scale_level 1"),
])
def test_a_vnfd_tacker_would_misscale_is_refused(change: Any, error: str) -> None:
    topo = copy.deepcopy(TOPOLOGY)
    change(topo["policies"])
    with pytest.raises(UserError, match=error):
        model = scaling.model(topo)
        scaling.bounds(model, "VDU_VROUTER", topo["node_templates"]["VDU_VROUTER"])


def test_scale_out_then_in_by_one_step_and_the_level_matches_the_servers(fake: Any) -> None:
    m, conn, _, tk = fake
    out = tacker_scale.scale(tk, "vr1", ASPECT, 1, False, 60)
    assert sent(m, "POST", r"/vnf_instances/inst-1/scale$")[0].json() == {
        "type": "SCALE_OUT", "aspectId": ASPECT, "numberOfSteps": 1}
    assert out["scale"] == {"aspect": ASPECT, "from": 0, "to": 1}
    assert [v["server"] for v in out["vnfcs"]] == ["srv-1", "srv-scaled-1"]
    assert "scaled VDU_VROUTER_scale: level 0 -> 1" in tacker_lcm.report(out, None, "text")
    inst = tk.show("inst-1")
    model = tacker_scale.model(ROOT, inst)  # from the instance's nfvcat mark: vnf-vrouter at its version
    _stack_servers(m, 2)
    (verdict,) = tacker_scale.level_verdicts(conn, inst, model)
    assert (verdict.subject, verdict.status) == ("VDU_VROUTER", PASS), verdict
    assert "level 1: the VNFD gives 2 instance(s); the stack has 2 server(s), Tacker reports 2" in verdict.detail

    back = tacker_scale.scale(tk, "vr1", ASPECT, 1, True, 60)
    assert sent(m, "POST", r"/scale$")[1].json()["type"] == "SCALE_IN"
    assert back["scale"] == {"aspect": ASPECT, "from": 1, "to": 0} and len(back["vnfcs"]) == 1
    _stack_servers(m, 1)
    assert [v.status for v in tacker_scale.level_verdicts(conn, tk.show("inst-1"), model)] == [PASS]


def test_a_stack_that_does_not_hold_the_reported_level_fails_the_verdict(fake: Any) -> None:
    m, conn, _, tk = fake
    tacker_scale.scale(tk, "vr1", ASPECT, 1, False, 60)
    _stack_servers(m, 1)  # Tacker says level 1 (2 VNFCs), Heat holds one server
    inst = tk.show("inst-1")
    (verdict,) = tacker_scale.level_verdicts(conn, inst, tacker_scale.model(ROOT, inst))
    assert verdict.status == FAIL and "the stack has 1 server(s), Tacker reports 2" in verdict.detail


@pytest.mark.parametrize("steps, scale_in, error", [
    (2, False, r"at scale level 0 of at most 1 \(max_scale_level\): scaling out by 2 step\(s\) would reach 2; "
               "nothing sent"),
    (1, True, r"scaling in by 1 step\(s\) would reach -1, below 0; nothing sent"),
    (0, False, r"--steps must be 1 or more"),
])
def test_a_scale_beyond_the_levels_is_refused_before_any_call(fake: Any, steps: int, scale_in: bool,
                                                               error: str) -> None:
    m, _, _, tk = fake
    with pytest.raises(UserError, match=error) as exc:
        tacker_scale.scale(tk, "vr1", ASPECT, steps, scale_in, 60)
    assert exc.value.exit_code == EXIT_USAGE
    assert not sent(m, "POST", r"/scale$")


def test_an_unknown_aspect_names_the_packages_aspects(fake: Any) -> None:
    m, _, _, tk = fake
    with pytest.raises(UserError, match=rf"vr1: no scaling aspect nope; its package's aspects: {ASPECT}"):
        tacker_scale.scale(tk, "vr1", "nope", 1, False, 60)
    assert not sent(m, "POST", r"/scale$")


def test_a_failed_scale_out_is_rolled_back(fake: Any) -> None:
    m, _, tacker, tk = fake
    tacker.outcome, tacker.reason = "FAILED_TEMP", "No valid host was found"
    with pytest.raises(UserError, match=r"FAILED_TEMP: No valid host was found; rolled back") as exc:
        tacker_scale.scale(tk, "vr1", ASPECT, 1, False, 60)
    assert exc.value.exit_code == EXIT_FINDINGS
    assert len(sent(m, "POST", r"/vnf_lcm_op_occs/op-2/rollback$")) == 1 and tacker.level == 0


def test_a_rerun_waits_for_the_interrupted_scale_instead_of_sending_another(fake: Any) -> None:
    m, _, tacker, tk = fake
    tacker.polls_before_done = 10**6
    with pytest.raises(UserError, match="still PROCESSING"):  # the first run gives up waiting (or is killed)
        tacker_scale.scale(tk, "vr1", ASPECT, 1, False, 0)
    tacker.polls_before_done = 0
    again = tacker_scale.scale(tk, "vr1", ASPECT, 1, False, 60)
    assert len(sent(m, "POST", r"/scale$")) == 1  # the first run's operation, waited for, not a second one
    assert again["scale"] == {"aspect": ASPECT, "from": 0, "to": 1, "resumed": "op-2"} and tacker.level == 1


def test_a_scale_left_failed_temp_is_retried_by_the_rerun(fake: Any) -> None:
    m, _, tacker, tk = fake
    tacker.outcome, tacker.reason = "FAILED_TEMP", "heat-engine went down"
    op_id = tk.start("inst-1", "scale", {"type": "SCALE_OUT", "aspectId": ASPECT, "numberOfSteps": 1})
    tk.wait(op_id, "scale", 60)  # a run killed here leaves it FAILED_TEMP
    tacker.outcome = "COMPLETED"
    again = tacker_scale.scale(tk, "vr1", ASPECT, 1, False, 60)
    assert len(sent(m, "POST", rf"/vnf_lcm_op_occs/{op_id}/retry$")) == 1
    assert len(sent(m, "POST", r"/scale$")) == 1 and again["scale"]["to"] == 1 and tacker.level == 1


def test_cli_scale_is_tacker_only_and_rejects_bad_options() -> None:
    from tests.conftest import nfvcat

    heat = nfvcat("scale", "chain-vrouter", "--aspect", "x", "--via", "heat")
    assert heat.returncode == 1 and "invalid choice: 'heat'" in heat.stderr
    no_aspect = nfvcat("scale", "vr1")
    assert no_aspect.returncode == 1 and "--aspect" in no_aspect.stderr and "Traceback" not in no_aspect.stderr
