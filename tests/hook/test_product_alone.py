"""The product distribution alone (tests/productvenv.py: a fresh venv, ``pip install`` of the repository root,
nothing else): no test bed in it, and an ``nfvcat`` that validates, plans and packages the catalog exactly as
the development install does. Against a cloud: tests/integration/test_product_alone.py."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from tests.conftest import nfvcat
from tests.productvenv import ProductVenv

FILES = "import importlib.metadata as m, json; print(json.dumps([str(f) for f in m.files('nfvcat')]))"
PLUGINS = ("import json; from nfvcat.core import plugins; "
           "print(json.dumps([plugins.names(g) for g in (plugins.COMMANDS, plugins.HOST_ACCESS, "
           "plugins.CAMPAIGN_TARGETS)]))")


def test_the_product_alone_has_no_devcloud_command_lab_module_or_test_bed_file(product_venv: ProductVenv) -> None:
    print(f"pip install of the product alone: {product_venv.install_seconds:.0f} s")
    helped = product_venv.run("--help")
    assert helped.returncode == 0, helped.stderr
    assert "validate" in helped.stdout and "devcloud" not in helped.stdout, helped.stdout
    asked = product_venv.run("devcloud", "up")
    assert asked.returncode != 0 and "Traceback" not in asked.stderr, asked.stderr
    assert "invalid choice: 'devcloud'" in asked.stderr, asked.stderr

    imported = product_venv.python_c("import nfvcat.cli, nfvcat.campaign.runner; print(nfvcat.__file__)")
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.startswith(str(product_venv.path)), "the venv's own nfvcat, not the checkout's"
    for module in ("nfvcat_testbeds", "nfvcat.lab", "nfvcat.lab.devcloud"):
        res = product_venv.python_c(f"import {module}")
        assert res.returncode == 1 and "ModuleNotFoundError" in res.stderr, (module, res.stderr)
    res = product_venv.python_c(PLUGINS)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == [[], [], []], "no plugin is installed with the product"

    res = product_venv.python_c(FILES)
    assert res.returncode == 0, res.stderr
    files = json.loads(res.stdout)
    assert "nfvcat/data/reference-inventory.yaml" in files and "nfvcat/cli.py" in files, files
    test_bed = [f for f in files if "nfvcat_testbeds" in f or "devcloud" in f or "/environments/" in f
                or f.startswith("nfvcat/lab/") or f.endswith("/inventory.yaml")]
    assert test_bed == [], test_bed


def test_the_product_alone_validates_plans_and_packages_as_the_development_install(
        product_venv: ProductVenv, tmp_path: Path) -> None:
    mine = product_venv.run("validate", "--format", "json")
    dev = nfvcat("validate", "--format", "json")
    assert mine.returncode == dev.returncode == 0, mine.stdout + mine.stderr
    assert mine.stdout == dev.stdout
    assert json.loads(mine.stdout)["summary"]["files"] > 0

    plan = ("plan", "chain-vrouter", "-e", "sriov", "--format", "json")  # on the shipped reference inventory
    mine, dev = product_venv.run(*plan), nfvcat(*plan)
    assert mine.returncode == dev.returncode == 0, mine.stdout + mine.stderr
    got, want = json.loads(mine.stdout), json.loads(dev.stdout)
    assert got["inventory"].endswith("nfvcat/data/reference-inventory.yaml"), got["inventory"]
    assert got["fits"] and got["placements"] and got["placements"] == want["placements"]

    for who, run in (("product", product_venv.run), ("dev", nfvcat)):
        res = run("package", "vnfd/vnf-vrouter", "-o", str(tmp_path / who))
        assert res.returncode == 0, res.stdout + res.stderr
    built = {who: sorted((tmp_path / who).glob("vnf-vrouter-*.zip")) for who in ("product", "dev")}
    assert len(built["product"]) == 1 and [p.name for p in built["product"]] == [p.name for p in built["dev"]]
    with zipfile.ZipFile(built["product"][0]) as mine_zip, zipfile.ZipFile(built["dev"][0]) as dev_zip:
        assert "TOSCA-Metadata/TOSCA.meta" in mine_zip.namelist()
        assert mine_zip.namelist() == dev_zip.namelist()
        assert all(mine_zip.read(n) == dev_zip.read(n) for n in mine_zip.namelist())
