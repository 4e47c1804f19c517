"""Catalog flavors rendered three ways stay the flavor: the HOT form passes Heat and Nova, the CLI line
parses back to the same fields and extra specs, the host form carries the nova.conf the flavor needs."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml

from nfvcat.catalog import flavors
from tests.conftest import findings_of, nfvcat

CATALOG = flavors.all_flavors()


def test_every_flavor_rendered_as_hot_validates_clean(tmp_path: Path) -> None:
    paths = []
    for f in CATALOG:
        proc = nfvcat("flavor", "render", f.entry, "--as", "hot")
        assert proc.returncode == 0, proc.stderr
        (tmp_path / f"{f.entry}.yaml").write_text(proc.stdout)
        paths.append(str(tmp_path / f"{f.entry}.yaml"))
    assert findings_of("--strict", *paths) == (0, [])


def test_a_broken_flavor_rendered_as_hot_is_caught_by_nova(tmp_path: Path) -> None:
    f = flavors.find("nfv-rt-isolate")
    f.data["extra_specs"] = {**f.data["extra_specs"], "hw:cpu_realtime_mask": "^0-7"}
    (tmp_path / "rt.yaml").write_text(flavors.as_hot(f))
    code, found = findings_of(str(tmp_path / "rt.yaml"))
    assert code == 2 and [x["id"] for x in found] == ["E2002"]


@pytest.mark.parametrize("f", CATALOG, ids=[f.entry for f in CATALOG])
def test_cli_line_parses_back_to_the_flavor(f: flavors.CatalogFlavor) -> None:
    argv = shlex.split(flavors.as_cli(f).replace("\\\n", " "))
    assert argv[:5] == ["openstack", "--os-compute-api-version", "2.86", "flavor", "create"]
    assert argv[-1] == f.name
    opts = dict(zip(argv[5:-1:2], argv[6:-1:2], strict=False))
    assert int(opts["--vcpus"]) == f.data["vcpus"] and int(opts["--ram"]) == f.data["ram"]
    props = dict(p.split("=", 1) for p in argv[argv.index("--property") + 1::2] if "=" in p)
    assert props == f.specs()


def test_host_form_has_what_the_flavor_needs() -> None:
    text = flavors.as_host(flavors.find("nfv.qat.required"))
    assert "[pci]" in text and 'alias = {"name":"qat-vf"' in text
    assert "cpu_dedicated_set = " in text and "PciPassthroughFilter" in text
    assert text.count("reserved_huge_pages = ") == 2


def test_unknown_flavor_is_a_one_line_error() -> None:
    proc = nfvcat("flavor", "render", "nope")
    assert proc.returncode == 1 and proc.stderr.startswith("nfvcat: error: no catalog flavor 'nope'")
    assert yaml.safe_load(nfvcat("flavor", "list", "--format", "json").stdout)[0]["entry"]
