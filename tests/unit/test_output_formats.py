"""The openstack CLI's output options on nfvcat's listing and reporting commands: ``-f json|yaml|table|value|csv``
(cliff's formatters) and ``-c COLUMN``, with ``--format`` as the long form, defined once
(nfvcat.commands.options). Without -c, ``-f json`` and ``-f text`` stay the commands' own output."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from nfvcat.catalog import flavors
from nfvcat.cli import main
from nfvcat.core.errors import EXIT_OK, EXIT_USAGE
from nfvcat.validation.rules import all_rules
from tests.conftest import ROOT, nfvcat
from tests.unit.cloudfake import cloud  # noqa: F401 (the fake's fixture)
from tests.unit.test_cloud_connect import machine, openrc_chain  # noqa: F401 (fixture)
from tests.unit.test_server import Server, server  # noqa: F401 (fixture)


def run(*args: str, cwd: Path = ROOT) -> str:
    proc = nfvcat(*args, cwd=cwd)
    assert proc.returncode in (0, 2) and not proc.stderr.startswith("nfvcat: error"), proc.stderr
    return proc.stdout


def test_rules_in_every_format() -> None:
    ids = [r.id for r in all_rules()]
    assert [r["id"] for r in yaml.safe_load(run("rules", "-f", "yaml"))] == ids
    assert run("rules", "-f", "value", "-c", "id").split() == ids
    table = run("rules", "-f", "table", "-c", "id", "-c", "severity").splitlines()
    assert table[0].startswith("+--") and table[1].split("|")[1:3] == [" id    ", " severity "]
    rows = list(csv.reader(io.StringIO(run("rules", "-f", "csv", "-c", "severity", "-c", "id"))))
    assert rows[0] == ["id", "severity"] and rows[1] == [ids[0], all_rules()[0].severity]  # the command's order
    assert json.loads(run("rules", "-f", "json", "-c", "id"))[0] == {"id": ids[0]}
    assert run("rules", "-f", "json") == run("rules", "--format", "json")  # the long form, the document


def test_flavor_list_and_versions() -> None:
    found = flavors.all_flavors()
    listed = yaml.safe_load(run("flavor", "list", "-f", "yaml"))
    assert [f["name"] for f in listed] == [f.name for f in found]
    assert listed[0]["extra_specs"] == found[0].specs()  # data, not a cell's text
    assert run("flavor", "list", "-f", "value", "-c", "name").split() == [f.name for f in found]
    assert "hw:cpu_policy='" in run("flavor", "list", "-f", "table", "-c", "extra_specs")
    entries = yaml.safe_load(run("versions", "-f", "yaml"))
    assert entries and {"entry", "version_old", "version_new", "errors"} <= set(entries[0])
    assert len(run("versions", "-f", "value", "-c", "entry").split()) == len(entries)


def test_plan_in_yaml_value_and_table() -> None:
    placed = yaml.safe_load(run("plan", "chain-vrouter", "-e", "sriov", "-f", "yaml"))
    doc = json.loads(run("plan", "chain-vrouter", "-e", "sriov", "-f", "json"))
    assert [(p["instance"], p["host"], p["pinned_cpus"]) for p in placed] == [
        (p["instance"], p["host"], p["pinned_cpus"]) for p in doc["placements"]]
    assert run("plan", "chain-vrouter", "-e", "sriov", "-f", "value", "-c", "host").split() == [
        p["host"] for p in doc["placements"]]
    assert "| instance" in run("plan", "chain-vrouter", "-e", "sriov", "-f", "table", "-c", "instance")


def test_column_errors_are_usage_errors() -> None:
    proc = nfvcat("rules", "-f", "markdown", "-c", "id")
    assert proc.returncode == EXIT_USAGE and "-c selects columns of -f table, value, csv, yaml or json" in proc.stderr
    proc = nfvcat("rules", "-f", "value", "-c", "nope")
    assert proc.returncode == EXIT_USAGE and "no such column (columns: id, severity" in proc.stderr


def test_check_in_yaml_and_value(machine: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,  # noqa: F811
                                 cloud: Any, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    m, _ = cloud
    inv = openrc_chain(m, monkeypatch, tmp_path)
    assert main(["check", "chain", "--inventory", str(inv), "-f", "yaml"]) == EXIT_OK
    verdicts = yaml.safe_load(capsys.readouterr().out)
    assert verdicts and set(verdicts[0]) == {"vnf", "subject", "check", "status", "detail"}
    assert main(["check", "chain", "--inventory", str(inv), "-f", "value", "-c", "status"]) == EXIT_OK
    assert set(capsys.readouterr().out.split()) == {"pass"}


def test_server_status_as_a_record(server: Server) -> None:  # noqa: F811
    assert server.run("server", "start").returncode == 0
    status = server.status()
    assert status is not None
    shown = yaml.safe_load(server.run("server", "status", "-f", "yaml").stdout)
    assert shown["pid"] == status["pid"] and shown["socket"] == status["socket"]
    assert server.run("server", "status", "-f", "value", "-c", "pid").stdout.split() == [str(status["pid"])]
