"""Day 2: released versions from the record's git history (NAME@VERSION), the NAME@VERSION mark on what nfvcat
deploys and `nfvcat list`, against a catalog in a throwaway git repository and OpenStack faked at the HTTP level
(tests/unit/cloudfake.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from nfvcat import cli
from nfvcat.catalog import history, releases
from nfvcat.core.errors import UserError
from tests.unit.cloudfake import HEAT, connection, sent

TEMPLATE = """heat_template_version: 2021-04-16
parameters:
{params}
resources:
  port:
    type: OS::Neutron::Port
    properties:
      network: {{get_param: {net}}}
outputs:
  port_id:
    value: {{get_resource: port}}
"""


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def write_version(repo: Path, version: str, net: str = "network", note: str = "") -> None:
    """The demo entry at ``version`` (its network parameter called ``net``), released and committed."""
    d = repo / "templates" / "heat" / "demo"
    d.mkdir(parents=True, exist_ok=True)
    (d / "entry.yaml").write_text(f"name: demo\nversion: {version}\nkind: heat\ndescription: A demo.\n"
                                  "template: demo.yaml\n")
    (d / "demo.yaml").write_text(TEMPLATE.format(params=f"  {net}:\n    type: string\n"
                                                        "  size:\n    type: number\n    default: 1\n", net=net))
    log = d / "CHANGELOG.md"
    old = log.read_text() if log.exists() else "# Changelog: demo\n"
    head, _, rest = old.partition("\n")
    log.write_text(f"{head}\n\n## {version}\n\n- {note or 'Changed.'}\n{rest}")
    releases.write_record(repo, releases.snapshot(repo))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", f"demo {version}")


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A catalog repository with demo 1.0.0, 1.1.0 and 2.0.0 released (2.0.0 renames `network` to `net`),
    and no git tag at all (a clone without tags)."""
    r = tmp_path / "repo"
    (r / "flavors").mkdir(parents=True)
    (r / "flavors" / "README.md").write_text("none\n")
    _git(r, "init", "-q")
    _git(r, "config", "user.email", "t@example.org")
    _git(r, "config", "user.name", "t")
    write_version(r, "1.0.0")
    write_version(r, "1.1.0")
    write_version(r, "2.0.0", net="net", note="Upgrading to 2.0.0: `network` is now `net`.")
    assert _git(r, "tag") == ""
    monkeypatch.setenv("NFVCAT_CATALOG_DIR", str(r))
    return r


def test_released_versions_come_from_the_record_history_in_a_clone_without_tags(repo: Path) -> None:
    assert history.versions(repo, "demo", "heat") == ["1.0.0", "1.1.0", "2.0.0"]
    old = history.resolve(repo, "demo@1.0.0", "heat")
    assert old.version == "1.0.0" and "network:" in old.template.read_text()
    assert old.dir != (repo / "templates" / "heat" / "demo").resolve()  # the release's own files, not HEAD's
    assert history.resolve(repo, "demo@2.0.0", "heat").dir == (repo / "templates" / "heat" / "demo").resolve()


def test_a_version_never_released_is_an_error_listing_the_released_ones(repo: Path) -> None:
    with pytest.raises(UserError, match=r"demo@1\.5\.0: never released \(released: 1\.0\.0, 1\.1\.0, 2\.0\.0\)"):
        history.resolve(repo, "demo@1.5.0", "heat")


def test_a_release_whose_files_do_not_have_the_recorded_digests_is_refused(repo: Path) -> None:
    # a record of 2.1.0 committed without its files: the commit's tree does not have the recorded sha256s
    d = repo / "templates" / "heat" / "demo"
    (d / "entry.yaml").write_text((d / "entry.yaml").read_text().replace("2.0.0", "2.1.0"))
    (d / "demo.yaml").write_text((d / "demo.yaml").read_text() + "# 2.1.0\n")
    releases.write_record(repo, releases.snapshot(repo))
    _git(repo, "checkout", "--", "templates")
    _git(repo, "commit", "-qam", "the record alone")
    with pytest.raises(UserError, match=r"demo@2\.1\.0: no commit holds the recorded files \(sha256 differ"):
        history.resolve(repo, "demo@2.1.0", "heat")


def test_changelog_sections_between_two_versions(repo: Path) -> None:
    notes = history.changelog(repo / "templates" / "heat" / "demo", "1.0.0", "2.0.0")
    assert [v for v, _ in notes] == ["2.0.0", "1.1.0"] and "Upgrading to 2.0.0" in notes[0][1]


# ---- the mark and nfvcat list ---------------------------------------------------------------------------------

@pytest.fixture
def heat(repo: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    import requests_mock

    from tests.unit.cloudfake import _discovery

    with requests_mock.Mocker() as m:
        _discovery(m)
        conn = connection()
        monkeypatch.setattr("nfvcat.cloud.connect.connect", lambda name: conn)
        yield m


def test_instantiate_at_a_released_version_deploys_its_files_and_marks_the_stack(heat: Any, capsys: Any) -> None:
    m = heat
    m.get(f"{HEAT}/stacks?name=demo", json={"stacks": []})
    m.post(f"{HEAT}/stacks", json={"stack": {"id": "s1"}}, status_code=201)
    m.get(f"{HEAT}/stacks/demo/s1/events", json={"events": []})
    m.get(f"{HEAT}/stacks/demo/s1", json={"stack": {"id": "s1", "stack_name": "demo",
                                                    "stack_status": "CREATE_COMPLETE"}})
    assert cli.main(["instantiate", "demo@1.0.0", "--no-check", "--os-cloud", "x", "-P", "network=n"]) == 0
    body = sent(m, "POST", r"/stacks$")[0].json()
    assert "network" in body["template"]["parameters"] and "net" not in body["template"]["parameters"]
    assert body["tags"] == "nfvcat:demo@1.0.0"


def test_list_shows_each_marked_stack_with_its_version_the_newest_and_outdated(heat: Any, capsys: Any) -> None:
    heat.get(f"{HEAT}/stacks", json={"stacks": [
        {"id": "s1", "stack_name": "old", "stack_status": "CREATE_COMPLETE", "tags": ["nfvcat:demo@1.0.0"]},
        {"id": "s2", "stack_name": "new", "stack_status": "UPDATE_COMPLETE", "tags": ["x", "nfvcat:demo@2.0.0"]},
        {"id": "s3", "stack_name": "not-ours", "stack_status": "CREATE_COMPLETE", "tags": None}]})
    assert cli.main(["list", "--os-cloud", "x", "--format", "json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert set(rows) == {"old", "new"}
    assert rows["old"] == {"via": "heat", "name": "old", "id": "s1", "entry": "demo", "version": "1.0.0",
                           "status": "CREATE_COMPLETE", "newest": "2.0.0", "outdated": True}
    assert rows["new"]["outdated"] is False and rows["new"]["version"] == "2.0.0"
    assert cli.main(["list", "--os-cloud", "x"]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0].split() == ["via", "name", "entry", "version", "status", "newest", "outdated"]
    assert text[2].split() == ["heat", "old", "demo", "1.0.0", "CREATE_COMPLETE", "2.0.0", "outdated"]
    assert cli.main(["list", "--os-cloud", "x", "-f", "value", "-c", "name", "-c", "outdated"]) == 0
    assert capsys.readouterr().out.splitlines() == ["new False", "old True"]
