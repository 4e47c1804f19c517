"""nfvcat.cloud without a cloud: stack convergence, failure clean-up, delete-and-verify and onboarding's diff,
against an OpenStack faked at the HTTP level (tests/unit/cloudfake.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nfvcat.cloud import onboarding
from nfvcat.cloud.stacks import Bundle, Stacks, converge, delete_and_verify, stack_parameters
from nfvcat.core.errors import EXIT_ENGINE, EXIT_FINDINGS, UserError
from tests.conftest import ROOT
from tests.unit.cloudfake import CINDER, HEAT, NEUTRON, NOVA, sent

BUNDLE = Bundle(template={"heat_template_version": "2021-04-16", "resources": {}}, files={}, environment={})


def stack(status: str, sid: str = "s1", name: str = "chain", updated: str | None = None) -> dict[str, Any]:
    return {"stack": {"id": sid, "stack_name": name, "stack_status": status, "updated_time": updated,
                      "stack_status_reason": status}}


def quiet(messages: list[str]) -> Any:
    return messages.append


def _no_events(m: Any, sid: str = "s1") -> None:
    m.get(f"{HEAT}/stacks/chain/{sid}/events", json={"events": []})


def test_converge_creates_a_missing_stack_and_waits(cloud: Any) -> None:
    m, conn = cloud
    m.get(f"{HEAT}/stacks?name=chain", json={"stacks": []})
    m.post(f"{HEAT}/stacks", json={"stack": {"id": "s1"}}, status_code=201)
    _no_events(m)
    m.get(f"{HEAT}/stacks/chain/s1", json=stack("CREATE_COMPLETE"))
    said: list[str] = []
    assert converge(Stacks(conn, quiet(said)), "chain", BUNDLE, {"vlan": "120"}, timeout=30) == "s1"
    body = sent(m, "POST", r"/stacks$")[0].json()
    assert body["stack_name"] == "chain" and body["parameters"] == {"vlan": "120"}
    assert body["disable_rollback"] is True  # we delete a failed stack ourselves, with its reason
    assert not sent(m, "PUT", "/stacks") and not sent(m, "DELETE", "/stacks")
    assert "chain: creating" in said


def test_a_failed_create_is_deleted_and_the_deepest_reason_raised(cloud: Any) -> None:
    m, conn = cloud
    m.get(f"{HEAT}/stacks?name=chain", json={"stacks": []})
    m.post(f"{HEAT}/stacks", json={"stack": {"id": "s1"}}, status_code=201)
    _no_events(m)
    m.get(f"{HEAT}/stacks/chain/s1", [{"json": stack("CREATE_FAILED")}, {"status_code": 404, "json": {}}])
    m.get(f"{HEAT}/stacks/chain/s1/resources", json={"resources": [
        {"resource_name": "vnf", "resource_type": "chain-vnf.yaml", "resource_status": "CREATE_FAILED",
         "resource_status_reason": "resources.vnf: nested failed"},
        {"resource_name": "server", "resource_type": "OS::Nova::Server", "resource_status": "CREATE_FAILED",
         "resource_status_reason": "ResourceInError: Went to status ERROR due to \"No valid host was found\""}]})
    m.delete(f"{HEAT}/stacks/chain/s1", status_code=204)
    with pytest.raises(UserError) as err:
        converge(Stacks(conn, quiet([])), "chain", BUNDLE, {}, timeout=30)
    assert err.value.exit_code == EXIT_FINDINGS
    assert "server (OS::Nova::Server)" in str(err.value) and "No valid host" in str(err.value)
    assert "nothing left" in str(err.value)
    assert len(sent(m, "DELETE", "/stacks/chain/s1")) == 1


def test_a_complete_stack_is_updated_in_place(cloud: Any) -> None:
    m, conn = cloud
    m.get(f"{HEAT}/stacks?name=chain", json={"stacks": [stack("CREATE_COMPLETE")["stack"]]})
    _no_events(m)
    m.get(f"{HEAT}/stacks/chain/s1", [{"json": stack("CREATE_COMPLETE")},
                                      {"json": stack("UPDATE_COMPLETE", updated="2026-11-23T12:00:00Z")}])
    m.put(f"{HEAT}/stacks/chain/s1", status_code=202)
    assert converge(Stacks(conn, quiet([])), "chain", BUNDLE, {}, timeout=30) == "s1"
    assert len(sent(m, "PUT", "/stacks/chain/s1")) == 1
    assert not sent(m, "POST", r"/stacks$") and not sent(m, "DELETE", "/stacks")


def test_a_failed_stack_is_replaced(cloud: Any) -> None:
    m, conn = cloud
    m.get(f"{HEAT}/stacks?name=chain", json={"stacks": [stack("CREATE_FAILED", sid="old")["stack"]]})
    _no_events(m, "old")
    _no_events(m, "s1")
    m.delete(f"{HEAT}/stacks/chain/old", status_code=204)
    m.get(f"{HEAT}/stacks/chain/old", status_code=404, json={})
    m.post(f"{HEAT}/stacks", json={"stack": {"id": "s1"}}, status_code=201)
    m.get(f"{HEAT}/stacks/chain/s1", json=stack("CREATE_COMPLETE"))
    assert converge(Stacks(conn, quiet([])), "chain", BUNDLE, {}, timeout=30) == "s1"
    order = [(r.method, r.path) for r in m.request_history if r.method in ("DELETE", "POST")]
    assert order == [("DELETE", "/v1/p/stacks/chain/old"), ("POST", "/v1/p/stacks")]


def _deleted_stack(m: Any, resources: list[dict[str, str]]) -> None:
    m.get(f"{HEAT}/stacks?name=chain", json={"stacks": [stack("CREATE_COMPLETE")["stack"]]})
    m.get(f"{HEAT}/stacks/chain/s1/resources", json={"resources": resources})
    m.delete(f"{HEAT}/stacks/chain/s1", status_code=204)
    _no_events(m)
    m.get(f"{HEAT}/stacks/chain/s1", status_code=404, json={})


def test_delete_and_verify_names_what_is_left(cloud: Any) -> None:
    m, conn = cloud
    _deleted_stack(m, [{"resource_type": "OS::Nova::Server", "physical_resource_id": "srv"},
                       {"resource_type": "OS::Neutron::Port", "physical_resource_id": "prt"},
                       {"resource_type": "OS::Heat::CloudConfig", "physical_resource_id": "cc"}])
    m.get(f"{NOVA}/servers/srv", status_code=404, json={})
    m.get(f"{NEUTRON}/ports/prt", json={"port": {"id": "prt"}})
    assert delete_and_verify(conn, Stacks(conn, quiet([])), "chain", 30) == ["OS::Neutron::Port prt"]


def test_delete_and_verify_names_sfc_resources_and_server_groups_left(cloud: Any) -> None:
    from tests.unit.cloudfake import SfcApi

    m, conn = cloud
    sfc = SfcApi(m)
    pp = sfc.add("port_pairs", {"ingress": "a", "egress": "b"})
    ppg = sfc.add("port_pair_groups", {"port_pairs": [pp["id"]]})
    _deleted_stack(m, [{"resource_type": "OS::Neutron::PortPair", "physical_resource_id": pp["id"]},
                       {"resource_type": "OS::Neutron::PortPairGroup", "physical_resource_id": ppg["id"]},
                       {"resource_type": "OS::Neutron::PortChain", "physical_resource_id": "gone"},
                       {"resource_type": "OS::Nova::ServerGroup", "physical_resource_id": "sg"}])
    m.get(f"{NOVA}/os-server-groups/sg", status_code=404, json={})
    left = delete_and_verify(conn, Stacks(conn, quiet([])), "chain", 30)
    assert left == [f"OS::Neutron::PortPair {pp['id']}", f"OS::Neutron::PortPairGroup {ppg['id']}"]


def test_delete_and_verify_fails_when_an_api_cannot_be_asked(cloud: Any) -> None:
    m, conn = cloud
    _deleted_stack(m, [{"resource_type": "OS::Cinder::Volume", "physical_resource_id": "vol"}])
    m.get(f"{CINDER}/volumes/vol", status_code=503, json={"message": "down"})
    with pytest.raises(UserError) as err:  # "could not look" is not "nothing leaked"
        delete_and_verify(conn, Stacks(conn, quiet([])), "chain", 30)
    assert err.value.exit_code == EXIT_ENGINE and "503" in str(err.value)


def test_delete_and_verify_of_no_stack_is_none(cloud: Any) -> None:
    m, conn = cloud
    m.get(f"{HEAT}/stacks?name=chain", json={"stacks": []})
    assert delete_and_verify(conn, Stacks(conn, quiet([])), "chain", 30) is None


def test_stack_parameters_day0_given_and_secrets(tmp_path: Path) -> None:
    template = {"parameters": {"use_config_drive": {}, "psk": {}, "name": {}}}
    secrets = tmp_path / "secrets.yaml"
    secrets.write_text("name: from-file\n")
    params = stack_parameters(template, {"name": "given"}, "metadata", str(secrets),
                              environ={"NFVCAT_SECRET_PSK": "s3cret", "NFVCAT_SECRET_OTHER": "x"})
    assert params == {"use_config_drive": "false", "name": "from-file", "psk": "s3cret"}
    secrets.write_text("- a list\n")
    with pytest.raises(UserError, match="expected a mapping"):
        stack_parameters(template, {}, secrets_file=str(secrets), environ={})


# ---- onboarding: flavors -------------------------------------------------------------------------------------

def _catalog(tmp_path: Path, flavors: dict[str, str]) -> Path:
    (tmp_path / "templates").mkdir()
    for entry, text in flavors.items():
        d = tmp_path / "flavors" / entry
        d.mkdir(parents=True)
        (d / "flavor.yaml").write_text(text)
    return tmp_path


SAME = "name: f.same\nvcpus: 2\nram: 2048\ndisk: 10\nextra_specs: {hw:cpu_policy: dedicated}\n"
SPECS = ("name: f.specs\nvcpus: 2\nram: 2048\ndisk: 10\n"
         "extra_specs: {hw:cpu_policy: dedicated, hw:vif_multiqueue_enabled: true}\n")
NEW = "name: f.new\nvcpus: 4\nram: 4096\ndisk: 20\nextra_specs: {hw:mem_page_size: 1GB}\n"


def _nova_flavor(fid: str, name: str, specs: dict[str, str], vcpus: int = 2) -> dict[str, Any]:
    return {"id": fid, "name": name, "vcpus": vcpus, "ram": 2048, "disk": 10, "os-flavor-access:is_public": True,
            "description": None, "extra_specs": specs}


def test_onboarding_flavors_diff(cloud: Any, tmp_path: Path) -> None:
    m, conn = cloud
    root = _catalog(tmp_path, {"same": SAME, "specs": SPECS, "new": NEW})
    m.get(f"{NOVA}/flavors/detail", json={"flavors": [
        _nova_flavor("1", "f.same", {"hw:cpu_policy": "dedicated"}),
        _nova_flavor("2", "f.specs", {"hw:cpu_policy": "dedicated", "hw:stale": "1"})]})
    dry = onboarding.flavors(conn, root, dry_run=True)
    assert {a.name: a.verb for a in dry} == {"f.new": "create", "f.same": "unchanged", "f.specs": "update"}
    assert not [r for r in m.request_history if r.method != "GET"]  # a dry run changes nothing

    m.post(f"{NOVA}/flavors/2/os-extra_specs", json={"extra_specs": {}})
    m.delete(f"{NOVA}/flavors/2/os-extra_specs/hw:stale", status_code=200)
    m.post(f"{NOVA}/flavors", json={"flavor": {"id": "3"}})
    m.post(f"{NOVA}/flavors/3/os-extra_specs", json={"extra_specs": {}})
    onboarding.flavors(conn, root, dry_run=False)
    # YAML's true reaches Nova as the string Nova's validators accept
    assert sent(m, "POST", "/flavors/2/os-extra_specs")[0].json() == {
        "extra_specs": {"hw:vif_multiqueue_enabled": "true"}}
    assert len(sent(m, "DELETE", "/flavors/2/os-extra_specs/hw:stale")) == 1
    assert sent(m, "POST", r"/flavors$")[0].json()["flavor"]["name"] == "f.new"
    assert all(r.headers["OpenStack-API-Version"] == "compute 2.86" for r in sent(m, "POST", "/flavors"))


def test_onboarding_flavors_second_run_changes_nothing(cloud: Any, tmp_path: Path) -> None:
    m, conn = cloud
    root = _catalog(tmp_path, {"specs": SPECS})
    m.get(f"{NOVA}/flavors/detail", json={"flavors": [_nova_flavor(
        "2", "f.specs", {"hw:cpu_policy": "dedicated", "hw:vif_multiqueue_enabled": "true"})]})
    assert [a.verb for a in onboarding.flavors(conn, root, dry_run=False)] == ["unchanged"]
    assert not [r for r in m.request_history if r.method != "GET"]


def test_onboarding_replaces_a_flavor_whose_fields_differ(cloud: Any, tmp_path: Path) -> None:
    m, conn = cloud
    root = _catalog(tmp_path, {"same": SAME})
    m.get(f"{NOVA}/flavors/detail", json={"flavors": [_nova_flavor("1", "f.same", {}, vcpus=8)]})
    m.delete(f"{NOVA}/flavors/1", status_code=202)
    m.post(f"{NOVA}/flavors", json={"flavor": {"id": "9"}})
    m.post(f"{NOVA}/flavors/9/os-extra_specs", json={"extra_specs": {}})
    actions = onboarding.flavors(conn, root, dry_run=False)
    assert [(a.verb, a.detail) for a in actions] == [("replace", "fields differ: vcpus")]
    assert [r.method for r in m.request_history if r.method != "GET"] == ["DELETE", "POST", "POST"]


def test_a_refused_extra_spec_leaves_no_half_made_flavor(cloud: Any, tmp_path: Path) -> None:
    m, conn = cloud
    root = _catalog(tmp_path, {"new": NEW})
    m.get(f"{NOVA}/flavors/detail", json={"flavors": []})
    m.post(f"{NOVA}/flavors", json={"flavor": {"id": "3"}})
    m.post(f"{NOVA}/flavors/3/os-extra_specs", status_code=400,
           json={"badRequest": {"message": "Validation failed; 'hw:mem_page_size' is not valid"}})
    m.delete(f"{NOVA}/flavors/3", status_code=202)
    with pytest.raises(UserError, match="hw:mem_page_size"):
        onboarding.flavors(conn, root, dry_run=False)
    assert len(sent(m, "DELETE", "/flavors/3")) == 1


# ---- onboarding: provider networks -----------------------------------------------------------------------------

def test_onboarding_networks_is_idempotent_by_content_tag(cloud: Any) -> None:
    m, conn = cloud
    m.get(f"{HEAT}/stacks?name={onboarding.NETWORK_STACK}", json={"stacks": []})
    m.post(f"{HEAT}/stacks", json={"stack": {"id": "n1"}}, status_code=201)
    m.get(f"{HEAT}/stacks/{onboarding.NETWORK_STACK}/n1/events", json={"events": []})
    m.get(f"{HEAT}/stacks/{onboarding.NETWORK_STACK}/n1",
          json=stack("CREATE_COMPLETE", sid="n1", name=onboarding.NETWORK_STACK))
    first = onboarding.networks(conn, ROOT, dry_run=False, say=quiet([]), timeout=30)
    assert [a.verb for a in first] == ["create"]
    tag = sent(m, "POST", r"/stacks$")[0].json()["tags"]
    assert tag.startswith("nfvcat-sha-")

    m.reset_mock()
    full = {**stack("CREATE_COMPLETE", sid="n1", name=onboarding.NETWORK_STACK)["stack"], "tags": [tag]}
    m.get(f"{HEAT}/stacks?name={onboarding.NETWORK_STACK}", json={"stacks": [full]})
    m.get(f"{HEAT}/stacks/{onboarding.NETWORK_STACK}/n1", json={"stack": full})
    again = onboarding.networks(conn, ROOT, dry_run=False, say=quiet([]), timeout=30)
    assert [a.verb for a in again] == ["unchanged"]
    assert not [r for r in m.request_history if r.method != "GET"]
    assert json.dumps([a.as_dict() for a in again])
