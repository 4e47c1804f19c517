"""Day 2: released versions from the record's git history (NAME@VERSION), the NAME@VERSION mark on what nfvcat
deploys and `nfvcat list`, against a catalog in a throwaway git repository and OpenStack faked at the HTTP level
(tests/unit/cloudfake.py)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from nfvcat import cli
from nfvcat.catalog import history, releases
from nfvcat.core.errors import EXIT_FINDINGS, EXIT_USAGE, UserError
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
                                  "template: demo.yaml\nstate:\n  - {resource: server, holds: the session keys, "
                                  "carry: none; peers re-key}\n")
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


def test_validate_takes_a_released_version(repo: Path, capsys: Any) -> None:
    assert cli.main(["validate", "demo@1.0.0", "--no-server", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["summary"]["files"] >= 2  # the release's entry.yaml and template
    assert cli.main(["validate", "demo@1.5.0", "--no-server"]) == 1
    assert "never released (released: 1.0.0, 1.1.0, 2.0.0)" in capsys.readouterr().err


def test_a_chains_vnf_server_state_is_the_nested_entrys() -> None:
    from nfvcat.catalog import entries
    from tests.conftest import ROOT

    chain = entries.find(ROOT, "chain-vrouter", "heat")
    [state] = chain.state("server", "vrouter")
    assert "OSPF" in state["holds"] and "vrouter-acl --counters" in state["carry"]
    assert chain.state("server") == [] and chain.state("port", "vrouter") == []


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
        monkeypatch.setattr("nfvcat.cloud.connect.connect", lambda name, *timeouts: conn)
        # the servers of a stack `list` names the images of (none here: tests/unit/test_image_provenance.py)
        m.get(re.compile(rf"^{HEAT}/stacks/[^/]+/[^/]+/resources\?nested_depth=5$"), json={"resources": []})
        yield m


def test_instantiate_at_a_released_version_deploys_its_files_and_marks_the_stack(heat: Any, capsys: Any) -> None:
    m = heat
    m.get(f"{HEAT}/stacks?name=demo", json={"stacks": []})
    m.post(f"{HEAT}/stacks", json={"stack": {"id": "s1"}}, status_code=201)
    m.get(f"{HEAT}/stacks/demo/s1/events", json={"events": []})
    m.get(f"{HEAT}/stacks/demo/s1", json={"stack": {"id": "s1", "stack_name": "demo",
                                                    "stack_status": "CREATE_COMPLETE"}})
    assert cli.main(["instantiate", "demo@1.0.0", "--no-check", "--ready-timeout", "0", "--os-cloud", "x",
                     "-P", "network=n"]) == 0
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
                           "status": "CREATE_COMPLETE", "newest": "2.0.0", "outdated": True, "images": []}
    assert rows["new"]["outdated"] is False and rows["new"]["version"] == "2.0.0"
    assert cli.main(["list", "--os-cloud", "x"]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0].split() == ["via", "name", "entry", "version", "status", "newest", "outdated", "images"]
    assert text[2].split() == ["heat", "old", "demo", "1.0.0", "CREATE_COMPLETE", "2.0.0", "outdated", "-"]
    assert cli.main(["list", "--os-cloud", "x", "-f", "value", "-c", "name", "-c", "outdated"]) == 0
    assert capsys.readouterr().out.splitlines() == ["new False", "old True"]


# ---- nfvcat upgrade -------------------------------------------------------------------------------------------

class DemoStack:
    """Heat holding stack demo (id s1) at ``version``: each GET of the stack answers the next of ``statuses``
    (the last one stays); a PATCH update takes the tags it is sent and answers ``after_update`` from then on."""

    def __init__(self, m: Any, version: str, statuses: list[str], events: list[dict[str, Any]] | None = None,
                 after_update: list[str] | None = None) -> None:
        self.m, self.statuses, self.events = m, list(statuses), list(events or [])
        self.after_update = after_update or ["UPDATE_IN_PROGRESS", "UPDATE_COMPLETE"]
        self.tags = [f"nfvcat:demo@{version}"]
        self.params = {"network": "net-a", "size": "1"}
        self.updated = "2026-11-26T10:00:00Z"
        self.preview: dict[str, Any] = {"replaced": [], "updated": [], "added": [], "deleted": [],
                                        "unchanged": [{"resource_name": "port", "resource_type": "OS::Neutron::Port"}]}
        m.get(f"{HEAT}/stacks", json=lambda req, ctx: {"stacks": [self.body()]})  # with ?name=demo too
        m.get(f"{HEAT}/stacks/demo/s1", json=lambda req, ctx: {"stack": self.body(advance=True)})
        m.get(f"{HEAT}/stacks/demo/s1/events", json=lambda req, ctx: {"events": self.events})
        m.get(f"{HEAT}/stacks/demo/s1/environment", json=lambda req, ctx: {"parameters": {"network": "net-a"}})
        m.patch(f"{HEAT}/stacks/demo/s1/preview?show_nested=true",
                json=lambda req, ctx: {"resource_changes": self.preview})
        m.patch(f"{HEAT}/stacks/demo/s1", json=self._update, status_code=202)

    def body(self, advance: bool = False) -> dict[str, Any]:
        status = self.statuses[0]
        if advance and len(self.statuses) > 1:
            self.statuses.pop(0)
        return {"id": "s1", "stack_name": "demo", "stack_status": status, "tags": self.tags,
                "updated_time": self.updated, "parameters": self.params}

    def _update(self, req: Any, ctx: Any) -> dict[str, Any]:
        self.tags = req.json()["tags"].split(",")
        self.updated = "2026-11-26T11:00:00Z"
        self.statuses = list(self.after_update)
        return {}

    def updates(self) -> list[dict[str, Any]]:
        return [r.json() for r in sent(self.m, "PATCH", r"/stacks/demo/s1$")]


@pytest.fixture
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("nfvcat.cloud.upgrade.time.sleep", lambda s: None)


def test_upgrade_dry_run_prints_heats_preview_the_servers_that_go_down_and_the_changelog(
        heat: Any, capsys: Any) -> None:
    stack = DemoStack(heat, "1.0.0", ["CREATE_COMPLETE"])
    stack.preview["replaced"] = [{"resource_name": "server", "resource_type": "OS::Nova::Server",
                                  "physical_resource_id": "srv-1"}]
    stack.preview["deleted"] = [{"resource_name": "server", "resource_type": "OS::Nova::Server",
                                 "parent_resource": "vnf"}]  # as Heat shows it: the stack's resources hold its id
    heat.get(f"{HEAT}/stacks/demo/s1/resources", json={"resources": [
        {"resource_name": "server", "parent_resource": "vnf", "physical_resource_id": "srv-9"}]})
    stack.preview["updated"] = [{"resource_name": "port", "resource_type": "OS::Neutron::Port"}]
    assert cli.main(["upgrade", "demo", "--to", "1.1.0", "--dry-run", "--os-cloud", "x"]) == 0
    out = capsys.readouterr().out
    assert "demo: demo 1.0.0 -> 1.1.0 (minor), stack CREATE_COMPLETE" in out
    assert "  replaced   server (OS::Nova::Server)" in out and "  updated    port (OS::Neutron::Port)" in out
    assert "Servers that go down: \n  server (server srv-1): replaced\n  vnf/server (server srv-9): deleted\n" in out
    assert "State a replacement does not inherit:\n  server holds the session keys; to carry it: none; peers re-key" \
        in out
    assert "Interface change: none" in out and "CHANGELOG 1.1.0:" in out
    preview = sent(heat, "PATCH", r"/preview\?show_nested=true$")[0].json()
    assert preview["tags"] == "nfvcat:demo@1.1.0,nfvcat-from:demo@1.0.0" and preview["disable_rollback"] is False
    assert "network" in preview["template"]["parameters"]
    assert stack.updates() == []  # a dry run changes nothing


def test_upgrade_puts_the_targets_images_on_the_cloud_before_heats_preview(
        heat: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """main's image step kept inside ``upgrade.prepare`` (h41): the target's entry.yaml, --image-dir and --image
    handed to ``release_images.ensure`` before the preview request, on a dry run too."""
    DemoStack(heat, "1.0.0", ["CREATE_COMPLETE"])
    image = tmp_path / "vrouter.qcow2"
    image.write_bytes(b"qcow")
    calls: list[tuple[str, Any, Any, int]] = []

    def ensure(conn: Any, root: Path, meta: Any, image_dir: Any, overrides: Any, say: Any,
               skip: Any = None) -> list[Any]:
        calls.append((meta["version"], image_dir, overrides, len(sent(heat, "PATCH", r"/preview"))))
        return []

    monkeypatch.setattr("nfvcat.cloud.release_images.ensure", ensure)
    assert cli.main(["upgrade", "demo", "--to", "1.1.0", "--dry-run", "--os-cloud", "x", "--image-dir",
                     str(tmp_path), "--image", f"vrouter={image}"]) == 0
    assert calls == [("1.1.0", tmp_path, {"vrouter": image}, 0)]
    assert len(sent(heat, "PATCH", r"/preview")) == 1


def test_a_major_upgrade_is_refused_until_each_removed_parameter_is_mapped(heat: Any, capsys: Any,
                                                                          no_sleep: None) -> None:
    stack = DemoStack(heat, "1.1.0", ["UPDATE_COMPLETE"])
    assert cli.main(["upgrade", "demo", "--yes", "--os-cloud", "x", "--no-check"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "1.1.0 -> 2.0.0 is a major upgrade" in err and "--map network=NEW" in err
    assert stack.updates() == []
    assert cli.main(["upgrade", "demo", "--yes", "--os-cloud", "x", "--no-check", "--map", "network=net"]) == 0
    [body] = stack.updates()
    assert body["parameters"] == {"net": "net-a"} and body["clear_parameters"] == ["network"]
    stack.params = {"net": "net-a", "size": "1"}  # the same command again, on the upgraded stack: nothing to do
    assert cli.main(["upgrade", "demo", "--yes", "--os-cloud", "x", "--no-check", "--map", "network=net"]) == 0
    assert len(stack.updates()) == 1
    assert body["tags"] == "nfvcat:demo@2.0.0,nfvcat-from:demo@1.1.0" and body["disable_rollback"] is False
    assert "Upgrading to 2.0.0" in capsys.readouterr().out


def test_a_failed_update_is_rolled_back_and_names_the_failed_resource(heat: Any, capsys: Any,
                                                                    no_sleep: None) -> None:
    stack = DemoStack(heat, "1.0.0", ["CREATE_COMPLETE"],
                      after_update=["UPDATE_IN_PROGRESS", "UPDATE_FAILED", "ROLLBACK_IN_PROGRESS",
                                    "ROLLBACK_COMPLETE"])
    stack.events = [{"id": "e0", "resource_name": "demo", "resource_status": "CREATE_COMPLETE"}]
    heat.get(f"{HEAT}/stacks/demo/s1/events", [
        {"json": {"events": stack.events}}, {"json": {"events": stack.events}},
        {"json": {"events": [*stack.events,
                             {"id": "e1", "resource_name": "port", "resource_status": "UPDATE_FAILED",
                              "resource_status_reason": "Conflict: IP address 10.0.0.5 already allocated"},
                             {"id": "e2", "resource_name": "demo", "resource_status": "ROLLBACK_COMPLETE"}]}}])
    assert cli.main(["upgrade", "demo", "--to", "1.1.0", "--yes", "--os-cloud", "x", "--no-check"]) == EXIT_FINDINGS
    err = capsys.readouterr().err
    assert "update to demo@1.1.0 failed at port UPDATE_FAILED: Conflict: IP address 10.0.0.5 already allocated" \
        in err and "rolled back to the version before" in err
    # Heat's rollback keeps the update's tags: the version the update came from is what runs
    assert cli.main(["list", "--os-cloud", "x", "--format", "json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert (row["version"], row["status"], row["outdated"]) == ("1.0.0", "ROLLBACK_COMPLETE", True)


def test_an_upgrade_interrupted_during_the_update_is_finished_by_the_next_run(heat: Any, no_sleep: None) -> None:
    # Ctrl-C or kill: Heat goes on; the next run waits for it and finds the stack at the target
    stack = DemoStack(heat, "1.1.0", ["UPDATE_IN_PROGRESS", "UPDATE_IN_PROGRESS", "UPDATE_COMPLETE"])
    assert cli.main(["upgrade", "demo", "--to", "1.1.0", "--yes", "--os-cloud", "x", "--no-check"]) == 0
    assert stack.updates() == []


def test_an_update_heat_engine_lost_is_run_again_by_the_next_run(heat: Any, no_sleep: None) -> None:
    # heat-engine restarted mid-update: Heat marks the stack UPDATE_FAILED, tagged with the target already
    stack = DemoStack(heat, "1.1.0", ["UPDATE_FAILED"])
    stack.tags.append("nfvcat-from:demo@1.0.0")
    assert cli.main(["upgrade", "demo", "--to", "1.1.0", "--yes", "--os-cloud", "x", "--no-check"]) == 0
    [body] = stack.updates()
    assert body["tags"] == "nfvcat:demo@1.1.0,nfvcat-from:demo@1.0.0"  # still from 1.0.0, should it roll back


def test_an_update_no_engine_works_on_any_more_is_sent_again(heat: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # heat-engine killed mid-update: the convergence engine leaves the stack UPDATE_IN_PROGRESS, no event comes
    clock = iter(range(0, 10_000, 5))
    monkeypatch.setattr("nfvcat.cloud.upgrade.time.monotonic", lambda: float(next(clock)))
    monkeypatch.setattr("nfvcat.cloud.upgrade.time.sleep", lambda s: None)
    stack = DemoStack(heat, "1.1.0", ["UPDATE_IN_PROGRESS"])
    stack.tags.append("nfvcat-from:demo@1.0.0")
    assert cli.main(["upgrade", "demo", "--to", "1.1.0", "--yes", "--os-cloud", "x", "--no-check",
                     "--stall", "60"]) == 0
    [body] = stack.updates()
    assert body["tags"] == "nfvcat:demo@1.1.0,nfvcat-from:demo@1.0.0"
