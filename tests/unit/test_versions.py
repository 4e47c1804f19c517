"""``nfvcat versions`` against a release tag, in a throw-away git repository."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from nfvcat import versions
from nfvcat.cli import main
from nfvcat.errors import EXIT_FINDINGS, EXIT_OK

TEMPLATE = """\
heat_template_version: 2021-04-16
parameters:
  image:
    type: string
    description: Image.
  vlan:
    type: number
    description: VLAN.
    default: 110
resources: {}
outputs:
  server_id:
    description: Server.
    value: x
"""

ENTRY = "name: demo\nversion: {v}\nkind: heat\ndescription: d\ntemplate: main.yaml\n"
ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@example.org", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env=ENV, check=True, capture_output=True)


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    entry = tmp_path / "templates" / "heat" / "demo"
    entry.mkdir(parents=True)
    (tmp_path / "flavors" / "f1").mkdir(parents=True)
    (tmp_path / "flavors" / "f1" / "entry.yaml").write_text(
        "name: f1\nversion: 1.0.0\nkind: flavor\ndescription: d\ntemplate: flavor.yaml\n")
    (tmp_path / "flavors" / "f1" / "flavor.yaml").write_text("name: f1\nvcpus: 1\nram: 512\ndisk: 1\n")
    (entry / "entry.yaml").write_text(ENTRY.format(v="1.0.0"))
    (entry / "main.yaml").write_text(TEMPLATE)
    (entry / "CHANGELOG.md").write_text("# Changelog\n\n## 1.0.0\n\n- First.\n")
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "release 1")
    git(tmp_path, "tag", "v1")
    return tmp_path


def demo(repo: Path) -> Path:
    return repo / "templates" / "heat" / "demo"


def report_of(repo: Path, against: str | None = None) -> versions.EntryReport:
    tag, reports = versions.compare(str(repo), against)
    assert tag == "v1"
    (r,) = [r for r in reports if r.entry == "templates/heat/demo"]
    return r


def test_unchanged_is_clean(repo: Path) -> None:
    tag, reports = versions.compare(str(repo))
    assert tag == "v1"
    assert sorted(r.entry for r in reports) == ["flavors/f1", "templates/heat/demo"]
    assert all(not r.errors and not r.changed_files for r in reports)


def test_change_without_bump_fails(repo: Path) -> None:
    (demo(repo) / "README.md").write_text("# demo\n")  # untracked files count too
    r = report_of(repo)
    assert r.changed_files == ["templates/heat/demo/README.md"]
    assert any("without a version bump" in e for e in r.errors)


def test_change_with_minor_bump_passes(repo: Path) -> None:
    (demo(repo) / "main.yaml").write_text(TEMPLATE.replace("description: VLAN.", "description: VLAN id."))
    (demo(repo) / "entry.yaml").write_text(ENTRY.format(v="1.1.0"))
    assert report_of(repo).errors == []


NEW_REQUIRED = TEMPLATE.replace("parameters:\n", "parameters:\n  flavor:\n    type: string\n    description: F.\n")


@pytest.mark.parametrize(("text", "expected"), [
    (TEMPLATE.replace("  vlan:\n", "  vlan_id:\n"), "parameter 'vlan' removed or renamed"),
    (TEMPLATE.replace("type: number", "type: string"), "parameter 'vlan' retyped from number to string"),
    (TEMPLATE.replace("  server_id:", "  server:"), "output 'server_id' removed or renamed"),
    (NEW_REQUIRED, "new parameter 'flavor' has no default"),
])
def test_breaking_change_needs_major(repo: Path, text: str, expected: str) -> None:
    (demo(repo) / "main.yaml").write_text(text)
    (demo(repo) / "entry.yaml").write_text(ENTRY.format(v="1.1.0"))
    r = report_of(repo)
    assert expected in r.breaking
    assert any("major version bump" in e for e in r.errors)


def test_major_bump_needs_upgrade_note(repo: Path) -> None:
    (demo(repo) / "main.yaml").write_text(TEMPLATE.replace("  vlan:\n", "  vlan_id:\n"))
    (demo(repo) / "entry.yaml").write_text(ENTRY.format(v="2.0.0"))
    r = report_of(repo)
    assert r.errors == ["major bump to 2.0.0 without an 'Upgrading to 2.0.0' note in CHANGELOG.md"]
    (demo(repo) / "CHANGELOG.md").write_text("# Changelog\n\n## 2.0.0\n\n### Upgrading to 2.0.0\n\nRename vlan.\n")
    assert report_of(repo).errors == []


def test_version_going_down_fails(repo: Path) -> None:
    (demo(repo) / "entry.yaml").write_text(ENTRY.format(v="0.9.0"))
    assert report_of(repo).errors == ["version went down from 1.0.0 to 0.9.0"]


def test_prerelease_sorts_before_release() -> None:
    a, b, c = (versions.parse_version(v) for v in ("1.1.0-rc.1", "1.1.0", "1.1.0-rc.2"))
    assert a is not None and b is not None and c is not None
    assert a < c < b
    assert versions.parse_version("1.0") is None


def test_new_and_removed_entries_are_notes(repo: Path) -> None:
    (repo / "flavors" / "f1" / "entry.yaml").unlink()
    (repo / "flavors" / "f1" / "flavor.yaml").unlink()
    new = repo / "hooks" / "h1"
    new.mkdir(parents=True)
    (new / "entry.yaml").write_text("name: h1\nversion: 1.0.0\nkind: hook\ndescription: d\n")
    _, reports = versions.compare(str(repo))
    by = {r.entry: r for r in reports}
    assert by["hooks/h1"].notes == ["new entry (not in v1)"] and not by["hooks/h1"].errors
    assert by["flavors/f1"].notes == ["entry removed since v1"]


def test_compare_with_explicit_older_tag(repo: Path) -> None:
    (demo(repo) / "entry.yaml").write_text(ENTRY.format(v="1.0.1"))
    (demo(repo) / "CHANGELOG.md").write_text("# Changelog\n\n## 1.0.1\n\n- Fix.\n")
    git(repo, "commit", "-q", "-am", "release 1.0.1")
    git(repo, "tag", "v2")
    tag, reports = versions.compare(str(repo))
    assert tag == "v2" and all(not r.changed_files for r in reports)
    r = report_of(repo, "v1")
    assert r.version_old == "1.0.0" and r.version_new == "1.0.1" and not r.errors


def test_command_exit_codes_and_json(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["versions", "--root", str(repo)]) == EXIT_OK
    (demo(repo) / "main.yaml").write_text(TEMPLATE + "# comment\n")
    assert main(["versions", "--root", str(repo)]) == EXIT_FINDINGS
    assert "templates/heat/demo: error: files changed without a version bump" in capsys.readouterr().out
    assert main(["versions", "--root", str(repo), "--format", "json"]) == EXIT_FINDINGS
    data = json.loads(capsys.readouterr().out)
    assert data["against"] == "v1" and data["ok"] is False


def test_command_unknown_tag(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["versions", "--root", str(repo), "--against", "nope"]) == 1
    assert "nfvcat: error: git rev-parse" in capsys.readouterr().err


def test_no_tag_is_first_release(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "flavors").mkdir()
    git(tmp_path, "init", "-q")
    assert main(["versions", "--root", str(tmp_path)]) == EXIT_OK
    assert "no release tag" in capsys.readouterr().out
