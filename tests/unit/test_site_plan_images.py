"""The catalog site's placement drawing and image sections (issue #42): the plan drawn is the plan ``nfvcat plan``
makes (nfvcat.plan.document), every VNF and VF on the host and NUMA cell the plan gives it, an entry that fits no
host says so with plan's reason; each image's lock, package list and CycloneDX SBOM (valid against the CycloneDX
schema cyclonedx-python-lib ships), and Debian's mirror asked only when told (an HTTP-level fake mirror here)."""

from __future__ import annotations

import json
import lzma
import re
from pathlib import Path

import pytest
import requests_mock
import yaml

from nfvcat.catalog import entries
from nfvcat.cli import main
from nfvcat.core.errors import EXIT_ENGINE, EXIT_OK
from nfvcat.packaging import site
from nfvcat.packaging.images import mirror, recipe
from nfvcat.packaging.site import images, pages, placement
from nfvcat.plan import document
from tests.conftest import ROOT

GW = ROOT / "templates" / "heat" / "vnf-ipsec-gw"


def test_the_drawing_puts_each_vnf_and_vf_on_the_cell_plan_gives_it(capsys: pytest.CaptureFixture[str]) -> None:
    env = GW / "examples" / "responder-qat.env.yaml"
    doc = document.of_template(GW / "ipsec-gw.yaml", env, ROOT)
    assert main(["plan", "vnf-ipsec-gw", "-e", "responder-qat", "--format", "json", "--no-server"]) == EXIT_OK
    said = json.loads(capsys.readouterr().out)
    assert doc["placements"] == said["placements"] and doc["host_choice"] == said["host_choice"]  # plan's plan
    (p,) = doc["placements"]
    assert len(p["pci_devices"]) == 3  # two SR-IOV VFs and a QAT VF
    cells = placement.layout(doc)[p["host"]]
    vnf_cell = [cid for cid, c in cells.items() if any(("vnf", p["instance"]) in i.lines for i in c.items)]
    assert vnf_cell == p["numa_cells"][:1]
    for dev in p["pci_devices"]:
        texts = [t for i in cells[dev["numa_node"]].items for _, t in i.lines]
        assert any(dev["address"] in t and p["instance"] in t for t in texts), (dev, texts)
    qat = next(d for d in p["pci_devices"] if "physical_network" not in d)
    assert placement.device_label(qat, doc["pci_alias"]) == f"PCI VF {qat['address']} (alias qat-vf)"
    svg = placement.svg(doc, "plan")
    assert re.findall(r'class="vnf"[^>]*>([^<]+)<', svg) == [p["instance"]]
    assert f"host {p['host']}" in svg and f"{len(p['pinned_cpus'])} pinned CPUs" in svg


def _tiny_inventory(tmp_path: Path) -> str:
    """The reference inventory's first OVS-DPDK host alone, its 1 GiB pages all reserved: nothing with 1G pages fits."""
    data = yaml.safe_load((ROOT / "tools" / "nfvcat" / "data" / "reference-inventory.yaml").read_text())
    host = dict(data["hosts"][0], count=1)
    for cell in host["numa_cells"]:
        cell["hugepages"] = [{"size": "1G", "total": 4, "reserved": 4}]
    data["hosts"] = [host]
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_an_entry_that_fits_no_host_says_so_with_plans_reason(tmp_path: Path) -> None:
    inv = _tiny_inventory(tmp_path)
    entry = next(e for e in entries.entries(ROOT) if e.dir == GW)
    plans = site._plans(ROOT, entry, lambda t, e, r: document.of_template(t, e, r, inventory_path=inv))
    assert [p.example for p in plans] == [p.name.removesuffix(".env.yaml") for p in entry.examples()]
    for plan in plans:
        (failure,) = plan.doc["failures"]
        reason = failure["summary"][0]["message"]
        assert plan.doc["placements"] == [] and reason
        assert re.findall(r'class="vnf"[^>]*>([^<]+)<', plan.svg) == [failure["instance"]]
        assert "does not fit on any host" in plan.svg
    page = site.EntryPage(entry, "templates/heat/vnf-ipsec-gw", "x", None, plans=plans)
    html = pages.entry_page(page, site.explain)
    for plan in plans:
        assert f"{plan.doc['failures'][0]['instance']} does not fit on any host" in html
        assert pages._env().from_string("{{ m }}").render(m=plan.doc["failures"][0]["summary"][0]["message"]) in html


def test_a_template_plan_cannot_read_says_plans_own_error() -> None:
    doc = document.of_template(ROOT / "templates" / "heat" / "net-provider" / "net-provider.yaml", None, ROOT)
    assert doc == {"error": f"{ROOT / 'templates/heat/net-provider/net-provider.yaml'}: no OS::Nova::Server "
                            "resources to place"}


def test_each_image_has_its_lock_packages_and_a_valid_cyclonedx_sbom(tmp_path: Path) -> None:
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    found = images.collect(ROOT, tmp_path)
    assert sorted(found) == recipe.names(ROOT)
    for name, img in found.items():
        lock = recipe.read_lock(recipe.load(name, ROOT))
        assert lock is not None and img.sha256 == lock.sha256 and img.packages == sorted(lock.packages.items())
        assert img.lock_href and (tmp_path / img.lock_href).read_text() == lock.text()
        assert img.sbom_href
        text = (tmp_path / img.sbom_href).read_text()
        assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(text) is None  # the CycloneDX 1.6 schema
        sbom = json.loads(text)
        assert len(sbom["components"]) == len(lock.packages)
        assert img.mirror == images.NOT_CHECKED and img.mirror_moved is None  # never "up to date" unasked


def test_a_broken_sbom_fails_the_schema() -> None:
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    r = recipe.load("vrouter", ROOT)
    lock = recipe.read_lock(r)
    assert lock is not None
    data = json.loads(images.sbom(r, lock))
    del data["components"][0]["name"]
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(json.dumps(data)) is not None


def _index(packages: dict[str, str]) -> bytes:
    return lzma.compress("\n".join(f"Package: {p}\nVersion: {v}\nArchitecture: amd64\n"
                                   for p, v in packages.items()).encode())


def test_the_mirror_is_asked_only_when_told(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    r = recipe.load("vrouter", ROOT)
    lock = recipe.read_lock(r)
    assert lock is not None
    monkeypatch.setattr(mirror, "_SERVED", {})
    with requests_mock.Mocker() as m:  # any request not faked here fails
        for s in mirror.suites(r):
            served = dict(lock.packages) if not s.suite.endswith("-security") else {"frr": lock.packages["frr"] + "1"}
            for comp in s.components:
                m.get(f"{s.url}/dists/{s.suite}/{comp}/binary-amd64/Packages.xz", content=_index(served))
        assert images.collect(ROOT, tmp_path / "a")["vrouter"].mirror == images.NOT_CHECKED
        assert m.call_count == 0
        img = images.collect(ROOT, tmp_path / "b", check_mirror=True)["vrouter"]
    assert img.mirror_moved is True and img.mirror.startswith("checked at build time: the mirror has moved past")
    assert img.newer == [f"frr {lock.packages['frr']} -> {lock.packages['frr']}1 (security update, "
                         f"{next(s.suite for s in mirror.suites(r) if s.suite.endswith('-security'))})"]


def test_site_reads_the_mirror_only_with_mirror_and_an_unreadable_one_is_unknown(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(mirror, "_SERVED", {})
    monkeypatch.chdir(ROOT)
    with requests_mock.Mocker() as m:
        m.get(requests_mock.ANY, status_code=503)
        assert main(["site", "-o", str(tmp_path / "a")]) == EXIT_OK
        assert m.call_count == 0
        assert main(["site", "-o", str(tmp_path / "b"), "--mirror"]) == EXIT_ENGINE
        assert m.call_count > 0
    assert "the mirror could not be read: drift unknown for" in capsys.readouterr().err
    for name in recipe.names(ROOT):
        plain = (tmp_path / "a" / "entries" / f"images-{name}.html").read_text()
        asked = (tmp_path / "b" / "entries" / f"images-{name}.html").read_text()
        assert "not checked at build time" in plain and "checked at build time:" not in plain
        assert "unknown: the mirror could not be read at build time" in asked and "not checked" not in asked


def test_a_vnf_without_numa_topology_is_on_no_cell_and_a_wide_one_spans_its_cells(tmp_path: Path) -> None:
    template = tmp_path / "t.yaml"
    template.write_text(yaml.safe_dump({"heat_template_version": "2021-04-16", "resources": {
        "plain": {"type": "OS::Nova::Server", "properties": {"flavor": "nfv.shared.4c4g", "image": "x"}},
        "wide": {"type": "OS::Nova::Server", "properties": {"flavor": "nfv.pinned.2numa", "image": "x"}}}}))
    doc = document.of_template(template, None, ROOT)
    plain, wide = doc["placements"]
    assert plain["numa_cells"] == [] and len(wide["numa_cells"]) == 2
    hosts = placement.layout(doc)
    where = {cid for cid, c in hosts[plain["host"]].items() if any(("vnf", "plain") in i.lines for i in c.items)}
    assert where == {placement.FLOATING}  # not drawn on a cell Nova did not bind it to
    texts = [t for c in hosts[wide["host"]].values() for i in c.items for _, t in i.lines]
    assert f"spans NUMA cells {', '.join(map(str, wide['numa_cells']))}" in texts
