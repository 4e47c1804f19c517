"""README parameter/output tables: rendering, marker handling, drift detection and the docs command."""

from __future__ import annotations

from pathlib import Path

import pytest

from nfvcat.catalog import readme_tables as rt
from nfvcat.cli import main
from nfvcat.core import yamlpos
from nfvcat.core.errors import EXIT_FINDINGS, EXIT_OK

TEMPLATE = """\
heat_template_version: 2021-04-16
description: A test entry.
parameters:
  vlan:
    type: number
    description: VLAN id | inside the range
    default: 110
    constraints:
      - range: {min: 100, max: 199}
  psk:
    type: string
    description: Secret.
    hidden: true
    constraints:
      - length: {min: 20}
  plane:
    type: string
    description: >
      Data plane,
      folded.
    default: sriov
    constraints:
      - allowed_values: [sriov, ovs-dpdk]
  rules:
    type: json
    description: Many rules.
    default: [aaaaaaaaaaaaaaaaaaaa, bbbbbbbbbbbbbbbbbbbbbb, cccccccccccccccccccccc, dddddddddddddd]
  cidr:
    type: string
    description: A prefix.
    constraints:
      - custom_constraint: net_cidr
outputs:
  port:
    description: ID of the port.
    value: {get_resource: port}
resources: {}
"""


def make_entry(root: Path, name: str = "demo", readme: str | None = None) -> Path:
    d = root / "templates" / "heat" / name
    d.mkdir(parents=True)
    (d / "entry.yaml").write_text(
        f"name: {name}\nversion: 1.0.0\nkind: heat\ndescription: d\ntemplate: main.yaml\n")
    (d / "main.yaml").write_text(TEMPLATE)
    if readme is not None:
        (d / "README.md").write_text(readme)
    (root / "flavors").mkdir(exist_ok=True)
    return d


def test_render_rows() -> None:
    out = rt.render(yamlpos.load(TEMPLATE)[0])
    assert "| `vlan` | number | `110` | range 100..199 | VLAN id \\| inside the range |" in out
    assert "| `psk` | string | (required, hidden) | length 20.. | Secret. |" in out
    assert "one of `sriov`, `ovs-dpdk`" in out
    assert "Data plane, folded." in out
    assert "4 items (see template)" in out
    assert "| `cidr` | string | (required) | `net_cidr` | A prefix. |" in out
    assert "| `port` | ID of the port. |" in out


def test_render_empty_sections() -> None:
    out = rt.render({"heat_template_version": "2021-04-16", "resources": {}})
    assert out.count("None.") == 2


def test_render_rejects_non_mapping() -> None:
    with pytest.raises(rt.ReadmeError):
        rt.render(["not", "a", "template"])


def test_replace_keeps_text_outside_markers() -> None:
    readme = f"# T\n\nintro\n\n{rt.BEGIN}\nold\n{rt.END}\n\nfooter\n"
    new = rt.replace_tables(readme, "NEW\n")
    assert new == f"# T\n\nintro\n\n{rt.BEGIN}\nNEW\n{rt.END}\n\nfooter\n"
    assert rt.replace_tables(new, "NEW\n") == new


@pytest.mark.parametrize("readme", [
    "no markers",
    f"{rt.END}\n{rt.BEGIN}\n",
    f"{rt.BEGIN}\n{rt.BEGIN}\n{rt.END}\n",
])
def test_replace_bad_markers(readme: str) -> None:
    with pytest.raises(rt.ReadmeError):
        rt.replace_tables(readme, "x\n")


def test_generate_then_check_clean(tmp_path: Path) -> None:
    d = make_entry(tmp_path, readme=f"# demo\n\nHand-written.\n\n{rt.BEGIN}\n{rt.END}\n")
    (entry,) = list(rt.find_hot_entries(str(tmp_path)))
    assert rt.process(entry, write=False).status == "drift"
    assert rt.process(entry, write=True).status == "updated"
    assert rt.process(entry, write=False).status == "ok"
    text = (d / "README.md").read_text()
    assert text.startswith("# demo\n\nHand-written.\n")
    assert "| `vlan` |" in text


def test_drift_after_template_change(tmp_path: Path) -> None:
    d = make_entry(tmp_path, readme=f"{rt.BEGIN}\n{rt.END}\n")
    (entry,) = list(rt.find_hot_entries(str(tmp_path)))
    rt.process(entry, write=True)
    (d / "main.yaml").write_text(TEMPLATE.replace("A prefix.", "Another prefix."))
    outcome = rt.process(entry, write=False)
    assert outcome.status == "drift"
    assert "differ" in outcome.message


def test_missing_readme_and_missing_markers(tmp_path: Path) -> None:
    d = make_entry(tmp_path)
    (entry,) = list(rt.find_hot_entries(str(tmp_path)))
    assert rt.process(entry, write=False).message == "README.md is missing"
    assert rt.process(entry, write=True).status == "updated"
    assert "# demo\n\nA test entry." in (d / "README.md").read_text()
    (d / "README.md").write_text("# demo\n\nno markers yet\n")
    assert rt.process(entry, write=False).status == "drift"
    assert rt.process(entry, write=True).status == "updated"
    assert rt.process(entry, write=False).status == "ok"


def test_only_heat_entries_found(tmp_path: Path) -> None:
    make_entry(tmp_path)
    f = tmp_path / "flavors" / "f1"
    f.mkdir(parents=True)
    (f / "entry.yaml").write_text("name: f1\nversion: 1.0.0\nkind: flavor\ndescription: d\ntemplate: flavor.yaml\n")
    assert [e.name for e in rt.find_hot_entries(str(tmp_path))] == ["demo"]


def test_docs_command_check_names_entry(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_entry(tmp_path, "alpha", readme=f"{rt.BEGIN}\n{rt.END}\n")
    make_entry(tmp_path, "beta", readme=f"{rt.BEGIN}\n{rt.END}\n")
    heat = str(tmp_path / "templates" / "heat")
    assert main(["docs", "--check", heat]) == EXIT_FINDINGS
    out = capsys.readouterr().out
    assert "alpha:" in out and "beta:" in out
    assert main(["docs", heat]) == EXIT_OK
    assert main(["docs", "--check", heat]) == EXIT_OK
    assert "2 README(s) up to date" in capsys.readouterr().out


def test_docs_command_bad_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["docs", str(tmp_path / "nope")]) == 1
    assert "not a directory" in capsys.readouterr().err
