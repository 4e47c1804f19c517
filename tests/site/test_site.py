"""The catalog site (``nfvcat site``) in headless Chromium, driven through the DevTools protocol over a pipe
(tests/site/cdp.py): every page renders with no console error, every link and anchor resolves, each chain's
diagram is there and names every VNF of its template, so does each placement drawing (the plan on the reference
inventory, one per example), each image page links its lock and SBOM and says the mirror was not checked, axe-core
finds no accessibility violation, and the search finds an entry by a word of its description. Screenshots of the
index, each chain and its placement are left in the run's directory (``NFVCAT_SITE_SHOTS=DIR`` keeps them) for a
person to look at.

axe-core (MPL-2.0) is not checked in: the run installs the pinned version with npm into its own temporary
directory and injects its dist file into each page, so the site itself never ships or loads it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
import yaml

from tests.conftest import ROOT, nfvcat, tracked_entries
from tests.site.cdp import Browser

AXE_CORE = "4.11.0"  # pinned; npm installs it for the run only


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    proc = nfvcat("site", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def axe(tmp_path_factory: pytest.TempPathFactory) -> str:
    prefix = tmp_path_factory.mktemp("axe")
    npm = shutil.which("npm")
    assert npm, "npm is not installed (tools/debs/site.txt)"
    subprocess.run([npm, "install", "--no-save", "--no-audit", "--no-fund", "--prefix", str(prefix),
                    f"axe-core@{AXE_CORE}"], check=True, capture_output=True, timeout=300)
    return (prefix / "node_modules" / "axe-core" / "axe.min.js").read_text()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    b = Browser()
    try:
        yield b
    finally:
        b.close()


def pages_of(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def ids_of(page: Path) -> set[str]:
    return set(re.findall(r'\sid="([^"]+)"', page.read_text(encoding="utf-8")))


def test_every_page_renders_without_console_errors_and_its_links_resolve(site: Path, browser: Browser) -> None:
    pages = pages_of(site)
    entries = tracked_entries()
    assert len(pages) == 2 + len([e for e in entries if e.parent.parent.name != "fixtures"]), pages
    bad: list[str] = []
    for page in pages:
        browser.open(page.as_uri())
        bad += [f"{page.name}: {e}" for e in browser.errors()]
        links = browser.eval("Array.from(document.querySelectorAll('a[href]')).map(a => a.href)")
        assert links, page
        for link in links:
            url = urlparse(link)
            assert url.scheme == "file", f"{page.name}: {link} leaves the site"
            target = Path(unquote(url.path))
            if not target.is_file():
                bad.append(f"{page.name}: {link}: no such page")
            elif url.fragment and url.fragment not in ids_of(target):
                bad.append(f"{page.name}: {link}: no anchor #{url.fragment}")
        external = browser.eval("Array.from(document.querySelectorAll('[src],link[href]')).map(e => e.src || e.href)")
        assert external == [], f"{page.name} loads {external}"
    assert bad == []


def vnfs_of(template: Path) -> list[str]:
    """The VNFs of a chain as its template declares them: nested templates and servers."""
    data = yaml.safe_load(template.read_text())
    return [n for n, r in (data.get("resources") or {}).items()
            if str(r.get("type")).endswith(".yaml") or r.get("type") == "OS::Nova::Server"]


def shots_dir(site: Path) -> Path:
    """Where the drawings' screenshots go: $NFVCAT_SITE_SHOTS, else beside the site."""
    shots = Path(os.environ.get("NFVCAT_SITE_SHOTS") or site / "shots")
    shots.mkdir(parents=True, exist_ok=True)
    return shots


def test_each_chain_has_a_diagram_naming_every_vnf(site: Path, browser: Browser) -> None:
    shots = shots_dir(site)
    checked = 0
    for entry in sorted((ROOT / "templates" / "heat").glob("*/entry.yaml")):
        meta = yaml.safe_load(entry.read_text())
        want = vnfs_of(entry.parent / meta["template"])
        page = site / "entries" / f"templates-heat-{entry.parent.name}.html"
        browser.open(page.as_uri())
        names = browser.eval("Array.from(document.querySelectorAll('#diagram ~ .diagram svg text.vnf'))"
                             ".map(t => t.textContent)")
        assert names == want, f"{entry.parent.name}: {names} != {want}"
        box = browser.eval("(() => { const r = document.querySelector('.diagram svg').getBoundingClientRect();"
                           " return [r.width, r.height]; })()")
        assert box[0] > 200 and box[1] > 150, box  # drawn, not collapsed
        browser.screenshot(shots / f"{entry.parent.name}.png", selector=".diagram")
        checked += bool(want)
    assert checked >= 5


def test_each_chain_has_a_placement_drawing_naming_every_vnf(site: Path, browser: Browser) -> None:
    """One drawing per example environment: every VNF of the template is placed (named by its instance, a nested
    template's server as VNF.server) or named as fitting no host, with plan's reason under it."""
    shots = shots_dir(site)
    checked = 0
    for entry in sorted((ROOT / "templates" / "heat").glob("*/entry.yaml")):
        meta = yaml.safe_load(entry.read_text())
        want = vnfs_of(entry.parent / meta["template"])
        if not want:
            continue
        examples = sorted((entry.parent / "examples").glob("*.yaml")) or [None]
        page = site / "entries" / f"templates-heat-{entry.parent.name}.html"
        browser.open(page.as_uri())
        drawn = browser.eval("Array.from(document.querySelectorAll('#placement ~ .placement svg'))"
                             ".map(s => Array.from(s.querySelectorAll('text.vnf')).map(t => t.textContent))")
        assert len(drawn) == len(examples), f"{entry.parent.name}: {len(drawn)} drawings, {len(examples)} examples"
        for names in drawn:
            assert all(any(n == w or n.startswith(w + ".") for n in names) for w in want), (entry.parent.name, names)
            assert len(names) == len(want), (entry.parent.name, names)
        why = browser.eval("Array.from(document.querySelectorAll('#placement ~ p.why')).length")
        assert why == len(examples)
        browser.screenshot(shots / f"{entry.parent.name}-placement.png", selector=".placement")
        checked += 1
    assert checked >= 5


def test_each_image_links_its_lock_and_sbom_and_says_the_mirror_was_not_checked(site: Path, browser: Browser) -> None:
    for image in sorted((ROOT / "images").glob("*/entry.yaml")):
        browser.open((site / "entries" / f"images-{image.parent.name}.html").as_uri())
        links = browser.eval("Array.from(document.querySelectorAll('#images ~ table a')).map(a => a.textContent)")
        assert links == [f"images/{image.parent.name}/image.lock", "CycloneDX 1.6 JSON"], links
        sbom = browser.eval("document.querySelector('#images ~ table a[href$=\".cdx.json\"]').href")
        doc = json.loads(Path(unquote(urlparse(sbom).path)).read_text())
        assert doc["bomFormat"] == "CycloneDX" and doc["metadata"]["component"]["name"] == f"nfvcat-{image.parent.name}"
        text = browser.eval("document.querySelector('#images ~ table').textContent")
        assert "not checked at build time" in text and "serves every locked version" not in text


def test_axe_core_finds_no_violation(site: Path, browser: Browser, axe: str) -> None:
    found = {}
    for page in pages_of(site):
        browser.open(page.as_uri())
        browser.eval(axe)
        result = browser.eval("axe.run(document).then(r => r.violations.map(v => v.id + ' (' + v.impact + '): ' +"
                              " v.nodes.length + ' node(s), ' + v.nodes[0].target.join(' ')))", timeout=120)
        if result:
            found[page.name] = result
    assert found == {}, json.dumps(found, indent=1)


def test_the_search_finds_an_entry_by_a_word_of_its_description(site: Path, browser: Browser) -> None:
    browser.open((site / "index.html").as_uri())
    total = browser.eval("document.querySelectorAll('#entries tbody tr').length")
    shown = browser.eval("""(() => { const q = document.getElementById('q'); q.value = 'anti-affinity';
        q.dispatchEvent(new Event('input'));
        return Array.from(document.querySelectorAll('#entries tbody tr')).filter(r => !r.hidden)
          .map(r => r.cells[0].textContent); })()""")
    assert "chain-sfc" in shown and 0 < len(shown) < total, shown
    status = browser.eval("document.getElementById('count').textContent")
    assert status == f"{len(shown)} entries shown"
    browser.screenshot(Path(os.environ.get("NFVCAT_SITE_SHOTS") or site) / "index-search.png")
