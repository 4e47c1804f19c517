"""``nfvcat site -o DIR``: the catalog as people browse it, a static site built from the catalog and its release
record (RELEASES.yaml and its git history): an index with a client-side search, a page per entry (README,
released versions with their CHANGELOG sections and the interface changes the version gate sees, images, the
flavors it uses with each extra spec explained by Nova's own description, the commands to use it, and for a HOT
entry the diagram of its chain), and a flavors page with what a host must provide. No server, nothing loaded
from outside: CSS, script and SVG are inline."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from nfvcat import catalog
from nfvcat.catalog import entries, flavors, history, releases
from nfvcat.catalog.versions import breaking_changes
from nfvcat.core import yamlpos
from nfvcat.packaging.site import diagram, images, pages, placement

# (template, environment or None, catalog root) -> the plan document (nfvcat.plan.document.of_template): the
# plan layer sits above this one, so the command that builds the site hands it down
Planner = Callable[[Path, Path | None, Path], dict[str, Any]]


@dataclass
class Version:
    version: str
    released: str | None
    changelog: str
    changes: list[str] | None  # breaking interface changes from the version before; None for the first


@dataclass
class Plan:
    """One plan drawing: the entry's template with one of its examples (or its defaults) on the inventory."""
    example: str | None  # the example's name (``-e NAME``), None for the template's defaults
    command: str
    doc: dict[str, Any]
    svg: str = ""


@dataclass
class ImageRow:
    """An image an entry names (or the image entry itself), with the catalog's facts of it when the pin and the
    lock are of the same version."""
    glance: str
    image: str
    version: str
    sha256: str | None
    facts: images.Image | None
    note: str = ""


@dataclass
class EntryPage:
    entry: entries.Entry
    rel: str  # its directory relative to the catalog root
    slug: str
    released: str | None
    versions: list[Version] = field(default_factory=list)
    readme: str = ""
    diagram: str = ""
    flavors: list[flavors.CatalogFlavor] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    plans: list[Plan] = field(default_factory=list)
    images: list[ImageRow] = field(default_factory=list)


def _load(path: Path) -> Any:
    try:
        return yamlpos.load(path.read_text(encoding="utf-8"))[0]
    except (OSError, UnicodeDecodeError, yamlpos.DocumentError):
        return None


@cache
def spec_help() -> dict[str, str]:
    """Nova's own one-line description of each flavor extra spec (nova.api.validation.extra_specs)."""
    import warnings

    with warnings.catch_warnings():  # Nova's import chain warns about eventlet: nothing a site reader needs
        warnings.simplefilter("ignore")
        from nova.api.validation.extra_specs import validators

    return {name: " ".join(v.description.split()) for name, v in validators.VALIDATORS.items()}


def explain(key: str) -> str:
    """The first sentence of Nova's description of an extra spec (a ``{key}`` pattern matched too)."""
    known = spec_help()
    text = known.get(key)
    if text is None:
        for name, desc in known.items():
            pattern = "^" + re.sub(r"\\\{[^}]*\\\}", "[^:]+", re.escape(name)) + "$"
            if "{" in name and re.match(pattern, key):
                text = desc
                break
    if text is None:
        return "not an extra spec Nova describes"
    return re.split(r"(?<=\.)\s", text, maxsplit=1)[0]


def _versions(root: Path, e: entries.Entry, kind: str, dates: dict[tuple[str, str], str],
              snapshot: dict[str, releases.Snapshot]) -> list[Version]:
    """Every released version of the entry (and the working tree's when newer), newest first. ``dates``: the
    record history's (``releases.recorded_dates``); ``snapshot``: the working tree's interfaces."""
    rel = os.path.relpath(e.dir, root).replace(os.sep, "/")
    done = history.versions(root, e.name, kind)
    by = history.released(root).get(rel, {})
    if e.version not in done:
        done.append(e.version)
    sections = dict(history.changelog(e.dir, "0.0.0", done[-1]))
    out: list[Version] = []
    before: dict[str, Any] | None = None
    for v in done:
        now = dict(by[v].record.get("interface") or {}) if v in by else (
            snapshot[rel].interface if rel in snapshot and snapshot[rel].version == v else None)
        changes = breaking_changes(before, now) if before is not None and now is not None else None
        day = releases.release_date(root, rel, v) or dates.get((rel, v))
        out.append(Version(v, day, sections.get(v, ""), changes))
        before = now
    return list(reversed(out))


def _used_flavors(e: entries.Entry, catalog_flavors: list[flavors.CatalogFlavor]) -> list[flavors.CatalogFlavor]:
    """The catalog flavors the entry's template defaults and examples name."""
    names: set[str] = set()
    for path in [e.dir / str(e.meta.get("template", "")), *e.examples()]:
        data = _load(path) if path.is_file() else None
        if not isinstance(data, dict):
            continue
        for key, spec in (data.get("parameters") or {}).items():
            value = spec.get("default") if isinstance(spec, dict) else spec
            if "flavor" in str(key) and isinstance(value, str):
                names.add(value)
    return [f for f in catalog_flavors if f.name in names or f.entry in names]


def _commands(e: entries.Entry) -> list[str]:
    n = e.name
    if e.kind == "heat":
        return [f"nfvcat validate {n}", f"nfvcat plan {n}", f"nfvcat instantiate {n} --os-cloud CLOUD",
                f"nfvcat upgrade {n} --to {n}@{e.version} --dry-run"]
    if e.kind == "vnfd":
        return [f"nfvcat validate {n}", f"nfvcat package {n}@{e.version} -o dist/",
                f"nfvcat instantiate --via tacker {n}@{e.version} --os-cloud CLOUD",
                f"nfvcat upgrade --via tacker {n} --to {e.version}"]
    if e.kind == "tosca":
        return [f"nfvcat validate {n}", f"nfvcat translate {n}", f"nfvcat plan {n}"]
    if e.kind == "flavor":
        return [f"nfvcat validate {e.dir.name}", f"nfvcat flavor render {n} --as cli",
                f"nfvcat flavor render {n} --as host"]
    if e.kind == "image":
        return [f"nfvcat image build {n}", "nfvcat image list"]
    return [f"nfvcat validate {n}"]


def _plans(root: Path, e: entries.Entry, plan: Planner) -> list[Plan]:
    """The plan of the entry's template with each of its examples (the template's defaults when it has none), as
    ``nfvcat plan NAME -e EXAMPLE`` makes it on the reference inventory."""
    examples: list[Path | None] = list(e.examples()) or [None]
    out = []
    for env in examples:
        name = env.name.removesuffix(".yaml").removesuffix(".env") if env else None
        doc = plan(e.template, env, root)
        p = Plan(name, f"nfvcat plan {e.name}" + (f" -e {name}" if name else ""), doc)
        if "error" not in doc:
            p.svg = placement.svg(doc, f"plan of {e.name}" + (f" with {name}" if name else ""))
        out.append(p)
    return out


def _image_rows(e: entries.Entry, found: dict[str, images.Image]) -> list[ImageRow]:
    if e.kind == "image":
        img = found.get(e.dir.name)
        return [ImageRow(f"nfvcat-{e.name}-{e.version}", e.name, e.version, img.sha256 if img else None, img)]
    rows = []
    for i in e.images:
        name, version = str(i.get("image") or ""), str(i.get("version") or "")
        checksum = i.get("checksum")
        sha = str(checksum.get("value")) if isinstance(checksum, dict) and checksum.get("value") else None
        img = found.get(name)
        note = ""
        if img is not None and img.version != version:
            note = f"the catalog's lock is of {name} {img.version}, not of the {version} this entry pins"
            img = None
        elif img is None and name:
            note = f"no image entry images/{name} in this catalog"
        rows.append(ImageRow(str(i.get("name") or "-"), name or "-", version or "-", sha, img, note))
    return rows


def collect(root: Path, plan: Planner | None = None,
            found_images: dict[str, images.Image] | None = None) -> list[EntryPage]:
    """Every entry of the catalog with what its page shows; ``plan``: how to plan a HOT entry (no plan drawing
    without it); ``found_images``: the catalog's images (images.collect)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    catalog_flavors = flavors.all_flavors(root)
    dates, snapshot = releases.recorded_dates(root), releases.snapshot(root)
    provider = catalog.provider_networks(root, _load)
    out = []
    for e in entries.entries(root):
        rel = os.path.relpath(e.dir, root).replace(os.sep, "/")
        page = EntryPage(e, rel, rel.replace("/", "-"), None)
        page.versions = _versions(root, e, e.kind, dates, snapshot)
        page.released = next((v.released for v in page.versions if v.version == e.version), None)
        readme = e.dir / "README.md"
        text = readme.read_text(encoding="utf-8") if readme.is_file() else ""
        page.readme = md.render(re.sub(r"^<!--.*?-->\s*$", "", text, flags=re.M))  # the generated tables' marks
        if e.kind == "heat":
            data = _load(e.template)
            examples = e.examples()
            env = _load(examples[0]) if examples else None
            if isinstance(data, dict):
                page.diagram = diagram.svg(diagram.model(data, env if isinstance(env, dict) else None, provider),
                                           e.name)
            if plan is not None:
                page.plans = _plans(root, e, plan)
        page.images = _image_rows(e, found_images or {})
        page.flavors = _used_flavors(e, catalog_flavors)
        page.commands = _commands(e)
        out.append(page)
    return out


def build(root: Path, output: Path, plan: Planner | None = None,
          found_images: dict[str, images.Image] | None = None) -> list[Path]:
    """Write the site into ``output``; the files written. ``plan``: draws each HOT entry's plan on the reference
    inventory; ``found_images``: the catalog's images as ``images.collect(root, output, check_mirror)`` gives them
    (the caller asks Debian's mirror or not; by default not)."""
    output.mkdir(parents=True, exist_ok=True)
    if found_images is None:
        found_images = images.collect(root, output)
    found = collect(root, plan, found_images)
    catalog_flavors = flavors.all_flavors(root)
    (output / "entries").mkdir(exist_ok=True)
    written = []
    for page in found:
        path = output / "entries" / f"{page.slug}.html"
        path.write_text(pages.entry_page(page, explain), encoding="utf-8")
        written.append(path)
    index = output / "index.html"
    index.write_text(pages.index_page(found), encoding="utf-8")
    flav = output / "flavors.html"
    flav.write_text(pages.flavors_page(catalog_flavors, explain), encoding="utf-8")
    extra = [output / h for i in found_images.values() for h in (i.lock_href, i.sbom_href) if h]
    return [index, flav, *written, *extra]
