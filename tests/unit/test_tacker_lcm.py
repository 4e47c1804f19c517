"""Tacker v2 VNF LCM (nfvcat.cloud.tacker_lcm, `instantiate|heal|terminate --via tacker`) against an HTTP-level
Tacker (tests.unit.cloudfake.TackerFake), and the dev cloud's registration as Tacker's default VIM."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
import requests_mock

from nfvcat.catalog import entries
from nfvcat.cloud import tacker_lcm
from nfvcat.core.errors import EXIT_ENGINE, EXIT_FINDINGS, UserError
from tests.conftest import ROOT
from tests.unit.cloudfake import HEAT, NEUTRON, NOVA, TACKER, TackerFake, _discovery, connection, sent

ENTRY = entries.load(ROOT / "vnfd" / "vnf-vrouter")
VNFD_ID = tacker_lcm.vnfd_id(ENTRY.dir, ENTRY.meta["template"])
NETS = {"nfv-sriov-left": "net-left-id", "nfv-sriov-right": "net-right-id"}


@pytest.fixture
def fake() -> Iterator[tuple[requests_mock.Mocker, Any, TackerFake]]:
    with requests_mock.Mocker() as m:
        _discovery(m)
        for name, nid in NETS.items():
            m.get(f"{NEUTRON}/networks/{name}", status_code=404)
            m.get(f"{NEUTRON}/networks?name={name}", json={"networks": [{"id": nid, "name": name}]})
        yield m, connection(nfv_orchestration_endpoint_override=TACKER), TackerFake(m, VNFD_ID)


def _tk(conn: Any, said: list[str]) -> tacker_lcm.Tacker:
    return tacker_lcm.Tacker(conn, said.append, poll=0)


def _req(**kw: Any) -> tacker_lcm.Request:
    return tacker_lcm.Request(**{"name": "vr1", "flavour": "default", "level": "instantiation_level_1",
                                 "ext_networks": {}, "additional": {"enable_frr": "true"}, **kw})


def test_instantiate_sends_the_sol003_request_and_reports_what_tacker_made(fake: Any) -> None:
    m, conn, _ = fake
    said: list[str] = []
    vnf = tacker_lcm.instantiate(conn, _tk(conn, said), ENTRY.dir, ENTRY.meta, _req(), 60)
    create = sent(m, "POST", r"/vnflcm/v2/vnf_instances$")[0]
    assert create.json()["vnfdId"] == VNFD_ID and create.headers["Version"] == "2.0.0"
    body = sent(m, "POST", r"/instantiate$")[0].json()
    assert body["flavourId"] == "default" and body["instantiationLevelId"] == "instantiation_level_1"
    links = {link["extCps"][0]["cpdId"]: link["resourceId"] for link in body["extVirtualLinks"]}
    assert links == {"CP_WAN": "net-left-id", "CP_LAN": "net-right-id"}  # the entry's ext_networks, by id
    assert body["additionalParams"] == {"enable_frr": "true", **tacker_lcm.USER_DATA}
    assert vnf["vnfcs"] == [{"vnfcInstanceId": "VDU_VROUTER-srv-1", "vduId": "VDU_VROUTER", "server": "srv-1"}]
    assert vnf["ext_cps"][0]["cpdId"] == "CP_WAN" and vnf["ext_cps"][0]["port"] == "port-wan"
    assert vnf["stack"] == "vnf-inst-1" and vnf["stack_id"] == "stack-1"
    assert any("instantiate vr1: PROCESSING" in s for s in said) and any("COMPLETED" in s for s in said)
    text = tacker_lcm.report(vnf, None, "text")
    assert "VNFC VDU_VROUTER-srv-1 (VDU_VROUTER): server srv-1" in text and "external CP CP_WAN: port port-wan" in text
    assert json.loads(tacker_lcm.report(vnf, None, "json")) == {"vnf": vnf}


def test_instantiate_marks_the_vnf_instance_with_its_entry_version_and_list_shows_it(fake: Any) -> None:
    from nfvcat.cloud import deployed

    m, conn, _ = fake
    tacker_lcm.instantiate(conn, _tk(conn, []), ENTRY.dir, ENTRY.meta, _req(), 60)
    mark = f"nfvcat:{ENTRY.name}@{ENTRY.version}"
    assert sent(m, "POST", r"/vnflcm/v2/vnf_instances$")[0].json()["metadata"] == {"nfvcat": mark}
    rows = deployed.vnf_instances(conn)
    assert [(r.via, r.name, r.entry, r.version, r.status) for r in rows] == [
        ("tacker", "vr1", ENTRY.name, ENTRY.version, "INSTANTIATED")]


def test_instantiate_is_idempotent(fake: Any) -> None:
    m, conn, _ = fake
    tk = _tk(conn, [])
    first = tacker_lcm.instantiate(conn, tk, ENTRY.dir, ENTRY.meta, _req(), 60)
    again = tacker_lcm.instantiate(conn, tk, ENTRY.dir, ENTRY.meta, _req(), 60)
    assert again == first
    assert len(sent(m, "POST", r"/vnf_instances$")) == 1 and len(sent(m, "POST", r"/instantiate$")) == 1


def test_a_failed_instantiate_is_rolled_back_and_leaves_no_instance(fake: Any) -> None:
    m, conn, tacker = fake
    tacker.outcome, tacker.reason = "FAILED_TEMP", "Grant failed: No vimConnectionInfo"
    with pytest.raises(UserError, match=r"FAILED_TEMP: Grant failed: No vimConnectionInfo; rolled back") as exc:
        tacker_lcm.instantiate(conn, _tk(conn, []), ENTRY.dir, ENTRY.meta, _req(), 60)
    assert exc.value.exit_code == EXIT_FINDINGS
    assert len(sent(m, "POST", r"/vnf_lcm_op_occs/op-1/rollback$")) == 1
    assert tacker.instances == {}


def test_a_rejected_instantiate_leaves_no_instance(fake: Any) -> None:
    m, conn, tacker = fake
    m.post(re.compile(r"/vnf_instances/[^/]+/instantiate$"), status_code=400,
           json={"status": 400, "detail": "flavourId nope not found in VNFD"})
    with pytest.raises(UserError, match=r"HTTP 400: flavourId nope not found"):
        tacker_lcm.instantiate(conn, _tk(conn, []), ENTRY.dir, ENTRY.meta, _req(flavour="default"), 60)
    assert tacker.instances == {}


def test_no_onboarded_package_is_reported_before_anything_is_created(fake: Any) -> None:
    m, conn, _ = fake
    m.get(f"{TACKER}/vnfpkgm/v1/vnf_packages", json=[])
    with pytest.raises(UserError, match=r"no onboarded, enabled VNF package of vnfdId") as exc:
        tacker_lcm.instantiate(conn, _tk(conn, []), ENTRY.dir, ENTRY.meta, _req(), 60)
    assert exc.value.exit_code == EXIT_ENGINE
    assert not sent(m, "POST", r"/vnf_instances")


def test_ext_networks_must_name_external_cps(fake: Any) -> None:
    _, conn, _ = fake
    with pytest.raises(UserError, match=r"not an external CP of the flavour: CP_MGMT"):
        tacker_lcm.instantiate(conn, _tk(conn, []), ENTRY.dir, ENTRY.meta, _req(ext_networks={"CP_MGMT": "x"}), 60)
    assert tacker_lcm.external_cps(ENTRY.dir, ENTRY.meta["template"], "default") == ["CP_LAN", "CP_WAN"]


def test_additional_params_are_the_basehot_parameters(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NFVCAT_SECRET_KEY_NAME", "ops")
    assert tacker_lcm.additional_params(ENTRY.dir, {"enable_frr": "true"}, None) == {"enable_frr": "true",
                                                                                   "key_name": "ops"}
    with pytest.raises(UserError, match=r"not parameters of the VNF's BaseHOT: data_plane"):
        tacker_lcm.additional_params(ENTRY.dir, {"data_plane": "ovs-dpdk"}, None)


def test_heal_one_vnfc_by_the_id_tacker_reports(fake: Any) -> None:
    m, conn, _ = fake
    tk = _tk(conn, [])
    tacker_lcm.instantiate(conn, tk, ENTRY.dir, ENTRY.meta, _req(), 60)
    with pytest.raises(UserError, match=r"no VNFC VDU_VROUTER-0; Tacker reports VDU_VROUTER-srv-1"):
        tacker_lcm.heal(tk, "vr1", "VDU_VROUTER-0", 60)
    after = tacker_lcm.heal(tk, "vr1", "VDU_VROUTER-srv-1", 60)
    assert sent(m, "POST", r"/heal$")[0].json() == {"vnfcInstanceId": ["VDU_VROUTER-srv-1"], "cause": "nfvcat heal"}
    assert after["healed"] == {"vnfc": "VDU_VROUTER-srv-1", "server": "srv-1",
                               "new_vnfc": "VDU_VROUTER-srv-1-healed", "new_server": "srv-1-healed"}


def test_heal_of_an_unknown_instance_is_a_usage_error(fake: Any) -> None:
    _, conn, _ = fake
    with pytest.raises(UserError, match=r"no VNF instance named nope") as exc:
        tacker_lcm.heal(_tk(conn, []), "nope", "x", 60)
    assert exc.value.exit_code == 1


def _stack_resources(m: requests_mock.Mocker, left: set[str]) -> None:
    made = [("OS::Nova::Server", "srv-1", NOVA, "servers"), ("OS::Neutron::Port", "port-wan", NEUTRON, "ports"),
            ("OS::Neutron::Net", "net-mgmt", NEUTRON, "networks")]
    m.get(f"{HEAT}/stacks/vnf-inst-1/stack-1/resources?nested_depth=5",
          json={"resources": [{"resource_type": t, "physical_resource_id": rid} for t, rid, _, _ in made]})
    m.get(f"{HEAT}/stacks/vnf-inst-1/stack-1", status_code=404)
    for _, rid, base, path in made:
        m.get(f"{base}/{path}/{rid}", status_code=200 if rid in left else 404, json={})


def test_terminate_deletes_the_instance_and_proves_nothing_is_left(fake: Any) -> None:
    m, conn, tacker = fake
    tk = _tk(conn, [])
    tacker_lcm.instantiate(conn, tk, ENTRY.dir, ENTRY.meta, _req(), 60)
    _stack_resources(m, left=set())
    result = tacker_lcm.terminate(conn, tk, "vr1", 60)
    assert sent(m, "POST", r"/terminate$")[0].json() == {"terminationType": "FORCEFUL"}
    assert result == {"vnf_instance": "inst-1", "name": "vr1", "stack": "vnf-inst-1", "resources": 3,
                      "left_behind": []}
    assert tacker.instances == {}
    assert tacker_lcm.terminate(conn, tk, "vr1", 60) is None  # nothing to terminate: idempotent


def test_terminate_names_what_is_left_behind(fake: Any) -> None:
    m, conn, _ = fake
    tk = _tk(conn, [])
    tacker_lcm.instantiate(conn, tk, ENTRY.dir, ENTRY.meta, _req(), 60)
    _stack_resources(m, left={"port-wan"})
    result = tacker_lcm.terminate(conn, tk, "vr1", 60)
    assert result is not None and result["left_behind"] == ["OS::Neutron::Port port-wan"]


# ---- the dev cloud as Tacker's default VIM ----------------------------------------------------------------------

AUTH = {"auth_url": "http://127.0.0.1:5000", "username": "admin", "password": "pw", "project_name": "admin",
        "user_domain_name": "Default", "project_domain_name": "Default"}


def _client() -> Any:
    from keystoneauth1 import noauth, session

    from nfvcat_testbeds.devcloud import tacker

    return tacker.tacker_client(session.Session(auth=noauth.NoAuth(endpoint=TACKER)))


def test_devcloud_registers_itself_as_the_default_vim_once() -> None:
    from nfvcat_testbeds.devcloud import tacker

    vims: list[dict[str, Any]] = []

    def create(req: Any, ctx: Any) -> dict[str, Any]:
        vim = {**req.json()["vim"], "id": f"vim-{len(vims) + 1}"}
        vim.pop("auth_cred")
        vims.append(vim)
        ctx.status_code = 201
        return {"vim": vim}

    with requests_mock.Mocker() as m:
        m.get(re.compile(rf"^{TACKER}/v1.0/vims(\.json)?"), json=lambda req, ctx: {"vims": vims})
        m.post(re.compile(rf"^{TACKER}/v1.0/vims(\.json)?$"), json=create)
        first = tacker.register_vim(_client(), AUTH)
        again = tacker.register_vim(_client(), AUTH)
        posted = sent(m, "POST", r"/vims")
    assert first == {"vim_id": "vim-1", "registered": True} and again == {"vim_id": "vim-1", "registered": False}
    assert len(posted) == 1
    body = posted[0].json()["vim"]
    # Tacker stores the auth URL with /v3: sent so, and a stored one compares equal on the next `up`
    assert body["is_default"] is True and body["type"] == "openstack" and body["auth_url"] == "http://127.0.0.1:5000/v3"
    assert body["auth_cred"]["password"] == "pw" and body["vim_project"]["name"] == "admin"


def test_a_stale_vim_of_our_name_is_replaced() -> None:
    from nfvcat_testbeds.devcloud import tacker

    with requests_mock.Mocker() as m:
        m.get(re.compile(rf"^{TACKER}/v1.0/vims(\.json)?"), json={"vims": [
            {"id": "old", "name": tacker.VIM_NAME, "is_default": False, "auth_url": "http://127.0.0.1:5000/v3"}]})
        m.delete(re.compile(rf"^{TACKER}/v1.0/vims/old(\.json)?$"), status_code=204)
        m.post(re.compile(rf"^{TACKER}/v1.0/vims(\.json)?$"), status_code=201, json={"vim": {"id": "new"}})
        assert tacker.register_vim(_client(), AUTH) == {"vim_id": "new", "registered": True}
        assert len(sent(m, "DELETE", r"/vims/old")) == 1


def test_devcloud_tacker_keeps_vim_keys_in_the_state_dir_and_neutron_has_vxlan(tmp_path: Any) -> None:
    from nfvcat_testbeds.devcloud import configs, tacker
    from nfvcat_testbeds.devcloud.state import State

    state = State(tmp_path / "dc")
    keys = tacker.vim_keys(state)
    assert keys.is_dir() and keys.is_relative_to(state.root)
    ml2 = configs.neutron(state)["ml2"].read_text()
    assert "tenant_network_types = vxlan" in ml2 and f"vni_ranges = {configs.VNI_RANGES}" in ml2


def test_cli_rejects_a_parameter_the_basehot_does_not_take_before_any_cloud_call() -> None:
    from tests.conftest import nfvcat

    proc = nfvcat("instantiate", "--via", "tacker", "vnfd/vnf-vrouter", "-P", "data_plane=ovs-dpdk",
                  "--os-cloud", "no-such-cloud")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith("nfvcat: error: not parameters of the VNF's BaseHOT: data_plane")
    assert "Traceback" not in proc.stderr
    heal = nfvcat("heal", "vr1", "--via", "heat")  # Heat heals a VNF by its server, Tacker a VNFC
    assert heal.returncode == 1 and "heal --via heat: --server VNF is required" in heal.stderr
    heal = nfvcat("heal", "vr1", "--via", "tacker", "--os-cloud", "no-such-cloud")
    assert heal.returncode == 1 and "heal --via tacker: --vnfc ID is required" in heal.stderr


def test_an_operation_that_does_not_end_in_time_says_so_and_names_it(fake: Any) -> None:
    _, conn, tacker = fake
    tacker.polls_before_done = 10**6
    with pytest.raises(UserError, match=r"instantiate vr1: still PROCESSING after 0 s \(LCM operation op-1\)") as exc:
        tacker_lcm.instantiate(conn, _tk(conn, []), ENTRY.dir, ENTRY.meta, _req(), 0)
    assert exc.value.exit_code == EXIT_ENGINE
