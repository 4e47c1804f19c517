"""The Heat engine on its own: offline, strict, every broken resource reported, nested files located."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import findings_of

SERVER = """heat_template_version: 2021-04-16
parameters:
  image: {type: string, default: debian-12}
resources:
  port:
    type: OS::Neutron::Port
    properties: {network: mgmt}
  server:
    type: OS::Nova::Server
    properties:
      image: {get_param: image}
      flavor: nfv.pinned.1g
      networks: [{port: {get_resource: port}}]
      user_data_format: RAW
      user_data:
        str_replace:
          template: {get_file: hook.yaml}
          params: {__MAC__: {get_attr: [port, mac_address]}}
"""


def run_worker(jobs: list[dict[str, object]]) -> list[dict[str, object]]:
    proc = subprocess.run([sys.executable, "-m", "nfvcat.validation.engines.heat"],
                          input=json.dumps({"jobs": jobs}) + "\n",
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)["results"]


def test_servers_images_flavors_and_get_file_validate_without_a_cloud(tmp_path: Path) -> None:
    (tmp_path / "hook.yaml").write_text("#cloud-config\nruncmd: [[echo, __MAC__]]\n")
    (tmp_path / "vnf.yaml").write_text(SERVER)
    [result] = run_worker([{"file": str(tmp_path / "vnf.yaml")}])
    assert result["findings"] == []
    assert str(tmp_path / "hook.yaml") in result["deps"], "get_file targets are dependencies for the cache"


def test_every_broken_resource_is_reported_not_just_the_first(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text("""heat_template_version: 2021-04-16
resources:
  a: {type: OS::Neutron::Port, properties: {network: x, binding:vnic_type: sriov}}
  b: {type: OS::Nova::Flavor, properties: {vcpus: many, ram: 1024}}
  c: {type: OS::Neutron::Net, properties: {nonsense: 1}}
""")
    [result] = run_worker([{"file": str(tmp_path / "t.yaml")}])
    paths = sorted(tuple(f["path"][:2]) for f in result["findings"])
    assert paths == [("resources", "a"), ("resources", "b"), ("resources", "c")]


def test_a_nested_template_error_points_into_the_nested_file(tmp_path: Path) -> None:
    (tmp_path / "child").mkdir()
    (tmp_path / "child" / "c.yaml").write_text("""heat_template_version: 2021-04-16
parameters:
  vnic: {type: string}
resources:
  port:
    type: OS::Neutron::Port
    properties:
      network: x
      binding:vnic_type: {get_param: vnic}
""")
    (tmp_path / "parent.yaml").write_text("""heat_template_version: 2021-04-16
resources:
  vnf:
    type: child/c.yaml
    properties: {vnic: sriov}
""")
    code, findings = findings_of(str(tmp_path / "parent.yaml"))
    assert code == 2
    [f] = findings
    assert f["file"].endswith("child/c.yaml") and f["line"] == 9 and "sriov" in f["message"]


def test_strict_placeholders_satisfy_constraints(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text("""heat_template_version: 2021-04-16
parameters:
  vlan: {type: number, constraints: [{range: {min: 100, max: 199}}]}
  cidr: {type: string, constraints: [{custom_constraint: net_cidr}]}
  mode: {type: string, constraints: [{allowed_values: [sriov, ovs-dpdk]}]}
  name: {type: string, constraints: [{allowed_pattern: "[a-z]+-[0-9]+"}]}
  flavor: {type: string, constraints: [{custom_constraint: nova.flavor}]}
resources: {}
""")
    [result] = run_worker([{"file": str(tmp_path / "p.yaml")}])
    assert result["findings"] == []


def test_invented_values_satisfy_every_constraint_and_the_property_they_feed(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text("""heat_template_version: 2021-04-16
parameters:
  password:
    type: string
    constraints:
      - length: {min: 10, max: 20}
      - allowed_pattern: "[A-Z].*"
        description: Password must start with an uppercase character
      - allowed_pattern: ".*[0-9].*"
      - allowed_pattern: "[A-Za-z0-9]*"
  size: {type: string}
  cidr: {type: string}
  port: {type: string}
  mac: {type: string}
  ip: {type: string}
resources:
  net: {type: OS::Neutron::Net}
  subnet:
    type: OS::Neutron::Subnet
    properties: {network: {get_resource: net}, cidr: {get_param: cidr}}
  volume:
    type: OS::Cinder::Volume
    properties: {size: {get_param: size}}
  rule:
    type: OS::Neutron::SecurityGroupRule
    properties: {security_group: sg, port_range_min: {get_param: port}, port_range_max: {get_param: port}}
  vport:
    type: OS::Neutron::Port
    properties:
      network: {get_resource: net}
      mac_address: {get_param: mac}
      fixed_ips: [{ip_address: {get_param: ip}}]
  secret:
    type: OS::Heat::Value
    properties: {value: {get_param: password}}
""")
    [result] = run_worker([{"file": str(tmp_path / "p.yaml")}])
    assert result["findings"] == []


def test_a_finding_that_depends_on_an_invented_value_says_so_and_is_a_warning(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text("""heat_template_version: 2021-04-16
parameters:
  both: {type: string}
resources:
  net: {type: OS::Neutron::Net}
  subnet:
    type: OS::Neutron::Subnet
    properties: {network: {get_resource: net}, cidr: {get_param: both}}
  volume:
    type: OS::Cinder::Volume
    properties: {size: {get_param: both}}
""")
    [result] = run_worker([{"file": str(tmp_path / "p.yaml")}])
    [f] = result["findings"]
    assert f["id"] == "W1005" and "nfvcat invented for a parameter without one (both=" in f["message"], f


def test_environment_files_are_checked_by_heat(tmp_path: Path) -> None:
    (tmp_path / "env.yaml").write_text("parameters: {a: 1}\nresource_registry: 5\n")
    [result] = run_worker([{"file": str(tmp_path / "env.yaml"), "kind": "environment"}])
    assert [f["id"] for f in result["findings"]] == ["E1004"]


def test_a_null_neutron_reference_is_caught_offline(tmp_path: Path) -> None:
    """Heat turns `if: [cond, x, null]` on a string property into '' and Neutron never finds ''; the
    two-argument `if` of HOT 2021-04-16 leaves the property out instead."""
    tpl = """heat_template_version: 2021-04-16
parameters:
  qos: {type: string, default: ""}
conditions:
  has_qos: {not: {equals: [{get_param: qos}, ""]}}
resources:
  port:
    type: OS::Neutron::Port
    properties:
      network: mgmt
      qos_policy: QOS
"""
    (tmp_path / "null.yaml").write_text(tpl.replace("QOS", "{if: [has_qos, {get_param: qos}, null]}"))
    (tmp_path / "omit.yaml").write_text(tpl.replace("QOS", "{if: [has_qos, {get_param: qos}]}"))
    null, omit = run_worker([{"file": str(tmp_path / "null.yaml")}, {"file": str(tmp_path / "omit.yaml")}])
    assert [f["path"][-1] for f in null["findings"]] == ["qos_policy"]
    assert "name or id ''" in null["findings"][0]["message"]
    assert omit["findings"] == []


GROUPS = """heat_template_version: 2021-04-16
resources:
  asg:
    type: OS::Heat::AutoScalingGroup
    properties:
      min_size: 1
      max_size: 3
      resource: {type: OS::Neutron::Net, properties: {BAD}}
  lc:
    type: AWS::AutoScaling::LaunchConfiguration
    properties: {ImageId: img, InstanceType: m1.small}
  aws:
    type: AWS::AutoScaling::AutoScalingGroup
    properties: {AvailabilityZones: [], LaunchConfigurationName: {get_resource: lc}, MinSize: '1', MaxSize: '2'}
  ig:
    type: OS::Heat::InstanceGroup
    properties: {AvailabilityZones: [], LaunchConfigurationName: {get_resource: lc}, Size: '1'}
  rg:
    type: OS::Heat::ResourceGroup
    properties:
      count: 2
      resource_def: {type: OS::Neutron::Net, properties: {BAD}}
  policy:
    type: OS::Heat::ScalingPolicy
    properties: {adjustment_type: change_in_capacity, auto_scaling_group_id: {get_resource: asg}, scaling_adjustment: 1}
"""


def test_scaling_groups_validate_and_their_members_are_checked(tmp_path: Path) -> None:
    (tmp_path / "good.yaml").write_text(GROUPS.replace("BAD", "name: n"))
    (tmp_path / "bad.yaml").write_text(GROUPS.replace("BAD", "bogus: 1"))
    good, bad = run_worker([{"file": str(tmp_path / "good.yaml")}, {"file": str(tmp_path / "bad.yaml")}])
    assert good["findings"] == []
    paths = sorted(f["path"] for f in bad["findings"])  # the member definition's bad key, in the group
    assert paths == [["resources", "asg", "properties", "resource", "properties", "bogus"],
                     ["resources", "rg", "properties", "resource_def", "properties", "bogus"]]
    assert all("Unknown Property bogus" in f["message"] for f in bad["findings"])


RESOURCE_ERRORS = """heat_template_version: 2021-04-16
resources:
  net: {type: OS::Neutron::Net}
  subnet:
    type: OS::Neutron::Subnet
    properties: {network: {get_resource: net}}
  port:
    type: OS::Neutron::Port
    properties: {network: {get_resource: net}, fixed_ips: [{subnet: s, subnet_id: s}]}
  adopted:
    type: OS::Nova::Server
    external_id: 5f0c9a2e-0000-4000-8000-000000000000
"""


def test_exceptions_a_resource_raises_are_findings_and_external_ids_are_not_validated(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(RESOURCE_ERRORS)
    [result] = run_worker([{"file": str(tmp_path / "t.yaml")}])
    by_resource = {f["path"][1]: f for f in result["findings"]}
    assert set(by_resource) == {"subnet", "port"}, result["findings"]
    assert all(f["id"] == "E1001" for f in by_resource.values())
    assert "subnetpool, cidr" in by_resource["subnet"]["message"]  # PropertyUnspecifiedError
    assert "subnet" in by_resource["port"]["message"]  # a conflict Heat's translation reports


def test_a_template_that_reaches_for_a_cloud_is_not_validated_offline_not_wrong(tmp_path: Path) -> None:
    (tmp_path / "child.yaml").write_text("heat_template_version: 2021-04-16\nresources: {}\n")
    (tmp_path / "t.yaml").write_text("""heat_template_version: 2021-04-16
resources:
  remote:
    type: OS::Heat::Stack
    properties:
      context: {region_name: RegionTwo}
      template: {get_file: child.yaml}
""")
    code, findings = findings_of(str(tmp_path / "t.yaml"), "--no-cache")
    assert code == 3
    assert [f["id"] for f in findings] == ["E0009"]
    assert "remote" in str(findings[0]["message"]) and findings[0]["line"] == 6  # the region it reaches for


def test_outputs_are_resolved_as_heat_does(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text("""heat_template_version: 2021-04-16
resources:
  net: {type: OS::Neutron::Net}
outputs:
  ok: {value: {get_resource: net}}
  renamed: {value: {get_resource: network}}
  missing: {value: {get_attr: [gone, name]}}
""")
    [result] = run_worker([{"file": str(tmp_path / "t.yaml")}])
    assert sorted(f["path"][1] for f in result["findings"]) == ["missing", "renamed"]


def test_a_missing_file_added_later_invalidates_the_cached_result(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text("""heat_template_version: 2021-04-16
resources:
  child: {type: sub/child.yaml}
  config:
    type: OS::Heat::SoftwareConfig
    properties: {config: {get_file: hook.sh}}
""")
    code, findings = findings_of(str(tmp_path / "t.yaml"))
    assert code == 2 and [f["id"] for f in findings] == ["E1002"]
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "child.yaml").write_text("heat_template_version: 2021-04-16\nresources: {}\n")
    code, findings = findings_of(str(tmp_path / "t.yaml"))
    assert [f["id"] for f in findings] == ["E1002"] and "hook.sh" in str(findings[0]["message"])
    (tmp_path / "hook.sh").write_text("#!/bin/sh\n")
    code, findings = findings_of(str(tmp_path / "t.yaml"))
    assert (code, findings) == (0, [])


def test_a_server_with_metadata_validates_offline(tmp_path: Path) -> None:
    """Heat reads Nova's absolute limits for a server's metadata: unknown offline, not a cloud failure."""
    (tmp_path / "t.yaml").write_text("""heat_template_version: 2021-04-16
resources:
  server:
    type: OS::Nova::Server
    properties: {flavor: m1, image: img, networks: [{network: mgmt}], metadata: {role: vnf}}
""")
    [result] = run_worker([{"file": str(tmp_path / "t.yaml")}])
    assert result["findings"] == []


def test_a_tacker_base_hot_finds_its_nested_templates_as_tacker_passes_them(tmp_path: Path) -> None:
    """Tacker sends BaseHOT/<flavour>/nested/*.yaml to Heat as files named by their base name."""
    flavour = tmp_path / "BaseHOT" / "simple"
    (flavour / "nested").mkdir(parents=True)
    (flavour / "top.yaml").write_text("""heat_template_version: 2021-04-16
resources:
  VDU1:
    type: VDU1.yaml
    properties: {flavor: m1, net: mgmt}
""")
    (flavour / "nested" / "VDU1.yaml").write_text("""heat_template_version: 2021-04-16
parameters:
  flavor: {type: string}
  net: {type: string}
resources:
  port:
    type: OS::Neutron::Port
    properties: {network: {get_param: net}, binding:vnic_type: sriov}
""")
    code, findings = findings_of(str(flavour / "top.yaml"), "--no-cache")
    assert code == 2
    assert [(f["id"], Path(str(f["file"])).name, f["line"]) for f in findings] == [("E1001", "VDU1.yaml", 8)]


def test_a_json_parameter_read_through_list_indices_gets_a_value_there(tmp_path: Path) -> None:
    (tmp_path / "child.yaml").write_text("""heat_template_version: 2021-04-16
parameters:
  subnet: {type: string}
resources:
  port:
    type: OS::Neutron::Port
    properties: {network: mgmt, fixed_ips: [{subnet: {get_param: subnet}}]}
""")
    (tmp_path / "t.yaml").write_text("""heat_template_version: 2021-04-16
parameters:
  nfv: {type: json}
resources:
  vdu:
    type: child.yaml
    properties: {subnet: {get_param: [nfv, CP, CP1, fixed_ips, 0, subnet]}}
  volume:
    type: OS::Cinder::Volume
    properties: {size: {get_param: [nfv, VDU, vdu, size]}}
  port:
    type: OS::Neutron::Port
    properties: {network: n, fixed_ips: [{ip_address: {get_param: [nfv, CP, CP1, fixed_ips, 0, ip_address]}}]}
""")
    [result] = run_worker([{"file": str(tmp_path / "t.yaml")}])
    assert result["findings"] == []


def test_a_group_member_fed_by_a_resource_not_created_yet_is_not_failed_for_its_empty_value(
        tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text("""heat_template_version: 2021-04-16
resources:
  net: {type: OS::Neutron::Net}
  group:
    type: OS::Heat::AutoScalingGroup
    properties:
      min_size: 1
      max_size: 2
      resource:
        type: OS::Neutron::Port
        properties: {network: {get_resource: net}, BAD}
""")
    (tmp_path / "good.yaml").write_text((tmp_path / "t.yaml").read_text().replace("BAD", "name: p"))
    (tmp_path / "bad.yaml").write_text((tmp_path / "t.yaml").read_text().replace("BAD", "nam: p"))
    good, bad = run_worker([{"file": str(tmp_path / "good.yaml")}, {"file": str(tmp_path / "bad.yaml")}])
    assert good["findings"] == []
    assert [f["path"][-1] for f in bad["findings"]] == ["nam"]


def test_parsed_texts_are_kept_as_new_copies_and_errors_are_raised_each_time() -> None:
    """The worker's memo of heatclient's parse: equal data, a new copy each call (Heat may change what it
    is given), YAML aliases still one object, a text that does not parse raises every time."""
    from nfvcat.validation.engines.heat_offline import _keeping_parsed

    calls: list[str] = []

    def parse(text: str) -> object:
        calls.append(text)
        if text == "bad":
            raise ValueError("Template format version not found.")
        shared = {"network": "mgmt"}
        return {"heat_template_version": "2021-04-16", "a": shared, "b": shared, "n": [1, 2.5, None, True, b"x"]}

    keeping = _keeping_parsed(parse)
    first = keeping("t")
    first["a"]["network"] = "changed by Heat"
    second, third = keeping("t"), keeping("t")
    assert calls == ["t"]
    assert second == third == parse("t") and second is not third
    assert second["a"] is second["b"] and second["a"] is not third["a"]
    for _ in range(2):
        try:
            keeping("bad")
        except ValueError as exc:
            assert str(exc) == "Template format version not found."
        else:
            raise AssertionError("a text that does not parse must raise")
    assert calls.count("bad") == 2

    class Odd:  # nothing YAML's safe loader or JSON makes; kept as is and deep-copied
        def __eq__(self, other: object) -> bool:
            return isinstance(other, Odd)

    odd = _keeping_parsed(lambda text: {"x": [Odd()]})
    one, two = odd("o"), odd("o")
    assert one == two and one["x"][0] is not two["x"][0]


def test_template_verdicts_are_kept_per_text() -> None:
    from nfvcat.validation.engines.heat_offline import _keeping_verdicts

    seen: list[object] = []

    def is_template(content: str | bytes) -> bool:
        seen.append(content)
        return content.startswith(b"heat" if isinstance(content, bytes) else "heat")

    keeping = _keeping_verdicts(is_template, size=2)
    assert [keeping("#cloud-config"), keeping("heat_template_version: 1"), keeping("#cloud-config"),
            keeping(b"heat_template_version: 1")] == [False, True, False, True]
    assert seen == ["#cloud-config", "heat_template_version: 1", b"heat_template_version: 1"]
    keeping("other")  # two places: the least recently asked text goes ('#cloud-config')
    keeping(b"heat_template_version: 1")
    assert seen[-1] == "other"
    keeping("#cloud-config")
    assert seen[-1] == "#cloud-config"


def test_the_offline_set_up_answers_as_heat_does(tmp_path: Path) -> None:
    """The worker's set-up keeps the global registry's answers and the messages' translations: every type
    of the global registry is looked up as Heat's own code finds it, and a broken template's findings
    (Heat's messages with their parameters, a condition's definition among them) are the same with Heat's
    own translation look-up."""
    (tmp_path / "t.yaml").write_text("""heat_template_version: 2021-04-16
parameters:
  size: {type: number, default: 2, constraints: [{range: {min: 1}}]}
resources:
  a: {type: OS::Neutron::Port, properties: {network: x, binding:vnic_type: sriov}}
  b: {type: OS::Nova::Flavor, properties: {vcpus: many, ram: 1024}}
  c: {type: OS::Neutron::Net, properties: {nonsense: 1}}
  d: {type: OS::Heat::ResourceGroup, properties: {count: {get_param: size}, resource_def: {type: OS::No::Such}}}
""")
    (tmp_path / "c.yaml").write_text("""heat_template_version: 2021-04-16
parameters:
  env: {type: string, default: prod}
conditions:
  is_prod: {equal: [{get_param: env}, prod]}
resources:
  n: {type: OS::Neutron::Net, condition: is_prod}
""")
    script = f"""
import json
from heat.engine import environment
from oslo_i18n import _message
heats = environment.ResourceRegistry.iterable_by
translate = _message.Message._translate_msgid
from nfvcat.validation.engines import heat
heat.setup()
from heat.engine import resources
registry = resources.global_env().registry
assert environment.ResourceRegistry.iterable_by is not heats, "the set-up keeps the global registry's answers"
assert _message.Message._translate_msgid is not translate, "the set-up keeps the translations"
types = sorted(registry._registry) + ["OS::No::Such", "AWS::EC2::Nope", "x.yaml"]
for name in types:
    for resource_name in (None, "server"):
        for _ in range(2):
            kept = list(registry.iterable_by(name, resource_name))
            assert kept == list(heats(registry, name, resource_name)), name
            assert [i.name for i in kept] == [i.name for i in heats(registry, name, resource_name)], name
user = environment.Environment({{"resource_registry": {{"OS::Nova::Server": "x.yaml"}}}})
assert user.get_resource_info("OS::Nova::Server").value == "x.yaml"
jobs = [{{"file": {str(tmp_path / "t.yaml")!r}}}, {{"file": {str(tmp_path / "c.yaml")!r}}}]
kept = [heat.check(job)["findings"] for job in jobs + jobs]
_message.Message._translate_msgid = staticmethod(translate)
environment.ResourceRegistry.iterable_by = heats
own = [heat.check(job)["findings"] for job in jobs]
print(json.dumps({{"types": len(types), "kept": kept, "own": own}}))
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.splitlines()[-1])
    assert out["types"] > 200
    assert out["kept"] == out["own"] * 2, out
    broken, condition = out["own"]
    assert len(broken) == 4 and len(condition) == 1, out
    assert "{'equal': [{'get_param': 'env'}, 'prod']}" in condition[0]["message"], "lazy messages, as Heat makes them"


def test_the_same_template_gives_the_same_first_error_whatever_the_callers_hash_seed(tmp_path: Path) -> None:
    """Heat stops at a stack's first error and which resource type is looked up first follows a set's order:
    the workers' hashes are seeded, so the calling process's seed (these three gave three different
    answers before) does not choose the finding."""
    (tmp_path / "t.yaml").write_text("""heat_template_version: 2021-04-16
resources:
  group: {type: Vendor::AutoScale::Group}
  policy: {type: Vendor::AutoScale::ScalingPolicy, properties: {group: {get_resource: group}}}
  hook: {type: Vendor::AutoScale::WebHook, properties: {policy: {get_resource: policy}}}
  lb: {type: Vendor::Cloud::LoadBalancer}
  db: {type: Vendor::Cloud::Database}
""")
    seen = []
    for seed in ("1", "2", "5"):
        code, found = findings_of("--no-server", "--no-cache", str(tmp_path / "t.yaml"), env={"PYTHONHASHSEED": seed})
        assert code == 2 and len(found) == 1 and "could not be found" in str(found[0]["message"]), found
        seen.append(found)
    assert seen[0] == seen[1] == seen[2]
