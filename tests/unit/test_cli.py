"""The command line contract: formats, exit codes, parameters and environments, bad input."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import ROOT, findings_of, nfvcat

RULES = ROOT / "tests" / "fixtures" / "rules"
TEMPLATE = """heat_template_version: 2021-04-16
parameters:
  vlan: {type: number, constraints: [{range: {min: 100, max: 199}}]}
resources:
  net:
    type: OS::Neutron::ProviderNet
    properties:
      network_type: vlan
      physical_network: physnet_sriov
      segmentation_id: {get_param: vlan}
"""


def test_clean_file_exits_0_and_errors_exit_2() -> None:
    assert nfvcat("validate", str(RULES / "E1001" / "pass.yaml")).returncode == 0
    proc = nfvcat("validate", str(RULES / "E1001" / "fail.yaml"))
    assert proc.returncode == 2
    first = proc.stdout.splitlines()[0]  # one line per finding, as compilers write theirs (issue #42)
    assert first.startswith(f"{RULES.relative_to(ROOT)}/E1001/fail.yaml:7:7: error E1001: ") and "sriov" in first


def test_json_has_the_documented_keys() -> None:
    code, findings = findings_of(str(RULES / "E2001" / "fail.yaml"))
    assert code == 2
    assert findings == [{
        "id": "E2001", "severity": "error", "file": "tests/fixtures/rules/E2001/fail.yaml", "line": 6,
        "column": 3, "message": "Validation failed; 'pinned' is not one of: dedicated, shared, mixed.",
        "engine": "nova"}]


def test_sarif_is_sarif_2_1_0() -> None:
    proc = nfvcat("validate", "--format", "sarif", str(RULES / "E3001" / "fail.yaml"))
    doc = json.loads(proc.stdout)
    assert doc["version"] == "2.1.0"
    run = doc["runs"][0]
    rule_ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    result = next(r for r in run["results"] if r["ruleId"] == "E3001")
    assert rule_ids[result["ruleIndex"]] == "E3001"
    assert result["locations"][0]["physicalLocation"]["region"] == {"startLine": 8, "startColumn": 7}


def test_sarif_uris_are_percent_encoded_and_relative_to_the_repository_root(tmp_path: Path) -> None:
    repo, other = tmp_path / "repo", tmp_path / "other"
    where = repo / "vnf #2" / "heat templates"
    where.mkdir(parents=True)
    for r in (repo, other):
        (r / ".git").mkdir(parents=True)  # what marks a repository's root (a worktree's or submodule's is a file)
    (where / "bad net.yaml").write_text((RULES / "E3001" / "fail.yaml").read_text())

    def locations(cwd: Path, path: str) -> tuple[dict[str, object], set[str]]:
        run = json.loads(nfvcat("validate", "--format", "sarif", path, cwd=cwd).stdout)["runs"][0]
        return run["originalUriBaseIds"], {json.dumps(r["locations"][0]["physicalLocation"]["artifactLocation"])
                                           for r in run["results"]}

    same = {json.dumps({"uri": "vnf%20%232/heat%20templates/bad%20net.yaml", "uriBaseId": "%SRCROOT%"})}
    for cwd, path in ((repo, "vnf #2/heat templates/bad net.yaml"), (where, "bad net.yaml")):
        assert locations(cwd, path) == ({"%SRCROOT%": {"uri": f"{repo.as_uri()}/"}}, same)
    # named from another repository: outside its %SRCROOT%, so the file's absolute URI
    assert locations(other, str(where / "bad net.yaml")) == (
        {"%SRCROOT%": {"uri": f"{other.as_uri()}/"}}, {json.dumps({"uri": (where / "bad net.yaml").as_uri()})})


def test_warnings_pass_unless_strict() -> None:
    path = str(RULES / "W3004" / "fail.yaml")
    assert nfvcat("validate", path).returncode == 0
    assert nfvcat("validate", "--strict", path).returncode == 2


def test_parameters_and_environments_reach_heat(tmp_path: Path) -> None:
    tpl = tmp_path / "net.yaml"
    tpl.write_text(TEMPLATE)
    code, findings = findings_of(str(tpl), "-P", "vlan=250")
    assert code == 2 and [f["id"] for f in findings] == ["E1001", "W3005"]
    assert "vlan" in str(findings[0]["message"])
    env = tmp_path / "env.yaml"
    env.write_text("parameters:\n  vlan: 150\n")
    assert findings_of(str(tpl), "-e", str(env)) == (0, [])
    env.write_text("parameters:\n  vlan: 150\n  not_a_parameter: 1\n")
    code, findings = findings_of(str(tpl), "-e", str(env))
    assert code == 2 and "not_a_parameter" in str(findings[0]["message"])


def test_usage_errors_exit_1_with_one_line() -> None:
    for args in (["validate", "--format", "xml"], ["validate", "-P", "novalue"], ["nosuchcommand"],
                 ["validate", "-e", "/nonexistent/env.yaml", str(RULES / "E1001" / "pass.yaml")],
                 ["validate", "--site", "/nonexistent/site.yaml", str(RULES / "E1001" / "pass.yaml")]):
        proc = nfvcat(*args)
        assert proc.returncode == 1, args
        assert "Traceback" not in proc.stderr and "error:" in proc.stderr


def test_bad_inputs_are_findings_not_tracebacks(tmp_path: Path) -> None:
    (tmp_path / "binary.yaml").write_bytes(b"\x7fELF\x00\x01\x02")
    (tmp_path / "latin1.yaml").write_bytes("description: caf\xe9\n".encode("latin-1"))
    (tmp_path / "empty.yaml").write_text("")
    (tmp_path / "huge.yaml").write_text("a: " + "x" * (9 * 1024 * 1024))
    (tmp_path / "deep.yaml").write_text("[" * 5000 + "]" * 5000)
    (tmp_path / "list.yaml").write_text("- just\n- a list\n")
    (tmp_path / "garbage.zip").write_bytes(b"PK\x03\x04" + b"\x00" * 40)
    names = ["binary", "latin1", "empty", "huge", "deep", "list", "missing"]
    code, findings = findings_of(*[str(tmp_path / f"{n}.yaml") for n in names], str(tmp_path / "garbage.zip"))
    assert code == 2
    by_file = {Path(str(f["file"])).name.split("!")[0]: f["id"] for f in findings}
    assert by_file == {"binary.yaml": "E0005", "latin1.yaml": "E0005", "empty.yaml": "E0005",
                       "huge.yaml": "E0004", "deep.yaml": "E0003", "list.yaml": "E0007",
                       "missing.yaml": "E0002", "garbage.zip": "E0005"}
    assert "ZIP" in next(str(f["message"]) for f in findings if "garbage" in str(f["file"]))


def test_engine_that_cannot_run_is_E0009_exit_3(tmp_path: Path) -> None:
    proc = nfvcat("validate", "--no-cache", "--format", "json", str(RULES / "E1001" / "pass.yaml"),
                  env={"NFVCAT_ENGINE_TIMEOUT": "0.01"})
    assert proc.returncode == 3
    findings = json.loads(proc.stdout)["findings"]
    assert [f["id"] for f in findings] == ["E0009"] and "timed out" in findings[0]["message"]
    proc = nfvcat("validate", "--format", "json", str(RULES / "E6001" / "fail.yaml"),
                  env={"NFVCAT_CLOUD_INIT_SCHEMA": str(tmp_path / "none.json")})
    assert proc.returncode == 3 and "schema" in proc.stdout


def test_timings_and_warm_cache(tmp_path: Path) -> None:
    tpl = tmp_path / "t.yaml"
    tpl.write_text(TEMPLATE)
    env = {"NFVCAT_CACHE_DIR": str(tmp_path / "cache")}
    cold = nfvcat("validate", "--timings", str(tpl), "-P", "vlan=100", env=env)
    warm = nfvcat("validate", "--timings", str(tpl), "-P", "vlan=100", env=env)
    assert "engine heat" in cold.stderr and "0 from cache" in cold.stderr
    assert "engine heat" not in warm.stderr and "1 from cache" in warm.stderr
    tpl.write_text(TEMPLATE.replace("199", "198"))
    again = nfvcat("validate", "--timings", str(tpl), "-P", "vlan=100", env=env)
    assert "engine heat" in again.stderr, "a changed file must not come from the cache"


def test_rules_command_lists_every_rule() -> None:
    proc = nfvcat("rules", "--format", "json")
    rules = json.loads(proc.stdout)
    assert {"E1001", "E2001", "E6001"} <= {r["id"] for r in rules}
