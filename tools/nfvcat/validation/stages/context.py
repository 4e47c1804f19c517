"""Stage 2, context: what the rules and the engines' planners need besides a document: the site profile, the
catalog's flavors and provider networks, and the parameters of -e environments and -P; and each entry's main
template's example environments, which it is checked with."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from nfvcat import catalog
from nfvcat.catalog import flavors as catalog_flavors
from nfvcat.catalog import site as site_profile
from nfvcat.core.documents import Document
from nfvcat.validation.model import Options
from nfvcat.validation.rules.base import Context
from nfvcat.validation.stages.read import Library


def env_parameters(env: Document) -> dict[str, Any]:
    params = env.data.get("parameters") if env.kind == "environment" else None
    return dict(params) if isinstance(params, dict) else {}


class OnFirstUse(Mapping[str, dict[str, Any]]):
    """A mapping made when a rule first looks into it. The catalog's provider networks come from every Heat
    template of the catalog: made up front, a call that changed templates parsed them all before its first
    engine job; only the network rules, which run while the engines work, look."""

    def __init__(self, make: Callable[[], dict[str, dict[str, Any]]]):
        self.make = make
        self.made: dict[str, dict[str, Any]] | None = None

    def data(self) -> dict[str, dict[str, Any]]:
        if self.made is None:
            self.made = self.make()
        return self.made

    def __getitem__(self, key: str) -> dict[str, Any]:
        return self.data()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data())

    def __len__(self) -> int:
        return len(self.data())


def context(library: Library, options: Options, root: Path | None) -> tuple[Context, list[Document]]:
    """The rules' Context, and the -e environments' documents (checked after the targets)."""
    envs = [library.doc(p) for p in options.environments]
    params: dict[str, Any] = {}
    for env in envs:
        params.update(env_parameters(env))
    params.update(options.parameters)
    ctx = Context(site=site_profile.of_catalog(root, options.site), parameters=params,
                  flavors=catalog_flavors.by_name(root, library.data),
                  networks=OnFirstUse(lambda: catalog.provider_networks(root, library.data)),
                  require_signed=options.require_signed,
                  trust_ca=Path(options.trust_ca) if options.trust_ca else None)
    return ctx, envs


class Examples:
    """The example environments of the entry whose main template a document is (none with -e); found once per
    document and run (its jobs and both passes of rules ask)."""

    def __init__(self, library: Library, options: Options):
        self.library = library
        self.none = bool(options.environments)
        self.found: dict[str, list[str]] = {}

    def of(self, doc: Document) -> list[str]:
        if doc.kind != "hot" or self.none:
            return []
        if doc.abspath not in self.found:
            self.found[doc.abspath] = self.find(doc)
        return self.found[doc.abspath]

    def find(self, doc: Document) -> list[str]:
        entry_dir = catalog.entry_of(Path(doc.abspath))
        if entry_dir is None:
            return []
        entry = self.library.doc(str(entry_dir / "entry.yaml")).data
        if catalog.main_template(entry_dir, entry) != Path(doc.abspath):
            return []
        return [str(p) for p in catalog.examples_of(entry_dir)]
