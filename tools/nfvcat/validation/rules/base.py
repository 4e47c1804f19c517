"""The rule model (after cfn-lint): one class per rule, one file per rule, grouped by domain.

Id ranges: 0xxx parsing and entry metadata, 1xxx HOT, 2xxx flavors and EPA, 3xxx provider networks and
ports, 4xxx TOSCA and VNFD, 5xxx service chains, 6xxx day-0 user data.

A rule either checks documents in-process (``check``) or documents a finding an engine emits
(``engine`` names it; its ``check`` yields nothing). Either way it yields RawFinding objects whose key
path the runner maps to file:line:col.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from nfvcat.catalog.site import SiteProfile
from nfvcat.core.findings import RawFinding

if TYPE_CHECKING:  # documents and yamlpos name their findings by these rule classes
    from nfvcat.core.documents import Document


@dataclass
class Context:
    site: SiteProfile = field(default_factory=SiteProfile)
    parameters: dict[str, Any] = field(default_factory=dict)  # -P and -e parameters
    flavors: dict[str, dict[str, Any]] = field(default_factory=dict)  # catalog flavors by name
    networks: Mapping[str, dict[str, Any]] = field(default_factory=dict)  # catalog provider networks by name
    outer: tuple[Any, ...] = ()  # templates nesting the one checked, innermost first
    require_signed: bool = False  # validate --require-signed
    trust_ca: Path | None = None  # validate --trust-ca


class Rule:
    id: ClassVar[str] = ""
    shortdesc: ClassVar[str] = ""
    description: ClassVar[str] = ""
    source_url: ClassVar[str] = ""
    engine: ClassVar[str] = "nfvcat"
    kinds: ClassVar[tuple[str, ...]] = ()  # document kinds ``check`` looks at
    follows_nesting: ClassVar[bool] = False  # also checks nested templates with what their parent passes
    blocks_engines: ClassVar[bool] = False  # a finding of this rule keeps the document from the engines

    @property
    def severity(self) -> str:
        return {"E": "error", "W": "warning", "I": "informational"}[self.id[0]]

    def check(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        return iter(())

    def finding(self, path: tuple[Any, ...] | list[Any], message: str) -> RawFinding:
        return RawFinding(self.id, tuple(path), message, self.engine)
