"""Which files validate reports on (named, walked, globbed, a hook's list), .nfvcat.yaml, and suppression
(resource metadata, file comment, project file) with its counts in text, json and SARIF."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nfvcat.validation import project
from tests.conftest import nfvcat

BAD_HOT = """heat_template_version: 2021-04-16
resources:
  net:
    type: OS::Neutron::Net
    properties:
      nonsense: 1
  port:
    type: OS::Neutron::Port
    metadata: {nfvcat: {ignore: [E1001]}}
    properties:
      network: {get_resource: net}
      bogus: 2
outputs:
  net_id: {value: {get_resource: net}}
"""
GOOD_HOT = "heat_template_version: 2021-04-16\nresources:\n  net:\n    type: OS::Neutron::Net\n"
UNRELATED = {
    "docker-compose.yml": "services:\n  web: {image: nginx}\n",
    "playbook.yml": "- hosts: all\n  tasks: []\n",
    "workflow.yml": "on: push\njobs:\n  test: {runs-on: ubuntu-latest}\n  test: {}\n",  # duplicate key
    "tsconfig.json": '{ // comments: not JSON, not YAML\n  "compilerOptions": {}\n}\n',
    "empty.yaml": "",
}


def run_json(*args: str, cwd: Path) -> tuple[int, dict[str, object]]:
    proc = nfvcat("validate", "--format", "json", *args, cwd=cwd)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def ids(doc: dict[str, object], key: str = "findings") -> list[tuple[str, str, int]]:
    return [(str(f["id"]), str(f["file"]), int(f["line"])) for f in doc[key]]  # type: ignore[attr-defined]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    for name, text in UNRELATED.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "good.yaml").write_text(GOOD_HOT)
    return tmp_path


def test_hook_list_skips_unrelated_yaml_and_counts_it(repo: Path) -> None:
    names = ["good.yaml", *UNRELATED]
    code, doc = run_json("--skip-unknown", *names, cwd=repo)
    assert code == 0 and doc["findings"] == []
    assert doc["summary"] == {"files": 1, "errors": 0, "warnings": 0, "suppressed": 0,
                              "skipped": len(UNRELATED), "excluded": 0}
    assert sorted(doc["skipped"]) == sorted(UNRELATED)  # type: ignore[arg-type]
    text = nfvcat("validate", "--skip-unknown", *names, cwd=repo)
    assert text.returncode == 0
    assert text.stdout.splitlines()[-1] == (f"0 error(s), 0 warning(s) in 1 file(s); {len(UNRELATED)} skipped "
                                            "(none of nfvcat's kinds)")


def test_a_zip_that_is_no_csar_is_skipped_from_a_list(repo: Path) -> None:
    import zipfile

    with zipfile.ZipFile(repo / "lambda.zip", "w") as z:
        z.writestr("handler.py", "def main(): pass\n")
    code, doc = run_json("--skip-unknown", "lambda.zip", "good.yaml", cwd=repo)
    assert code == 0 and doc["skipped"] == ["lambda.zip"] and doc["summary"]["files"] == 1  # type: ignore[index]


def test_named_one_by_one_an_unknown_file_stays_E0007(repo: Path) -> None:
    code, doc = run_json("playbook.yml", "good.yaml", cwd=repo)
    assert code == 2 and ids(doc) == [("E0007", "playbook.yml", 1)]


def test_walks_and_globs_skip_unrelated_yaml(repo: Path) -> None:
    code, doc = run_json(".", cwd=repo)
    assert code == 0 and doc["findings"] == [] and doc["summary"]["skipped"] == len(UNRELATED)  # type: ignore[index]
    code, doc = run_json("*.yml", cwd=repo)  # a glob the shell did not expand (quoted)
    assert code == 0 and doc["summary"]["files"] == 0 and doc["summary"]["skipped"] == 3  # type: ignore[index]


def test_a_broken_template_is_not_taken_for_unrelated_yaml(repo: Path) -> None:
    (repo / "broken.yaml").write_text("heat_template_version: 2021-04-16\nresources: {net: [\n")
    code, doc = run_json("--skip-unknown", "broken.yaml", "playbook.yml", cwd=repo)
    assert code == 2 and [f[0] for f in ids(doc)] == ["E0001"] and doc["skipped"] == ["playbook.yml"]


CFN_YAML = """HeatTemplateFormatVersion: '2012-12-12'
Parameters:
  Net: {Type: String}
Resources:
  Port:
    Type: OS::Neutron::Port
    Properties:
      network: {Ref: Net}
      admin_state_up: maybe
Outputs:
  Addr:
    Value: {'Fn::GetAtt': [Nope, first_address]}
"""
CFN_JSON = """{
  "AWSTemplateFormatVersion": "2010-09-09",
  "Resources": {
    "Vol": {"Type": "OS::Cinder::Volume", "Properties": {"size": "big"}}
  }
}
"""


def test_cloudformation_format_templates_are_heat_templates(repo: Path) -> None:
    """Heat takes templates in the CloudFormation format too (AWSTemplateFormatVersion, HeatTemplateFormatVersion):
    walked, listed or named, each is validated by Heat's engine, its errors at their keys; one that does not
    parse is reported, not skipped."""
    (repo / "cfn").mkdir()
    (repo / "cfn" / "port.yaml").write_text(CFN_YAML)
    (repo / "cfn" / "vol.json").write_text(CFN_JSON)
    (repo / "cfn" / "ok.yaml").write_text("AWSTemplateFormatVersion: '2010-09-09'\nResources:\n"
                                          "  Net: {Type: 'OS::Neutron::Net'}\n")
    code, doc = run_json("cfn", cwd=repo)
    assert code == 2 and doc["summary"]["files"] == 3 and doc["skipped"] == []  # type: ignore[index]
    assert ids(doc) == [("E1001", "cfn/port.yaml", 9), ("E1001", "cfn/port.yaml", 12), ("E1001", "cfn/vol.json", 4)]
    messages = [str(f["message"]) for f in doc["findings"]]  # type: ignore[attr-defined]
    assert "maybe" in messages[0] and "Nope" in messages[1] and "big" in messages[2]
    (repo / "cfn" / "broken.json").write_text('{"AWSTemplateFormatVersion": "2010-09-09", "Resources": {\n')
    code, doc = run_json("--skip-unknown", "cfn/broken.json", "playbook.yml", cwd=repo)
    assert code == 2 and [f[0] for f in ids(doc)] == ["E0001"] and doc["skipped"] == ["playbook.yml"]


def test_an_environment_with_a_misspelt_section_is_an_environment(repo: Path) -> None:
    """A Heat environment with a section only Heat has and a misspelt one: Heat's parser names the wrong section
    at its line, walked or named (it used to be skipped, or E0007); "parameters" alone is no sign of Heat."""
    (repo / "env").mkdir()
    (repo / "env" / "site.yaml").write_text('parameter_defaults:\n  vlan: 150\nresource_registy:\n  "OS::X": x.yaml\n')
    (repo / "env" / "ci.yaml").write_text("parameters:\n  - name: image\nstages: [build]\n")
    code, doc = run_json("env", cwd=repo)
    assert code == 2 and ids(doc) == [("E1004", "env/site.yaml", 3)] and doc["skipped"] == ["env/ci.yaml"]
    assert "resource_registy" in str(doc["findings"][0]["message"])  # type: ignore[index]


def test_project_file_excludes_paths(repo: Path) -> None:
    (repo / "vendor" / "deep").mkdir(parents=True)
    (repo / "vendor" / "deep" / "bad.yaml").write_text(BAD_HOT)
    (repo / "legacy.yaml").write_text(BAD_HOT)
    (repo / ".nfvcat.yaml").write_text("exclude: ['vendor/', 'legacy.yaml']\n")
    sub = repo / "vendor"  # found from a subdirectory too: at or above the working directory
    code, doc = run_json("--skip-unknown", "deep/bad.yaml", "../legacy.yaml", "../good.yaml", cwd=sub)
    assert code == 0 and doc["findings"] == []
    assert doc["excluded"] == ["deep/bad.yaml", "../legacy.yaml"]
    assert doc["summary"]["excluded"] == 2 and doc["summary"]["files"] == 1  # type: ignore[index]


def test_resource_metadata_suppresses_inside_that_resource_only(repo: Path) -> None:
    (repo / "bad.yaml").write_text(BAD_HOT)
    code, doc = run_json("bad.yaml", cwd=repo)
    assert code == 2
    assert [(f[0], f[2]) for f in ids(doc)] == [("E1001", 6)]  # net's 'nonsense' is still reported, at its key
    assert [(f[0], f[2]) for f in ids(doc, "suppressed")] == [("E1001", 12)]
    assert doc["suppressed"][0]["suppressed_by"] == "bad.yaml:9"  # type: ignore[index]
    assert doc["summary"]["suppressed"] == 1  # type: ignore[index]
    plain = nfvcat("validate", "bad.yaml", cwd=repo)
    assert "bogus" not in plain.stdout and plain.stdout.splitlines()[-1].endswith("; 1 suppressed")
    shown = nfvcat("validate", "--show-suppressed", "bad.yaml", cwd=repo)
    assert "Unknown Property bogus (suppressed by bad.yaml:9)" in shown.stdout


def test_file_comment_suppresses_and_does_not_fail_the_run(repo: Path) -> None:
    (repo / "bad.yaml").write_text("# nfvcat: ignore-file E1001, W9999\n" + BAD_HOT)
    code, doc = run_json("bad.yaml", cwd=repo)
    assert code == 0 and doc["findings"] == []
    assert {s["suppressed_by"] for s in doc["suppressed"]} == {"bad.yaml:1"}  # type: ignore[attr-defined]
    assert len(doc["suppressed"]) == 2  # type: ignore[arg-type]


def test_cloud_config_file_comment(repo: Path) -> None:
    (repo / "user-data.yaml").write_text("#cloud-config\n# nfvcat: ignore-file E6001\nruncmd: 5\n")
    code, doc = run_json("user-data.yaml", cwd=repo)
    assert code == 0 and [f[0] for f in ids(doc, "suppressed")] == ["E6001"]


def test_project_ignore_by_rule_prefix_and_path_and_sarif(repo: Path) -> None:
    (repo / "legacy").mkdir()
    (repo / "legacy" / "bad.yaml").write_text(BAD_HOT)
    (repo / "bad.yaml").write_text(BAD_HOT)
    (repo / ".nfvcat.yaml").write_text("ignore:\n  - rules: [E1]\n    paths: ['legacy/**']\n"
                                       "    reason: replaced in 2.0\n")
    code, doc = run_json("bad.yaml", "legacy/bad.yaml", cwd=repo)
    assert code == 2 and ids(doc) == [("E1001", "bad.yaml", 6)]
    assert sorted(ids(doc, "suppressed")) == [("E1001", "bad.yaml", 12), ("E1001", "legacy/bad.yaml", 6),
                                               ("E1001", "legacy/bad.yaml", 12)]
    by = {(s["file"], s["line"]): (s["suppressed_by"], s["reason"]) for s in doc["suppressed"]}  # type: ignore
    assert by[("legacy/bad.yaml", 6)] == (".nfvcat.yaml", "replaced in 2.0")
    assert by[("legacy/bad.yaml", 12)] == ("legacy/bad.yaml:9", "")  # the template's own comes first
    sarif = json.loads(nfvcat("validate", "--format", "sarif", "bad.yaml", "legacy/bad.yaml", cwd=repo).stdout)
    results = sarif["runs"][0]["results"]
    assert len(results) == 4
    kinds = sorted(s["kind"] for r in results for s in r.get("suppressions", []))
    assert kinds == ["external", "inSource", "inSource"]


def test_engine_failure_is_never_suppressed(repo: Path, tmp_path: Path) -> None:
    (repo / "user-data.yaml").write_text("#cloud-config\nruncmd: 5\n")
    (repo / ".nfvcat.yaml").write_text("ignore:\n  - rules: [E]\n")
    proc = nfvcat("validate", "--format", "json", "user-data.yaml", cwd=repo,
                  env={"NFVCAT_CLOUD_INIT_SCHEMA": str(tmp_path / "none.json")})
    doc = json.loads(proc.stdout)
    assert proc.returncode == 3 and doc["suppressed"] == []
    assert {f["id"] for f in doc["findings"]} == {"E0009"}  # E6001's and W6003's: neither could run


def test_project_strict_and_site(repo: Path) -> None:
    warn = Path(__file__).parents[1] / "fixtures" / "rules" / "W3004" / "fail.yaml"
    (repo / "w.yaml").write_text(warn.read_text())
    assert nfvcat("validate", "w.yaml", cwd=repo).returncode == 0
    (repo / ".nfvcat.yaml").write_text("strict: true\n")
    assert nfvcat("validate", "w.yaml", cwd=repo).returncode == 2
    (repo / ".nfvcat.yaml").write_text("site: sites/none.yaml\n")
    proc = nfvcat("validate", "w.yaml", cwd=repo)
    assert proc.returncode == 1 and "sites/none.yaml: no such file" in proc.stderr


@pytest.mark.parametrize(("text", "where"), [
    ("exclude: vendor\n", ".nfvcat.yaml:1:1: .nfvcat.yaml does not match its schema at /exclude"),
    ("ignore:\n  - rules: [E1001]\n  - rules: [X1]\n", ".nfvcat.yaml:3:13: .nfvcat.yaml does not match its "
                                                       "schema at /ignore/1/rules/0"),
    ("strict: true\nstrcit: false\n", ".nfvcat.yaml:2:1: .nfvcat.yaml does not match its schema at /strcit"),
    ("exclude: [\n", ".nfvcat.yaml:2:1:"),
])
def test_bad_project_file_is_exit_1_with_file_line(repo: Path, text: str, where: str) -> None:
    (repo / ".nfvcat.yaml").write_text(text)
    proc = nfvcat("validate", "good.yaml", cwd=repo)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"nfvcat: error: {where}"), proc.stderr


@pytest.mark.parametrize(("glob", "path", "hit"), [
    ("*.yml", "a/b/c.yml", True), ("*.yml", "c.yaml", False), ("vendor/", "vendor/x/y.yaml", True),
    ("vendor", "src/vendor/y.yaml", True), ("src/*.yaml", "src/a/b.yaml", False),
    ("/src/*.yaml", "x/src/a.yaml", False),
    ("src/**/b.yaml", "src/b.yaml", True), ("src/**/b.yaml", "src/a/c/b.yaml", True), ("a?.yaml", "ab.yaml", True),
    ("[!x]*.yaml", "x.yaml", False), ("docs/*.yaml", "docs/a/b.yaml", False), ("docs/a.yaml", "docs/ab.yaml", False),
])
def test_globs(glob: str, path: str, hit: bool) -> None:
    assert project.matches(glob, path) is hit


def test_through_the_engine_server_the_same_counts_and_suppressions(repo: Path, tmp_path: Path) -> None:
    """The options and the report cross the engine server's socket: skipped, excluded and suppressed too."""
    (repo / "bad.yaml").write_text(BAD_HOT)
    (repo / "legacy.yaml").write_text(BAD_HOT)
    (repo / ".nfvcat.yaml").write_text("exclude: [legacy.yaml]\nignore:\n  - rules: [E1001]\n    paths: [bad.yaml]\n")
    names = ["--skip-unknown", "bad.yaml", "legacy.yaml", "good.yaml", *UNRELATED]
    code, alone = run_json(*names, cwd=repo)
    env = {"NFVCAT_NO_SERVER": "0", "NFVCAT_CACHE_DIR": str(tmp_path / "server-cache")}
    try:
        proc = nfvcat("validate", "--format", "json", *names, cwd=repo, env=env)
        assert (tmp_path / "server-cache" / "server").is_dir(), "the engine server was not used"
    finally:
        nfvcat("server", "stop", env=env)
    assert code == proc.returncode == 0
    assert json.loads(proc.stdout) == alone
    assert alone["summary"] == {"files": 2, "errors": 0, "warnings": 0, "suppressed": 2,
                                "skipped": len(UNRELATED), "excluded": 1}
