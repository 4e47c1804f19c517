"""Every command that takes a template takes a catalog entry by name too, and its example environments by short
name (``nfvcat plan chain-vrouter -e sriov``), through one resolver (nfvcat.catalog.entries.template), as
``instantiate`` always did: the same output as with the files' paths."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from nfvcat.catalog import entries
from nfvcat.core.errors import UserError
from nfvcat_testbeds.lab import chain as c
from tests.conftest import ROOT, nfvcat

CHAIN = ROOT / "templates" / "heat" / "chain-vrouter"
GW = ROOT / "templates" / "heat" / "vnf-ipsec-gw"
GW_A = [a for k, v in c.gateway_parameters("a", udp_encap=True).items() for a in ("-P", f"{k}={v}")]


def test_plan_takes_an_entry_and_an_example_by_name() -> None:
    by_name = nfvcat("plan", "chain-vrouter", "-e", "sriov", cwd=ROOT / "docs")
    by_path = nfvcat("plan", str(CHAIN / "chain-vrouter.yaml"), "-e", str(CHAIN / "examples" / "sriov.env.yaml"))
    assert by_name.returncode == by_path.returncode == 0, by_name.stderr
    assert by_name.stdout.splitlines()[1:] == by_path.stdout.splitlines()[1:]  # the first line names the files
    assert "physnet_sriov" in by_name.stdout


def test_day0_takes_an_example_by_name() -> None:
    by_name = nfvcat("day0", "render", "ipsec-gw", "-e", "initiator", *GW_A)
    by_path = nfvcat("day0", "render", str(GW / "ipsec-gw.yaml"), "-e", str(GW / "examples" / "initiator.env.yaml"),
                     *GW_A)
    assert by_name.returncode == by_path.returncode == 0, by_name.stderr
    assert by_name.stdout == by_path.stdout and "#cloud-config" in by_name.stdout


def test_translate_takes_a_tosca_entry_by_name() -> None:
    by_name = nfvcat("translate", "chain-vrouter")
    by_path = nfvcat("translate", str(ROOT / "templates" / "tosca" / "chain-vrouter" / "chain-vrouter.yaml"))
    assert by_name.returncode == by_path.returncode == 0, by_name.stderr
    assert by_name.stdout == by_path.stdout and "OS::Nova::Server" in by_name.stdout


def test_the_resolver(tmp_path: Path) -> None:
    found = entries.template("chain-vrouter", root=ROOT)
    assert found.path == CHAIN / "chain-vrouter.yaml" and found.entry_dir == CHAIN
    assert found.environments(["sriov", "ovs-dpdk"]) == [CHAIN / "examples" / "sriov.env.yaml",
                                                        CHAIN / "examples" / "ovs-dpdk.env.yaml"]
    assert entries.template(str(CHAIN), root=ROOT).path == found.path
    assert entries.template("ipsec-gw", root=ROOT).entry_dir == GW  # a VNF by its short name
    inside = entries.template(str(CHAIN / "chain-vrouter.yaml"))
    assert inside.entry_dir == CHAIN and inside.environments(["sriov"]) == [CHAIN / "examples" / "sriov.env.yaml"]
    loose = tmp_path / "mine.yaml"
    loose.write_text("heat_template_version: 2021-04-16\n")
    with pytest.raises(UserError, match=r"-e sriov: no such file$"):
        entries.template(str(loose)).environments(["sriov"])
    with pytest.raises(UserError, match="-e nope: no such file, nor an example of chain-vrouter"):
        found.environments(["nope"])
    with pytest.raises(UserError, match="nope: no such file, nor a heat entry in templates/heat"):
        entries.template("nope", root=ROOT)


def test_the_commands_share_the_one_resolver() -> None:
    users = {"commands/plan.py", "commands/instantiate.py", "commands/translate.py", "day0/render.py",
             "campaign/controlplane.py"}
    for rel in users:
        tree = ast.parse((ROOT / "tools" / "nfvcat" / rel).read_text())
        calls = {n.func.attr for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                 and isinstance(n.func.value, ast.Name) and n.func.value.id == "entries"}
        assert "template" in calls, rel
