"""Which servers Heat's preview replaces that an update leaves alone (nfvcat.cloud.server_changes): a chain whose
vRouter is a nested template taking its ports' MAC addresses into its user data, as chain-vrouter does."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from nfvcat import cli
from nfvcat.catalog import releases
from nfvcat.cloud import server_changes as sc
from tests.unit.cloudfake import HEAT
from tests.unit.test_day2 import DemoStack, heat, repo  # noqa: F401 (fixtures)

VNF = "file:///catalog/vnf.yaml"
DAY0 = "file:///catalog/user-data.yaml"
PORT_AND_SERVER = """resources:
  port:
    type: OS::Neutron::Port
    properties: {network: {get_param: network}}
  server:
    type: OS::Nova::Server
    properties:
      image: {get_param: image}
      networks: [{port: {get_resource: port}}]
      user_data: {str_replace: {template: TEMPLATE, params: {__MAC__: {get_attr: [port, mac_address]}}}}
"""  # a port and a server taking its MAC into its user data (TEMPLATE: the user data's template)


def bundle(image_default: str = "img-1.1.0", day0: str = "#cloud-config\nmac: __MAC__\n",
           left: Any = None) -> tuple[dict[str, Any], dict[str, str]]:
    top = {"heat_template_version": "2021-04-16",
           "parameters": {"image": {"type": "string", "default": image_default}},
           "resources": {
               "left_net": {"type": "OS::Neutron::Net"},
               "vrouter": {"type": VNF, "properties": {"image": {"get_param": "image"},
                                                       "network": left or {"get_resource": "left_net"}}}}}
    vnf = ("heat_template_version: 2021-04-16\nparameters:\n  image: {type: string}\n  network: {type: string}\n"
           + PORT_AND_SERVER.replace("TEMPLATE", "{get_file: " + DAY0 + "}"))
    return top, {VNF: vnf, DAY0: day0}


def unchanged(old: tuple[dict[str, Any], dict[str, str]], new: tuple[dict[str, Any], dict[str, str]],
              given: dict[str, Any], new_given: dict[str, Any] | None = None,
              changed: dict[tuple[str, str], str] | None = None) -> bool:
    return sc.unchanged(sc.Scope(old[0], given, old[1]), sc.Scope(new[0], given if new_given is None else new_given,
                                                                    new[1]),
                        ["vrouter"], "server", {("", "vrouter"): "updated", **(changed or {})})


def test_only_the_images_default_changed_for_a_stack_given_its_image_the_server_stays() -> None:
    assert unchanged(bundle(), bundle(image_default="img-1.1.1"), {"image": "site-image"})


def test_the_default_the_stack_runs_on_changed_the_server_goes() -> None:
    assert not unchanged(bundle(), bundle(image_default="img-1.1.1"), {})


def test_a_new_parameter_value_reaches_the_server() -> None:
    assert not unchanged(bundle(), bundle(), {"image": "a"}, {"image": "b"})


def test_new_day0_in_the_file_the_user_data_takes_the_server_goes() -> None:
    assert not unchanged(bundle(), bundle(day0="#cloud-config\nmac: __MAC__\nnew: 1\n"), {"image": "x"})


@pytest.mark.parametrize("how", ["replaced", "updated", "added"])
def test_a_referenced_port_that_changes_keeps_heats_verdict(how: str) -> None:
    assert not unchanged(bundle(), bundle(), {"image": "x"}, changed={("vrouter", "port"): how})


def test_a_changed_resource_of_the_parent_the_nested_stack_takes_keeps_heats_verdict() -> None:
    # the server's port is on the parent's network: the network replaced, the port's MAC may change
    old, new = bundle(), bundle()
    assert unchanged(old, new, {"image": "x"}, changed={("", "left_net"): "unchanged-but-named"}) is False
    assert unchanged(old, new, {"image": "x"}, changed={("vrouter", "other"): "updated"})


def test_a_reference_from_the_parent_is_looked_up_in_the_parents_scope() -> None:
    old, new = bundle(left={"get_attr": ["left_net", "name"]}), bundle(left={"get_attr": ["left_net", "name"]})
    assert unchanged(old, new, {"image": "x"})
    assert not unchanged(old, new, {"image": "x"}, changed={("", "left_net"): "replaced"})
    assert unchanged(old, new, {"image": "x"}, changed={("vrouter", "left_net"): "replaced"})  # another scope's


def test_a_server_no_bundle_defines_or_an_unknown_parent_keeps_heats_verdict() -> None:
    a = bundle()
    assert not sc.unchanged(sc.Scope(a[0], {}, a[1]), sc.Scope(a[0], {}, a[1]), ["vrouter"], "gone", {})
    assert not sc.unchanged(sc.Scope(a[0], {}, a[1]), sc.Scope(a[0], {}, a[1]), ["nope"], "server", {})
    broken = copy.deepcopy(a)
    broken[1][VNF] = "{not yaml"
    assert not sc.unchanged(sc.Scope(a[0], {}, a[1]), sc.Scope(broken[0], {}, broken[1]), ["vrouter"], "server", {})


def test_conditions_decided_by_the_parameters_are_resolved() -> None:
    def tpl(flag: str) -> dict[str, Any]:
        return {"parameters": {"x": {"type": "boolean", "default": flag}},
                "conditions": {"on": {"equals": [{"get_param": "x"}, "true"]}},
                "resources": {"server": {"type": "OS::Nova::Server",
                                         "properties": {"key_name": {"if": ["on", "k"]}}}}}

    assert sc.unchanged(sc.Scope(tpl("false"), {"x": "true"}, {}), sc.Scope(tpl("true"), {"x": "true"}, {}), [],
                        "server", {})
    assert not sc.unchanged(sc.Scope(tpl("false"), {}, {}), sc.Scope(tpl("true"), {}, {}), [], "server", {})


# ---- in the plan of nfvcat upgrade ----------------------------------------------------------------------------

SERVER_TEMPLATE = ("heat_template_version: 2021-04-16\ndescription: DESCRIPTION\nparameters:\n"
                   "  network: {type: string}\n  image: {type: string, default: IMAGE}\n"
                   + PORT_AND_SERVER.replace("TEMPLATE", '"mac: __MAC__"'))


def release(root: Path, version: str, image: str, description: str) -> None:
    d = root / "templates" / "heat" / "demo"
    (d / "demo.yaml").write_text(SERVER_TEMPLATE.replace("IMAGE", image).replace("DESCRIPTION", description))
    (d / "entry.yaml").write_text(f"name: demo\nversion: {version}\nkind: heat\ndescription: A demo.\n"
                                  "template: demo.yaml\n")
    log = d / "CHANGELOG.md"
    head, _, rest = log.read_text().partition("\n")
    log.write_text(f"{head}\n\n## {version}\n\n- {description}\n{rest}")
    releases.write_record(root, releases.snapshot(root))
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(root), "commit", "-qm", f"demo {version}"], check=True)


@pytest.fixture
def servers(heat: Any, repo: Path) -> Any:  # noqa: F811 (fixtures)
    """demo 3.0.0 (a server taking its port's MAC into its user data, image img-a by default), 3.0.1 (only the
    description changes) and 3.1.0 (image img-b by default); the stack runs 3.0.0, given only its network."""
    release(repo, "3.0.0", "img-a", "A server.")
    release(repo, "3.0.1", "img-a", "The description.")
    release(repo, "3.1.0", "img-b", "Image img-b.")
    stack = DemoStack(heat, "3.0.0", ["CREATE_COMPLETE"])
    heat.get(f"{HEAT}/stacks/demo/s1/resources", json={"resources": [
        {"resource_name": "server", "parent_resource": None, "physical_resource_id": "srv-1"},
        {"resource_name": "port", "parent_resource": None, "physical_resource_id": "port-1"}]})
    return stack


SERVER = {"resource_name": "server", "resource_type": "OS::Nova::Server"}


def test_a_server_heats_preview_replaces_though_both_versions_define_it_alike_stays(servers: Any,
                                                                                    capsys: Any) -> None:
    servers.preview["replaced"] = [SERVER]  # as Heat previews it: the new stack's get_attr resolves to None
    assert cli.main(["upgrade", "demo", "--to", "3.0.1", "--dry-run", "--os-cloud", "x", "--format", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)["plan"]
    assert plan["downtime"] == [] and len(plan["preview_corrected"]) == 1
    assert plan["preview_corrected"][0].startswith("server: Heat's preview replaces it, but both versions define")


def test_a_server_whose_image_default_changes_is_named_rebuilt_unless_the_stack_was_given_its_image(
        servers: Any, heat: Any, capsys: Any) -> None:  # noqa: F811 (fixture)
    servers.preview["updated"] = [SERVER]
    assert cli.main(["upgrade", "demo", "--to", "3.1.0", "--dry-run", "--os-cloud", "x"]) == 0
    assert "Servers that go down: \n  server (server srv-1): rebuilt (image)\n" in capsys.readouterr().out
    heat.get(f"{HEAT}/stacks/demo/s1/environment", json={"parameters": {"network": "n", "image": "site"}})
    assert cli.main(["upgrade", "demo", "--to", "3.1.0", "--dry-run", "--os-cloud", "x"]) == 0
    assert "Servers that go down: none\n" in capsys.readouterr().out
    # -P image= of the update reaches the server again
    assert cli.main(["upgrade", "demo", "--to", "3.1.0", "--dry-run", "--os-cloud", "x", "-P", "image=other"]) == 0
    assert "server (server srv-1): rebuilt (image)" in capsys.readouterr().out


def test_a_port_updated_with_other_fixed_ips_is_a_loss_and_one_updated_otherwise_is_not(servers: Any,
                                                                                     capsys: Any) -> None:
    servers.preview["updated"] = [{"resource_name": "port", "resource_type": "OS::Neutron::Port"}]
    assert cli.main(["upgrade", "demo", "--to", "3.0.1", "--dry-run", "--os-cloud", "x", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["plan"]["losses"] == []
    assert cli.main(["upgrade", "demo", "--to", "3.0.1", "--dry-run", "--os-cloud", "x", "--format", "json",
                     "-P", "network=other"]) == 0  # not its fixed_ips or MAC
    assert json.loads(capsys.readouterr().out)["plan"]["losses"] == []
    a, b = bundle(), bundle()
    port = yaml.safe_load(b[1][VNF])
    port["resources"]["port"]["properties"]["fixed_ips"] = [{"ip_address": "10.0.0.9"}]
    b[1][VNF] = yaml.safe_dump(port)
    assert sc.address_change(sc.Scope(a[0], {}, a[1]), sc.Scope(b[0], {}, b[1]), ["vrouter"], "port") == \
        ["IP address"]
    assert sc.address_change(sc.Scope(a[0], {}, a[1]), sc.Scope(a[0], {}, a[1]), ["vrouter"], "port") == []
    assert sc.address_change(sc.Scope(a[0], {}, a[1]), sc.Scope(a[0], {}, a[1]), ["nope"], "port") == \
        ["IP address", "MAC address"]
