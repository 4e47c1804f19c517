"""``nfvcat versions`` against the release record, in throw-away git repositories, their clones and plain
copies (no tags travel with a clone's submission: the record does)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from nfvcat.catalog import releases, versions
from nfvcat.cli import main
from nfvcat.core.errors import EXIT_FINDINGS, EXIT_OK

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
    assert main(["release", "--root", str(tmp_path), "--no-tag"]) == EXIT_OK
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "release 1")
    return tmp_path


@pytest.fixture()
def clone(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh clone of ``repo``: no tags (there are none anywhere), only the committed record."""
    dest = tmp_path_factory.mktemp("clone") / "catalog"
    subprocess.run(["git", "clone", "-q", "--no-tags", str(repo), str(dest)], env=ENV, check=True)
    assert subprocess.run(["git", "tag"], cwd=dest, capture_output=True, text=True, check=True).stdout == ""
    return dest


def demo(repo: Path) -> Path:
    return repo / "templates" / "heat" / "demo"


def report_of(repo: Path, against: str | None = None) -> versions.EntryReport:
    where, reports = versions.compare(str(repo), against)
    assert where == (f"{against}:RELEASES.yaml" if against else "RELEASES.yaml")
    (r,) = [r for r in reports if r.entry == "templates/heat/demo"]
    return r


def test_unchanged_is_clean(repo: Path) -> None:
    _, reports = versions.compare(str(repo))
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
    assert by["hooks/h1"].notes == ["new entry (not in RELEASES.yaml)"] and not by["hooks/h1"].errors
    assert by["flavors/f1"].notes == ["entry removed since RELEASES.yaml"]


# The two cases of issue 16, in a fresh clone without a single tag: both passed when the gate used tags.
def test_clone_change_without_bump_fails(clone: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["versions", "--root", str(clone)]) == EXIT_OK
    (demo(clone) / "main.yaml").write_text(TEMPLATE.replace("description: VLAN.", "description: VLAN id."))
    assert main(["versions", "--root", str(clone)]) == EXIT_FINDINGS
    assert "templates/heat/demo: error: files changed without a version bump (still 1.0.0): main.yaml" \
        in capsys.readouterr().out


def test_clone_removed_parameter_with_minor_bump_fails(clone: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (demo(clone) / "main.yaml").write_text(TEMPLATE.replace("  vlan:\n    type: number\n    description: VLAN.\n"
                                                            "    default: 110\n", ""))
    (demo(clone) / "entry.yaml").write_text(ENTRY.format(v="1.1.0"))
    assert main(["versions", "--root", str(clone)]) == EXIT_FINDINGS
    assert "incompatible interface change needs a major version bump (have 1.0.0 -> 1.1.0): parameter 'vlan' " \
        "removed or renamed" in capsys.readouterr().out


def test_plain_copy_without_git(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    copy = tmp_path_factory.mktemp("copy") / "catalog"
    shutil.copytree(repo, copy, ignore=shutil.ignore_patterns(".git"))
    assert all(not r.errors and not r.changed_files for r in versions.compare(str(copy))[1])
    (demo(copy) / "main.yaml").write_text(TEMPLATE + "# comment\n")
    assert any("without a version bump" in e for e in report_of(copy).errors)


def test_against_a_ref_reads_the_committed_record(repo: Path) -> None:
    (demo(repo) / "entry.yaml").write_text(ENTRY.format(v="1.0.1"))
    (demo(repo) / "CHANGELOG.md").write_text("# Changelog\n\n## 1.0.1\n\n- Fix.\n")
    assert main(["release", "--root", str(repo), "--no-tag"]) == EXIT_OK
    git(repo, "commit", "-q", "-am", "release 2")
    _, reports = versions.compare(str(repo))
    assert all(not r.changed_files for r in reports)
    r = report_of(repo, "HEAD~1")
    assert r.version_old == "1.0.0" and r.version_new == "1.0.1" and not r.errors
    assert "1.0.1" in (repo / "RELEASES.yaml").read_text()


def test_release_refuses_a_failing_catalog(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = (repo / "RELEASES.yaml").read_text()
    (demo(repo) / "main.yaml").write_text(TEMPLATE + "# comment\n")
    assert main(["release", "--root", str(repo), "--no-tag"]) == EXIT_FINDINGS
    assert "not released: 1 entries fail" in capsys.readouterr().out
    assert (repo / "RELEASES.yaml").read_text() == before


def test_release_is_idempotent_and_tags_the_committed_record(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["release", "--root", str(repo)]) == EXIT_OK
    out = capsys.readouterr().out
    assert "release 1, 2 entries (unchanged)" in out
    assert "tagged templates/heat/demo/v1.0.0" in out and "tagged flavors/f1/v1.0.0" in out
    assert main(["release", "--root", str(repo)]) == EXIT_OK
    assert "tagged" not in capsys.readouterr().out
    (demo(repo) / "entry.yaml").write_text(ENTRY.format(v="1.0.1"))
    assert main(["release", "--root", str(repo)]) == EXIT_OK
    assert "commit RELEASES.yaml first" in capsys.readouterr().out


@pytest.mark.parametrize(("old", "new", "expected"), [
    ({"flavours": {"default": {"parameters": {}}}}, {"flavours": {}}, "flavour 'default' removed or renamed"),
    ({"flavours": {"default": {"parameters": {"a": {"type": "string"}}}}},
     {"flavours": {"default": {"parameters": {"a": {"type": "integer"}}}}},
     "flavour 'default': input 'a' retyped from string to integer"),
    ({"extra_specs": {"hw:cpu_policy": "dedicated"}}, {"extra_specs": {"hw:cpu_policy": "shared"}},
     "extra spec 'hw:cpu_policy' changed from 'dedicated' to 'shared'"),
    ({"extra_specs": {"hw:numa_nodes": "1"}}, {"extra_specs": {}}, "extra spec 'hw:numa_nodes' removed"),
    ({"placeholders": ["A"]}, {"placeholders": ["A", "B"]},
     "new placeholder '__B__' that existing templates do not fill"),
])
def test_breaking_changes_of_other_kinds(old: dict[str, object], new: dict[str, object], expected: str) -> None:
    assert versions.breaking_changes(old, new) == [expected]


def test_compatible_changes_of_other_kinds() -> None:
    assert versions.breaking_changes({"extra_specs": {"a": "1"}, "placeholders": ["A", "B"]},
                                     {"extra_specs": {"a": "1", "b": "2"}, "placeholders": ["A"]}) == []


def test_interface_of_a_hook_and_a_vnfd() -> None:
    hook = "#cloud-config\n# tokens look like __NAME__\nruncmd:\n  - echo __PEER__ __MTU__ __PEER__\n"
    assert releases.interface("hook", None, {}, hook) == {"placeholders": ["MTU", "PEER"]}
    df = {"topology_template": {"inputs": {"descriptor_id": {"type": "string"}, "n": {"type": "integer",
                                                                                      "default": 2}},
                                "substitution_mappings": {"properties": {"flavour_id": "small"}}}}
    assert releases.interface("vnfd", {}, {"Definitions/df.yaml": df}) == {"flavours": {"small": {"parameters": {
        "descriptor_id": {"type": "string"}, "n": {"type": "integer", "default": 2}}}}}


def test_command_exit_codes_and_json(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["versions", "--root", str(repo)]) == EXIT_OK
    (demo(repo) / "main.yaml").write_text(TEMPLATE + "# comment\n")
    assert main(["versions", "--root", str(repo)]) == EXIT_FINDINGS
    assert "templates/heat/demo: error: files changed without a version bump" in capsys.readouterr().out
    assert main(["versions", "--root", str(repo), "--format", "json"]) == EXIT_FINDINGS
    data = json.loads(capsys.readouterr().out)
    assert data["against"] == "RELEASES.yaml" and data["ok"] is False


def test_command_unknown_ref(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["versions", "--root", str(repo), "--against", "nope"]) == 1
    assert "nfvcat: error: no RELEASES.yaml at nope" in capsys.readouterr().err


def test_no_record_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "flavors").mkdir()
    git(tmp_path, "init", "-q")
    assert main(["versions", "--root", str(tmp_path)]) == EXIT_FINDINGS
    assert "no release record" in capsys.readouterr().err


def test_corrupt_record_is_one_line(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "RELEASES.yaml").write_text("format: 1\nentries: [\n")
    assert main(["versions", "--root", str(repo)]) == 1
    assert "RELEASES.yaml: not YAML" in capsys.readouterr().err


def _released(root: Path) -> dict[str, str | None]:
    record = releases.read_record(root)
    assert record is not None
    return {name: item.get("released") for name, item in record["entries"].items()}


def test_the_record_dates_each_version_when_it_is_first_released(repo: Path) -> None:
    first = _released(repo)
    assert set(first.values()) == {datetime.now(UTC).date().isoformat()}  # the release of the fixture
    (demo(repo) / "entry.yaml").write_text(ENTRY.format(v="1.1.0"))
    (demo(repo) / "CHANGELOG.md").write_text("# Changelog\n\n## 1.1.0\n\n- Second.\n\n## 1.0.0\n\n- First.\n")
    releases.write_record(repo, releases.snapshot(repo), "2030-01-02")
    assert _released(repo) == {**first, "templates/heat/demo": "2030-01-02"}  # f1 keeps its day


def test_a_record_without_dates_is_dated_from_gits_history(repo: Path) -> None:
    record = releases.record_path(repo)
    record.write_text("".join(line for line in record.read_text().splitlines(keepends=True)
                              if not line.strip().startswith("released:")))
    env = {"GIT_COMMITTER_DATE": "2001-02-03T23:30:00+00:00"}
    subprocess.run(["git", "commit", "-q", "-a", "--amend", "-m", "release 1, undated"], cwd=repo,
                   env={**ENV, **env}, check=True)
    assert set(_released(repo).values()) == {None}
    releases.write_record(repo, releases.snapshot(repo), "2030-01-02")
    assert set(_released(repo).values()) == {"2001-02-03"}  # the commit that recorded the versions


def test_a_release_dates_the_new_versions_changelog_heading_and_the_tools_section(repo: Path) -> None:
    """The day a version is released stands in its CHANGELOG heading (replacing a date written before), in the
    record, and on the tool's [Unreleased] section, which becomes that release's; a release with nothing new
    dates nothing."""
    day = datetime.now(UTC).date().isoformat()
    (repo / "CHANGELOG.md").write_text("# Changelog\n\n## [Unreleased]\n\n### Added\n- A thing.\n")
    (demo(repo) / "entry.yaml").write_text(ENTRY.format(v="1.1.0"))
    (demo(repo) / "CHANGELOG.md").write_text("# Changelog\n\n## 1.1.0 - 2001-01-01\n\n- Second.\n\n## 1.0.0\n\n- F.\n")
    assert main(["release", "--root", str(repo), "--no-tag"]) == EXIT_OK
    assert f"## 1.1.0 - {day}\n" in (demo(repo) / "CHANGELOG.md").read_text()
    assert "## 1.0.0\n" in (demo(repo) / "CHANGELOG.md").read_text()  # released before: not this release's
    assert _released(repo)["templates/heat/demo"] == day
    tool = (repo / "CHANGELOG.md").read_text()
    assert tool == f"# Changelog\n\n## [Unreleased]\n\n## [Release 2] - {day}\n\n### Added\n- A thing.\n"
    assert main(["release", "--root", str(repo), "--no-tag"]) == EXIT_OK  # unchanged
    assert (repo / "CHANGELOG.md").read_text() == tool
    assert versions.compare(str(repo))[1][0].errors == []  # the dated heading is what the record holds


def test_a_release_that_cannot_be_recorded_leaves_the_changelogs_as_they_were(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (demo(repo) / "entry.yaml").write_text(ENTRY.format(v="1.1.0"))
    before = "# Changelog\n\n## 1.1.0\n\n- Second.\n\n## 1.0.0\n\n- F.\n"
    (demo(repo) / "CHANGELOG.md").write_text(before)

    seen: list[str] = []

    def refuse(*_: object, **__: object) -> None:
        seen.append((demo(repo) / "CHANGELOG.md").read_text())
        raise OSError("disk full")

    monkeypatch.setattr(releases, "write_record", refuse)
    assert main(["release", "--root", str(repo), "--no-tag"]) != EXIT_OK
    assert "## 1.1.0 - " in seen[0]  # dated before the record was to be written
    assert (demo(repo) / "CHANGELOG.md").read_text() == before
