"""What a validation is asked (Options) and what it found (Report): light, for the engine server's client."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nfvcat.core.findings import Finding, Suppressed
    from nfvcat.validation.project import Project


@dataclass
class Options:
    environments: list[str] = field(default_factory=list)
    parameters: dict[str, str] = field(default_factory=dict)
    site: str | None = None
    use_cache: bool = True
    catalog_root: Path | None = None
    require_signed: bool = False  # an unsigned VNF package is an error (E4006)
    trust_ca: str | None = None  # PEM CA file a package's signing certificate must chain to (E4006)
    project: Project | None = None  # .nfvcat.yaml: exclude, ignore
    skip_unknown: bool = False  # the paths are a hook's file list: skip what is none of nfvcat's kinds
    # Unsaved content by absolute path (an editor's buffer, --stdin-filename): validated as that file's.
    overlays: dict[str, str] = field(default_factory=dict)
    # What a validation may read besides the project, the catalog and the paths given (--allow-root,
    # .nfvcat.yaml allow_roots), and the size cap of a file (--max-file-size, max_file_size): nfvcat.core.confine
    allow_roots: list[str] = field(default_factory=list)
    max_bytes: int | None = None

    def to_json(self) -> dict[str, Any]:
        """As plain data (the engine server's language-server requests); the project as the file it was read from."""
        return {"environments": list(self.environments), "parameters": dict(self.parameters), "site": self.site,
                "use_cache": self.use_cache, "catalog_root": str(self.catalog_root) if self.catalog_root else None,
                "require_signed": self.require_signed, "trust_ca": self.trust_ca,
                "project": str(self.project.path) if self.project and self.project.path else None,
                "skip_unknown": self.skip_unknown, "overlays": dict(self.overlays),
                "allow_roots": list(self.allow_roots), "max_bytes": self.max_bytes}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Options:
        from nfvcat.validation import project

        return cls(environments=[str(e) for e in data.get("environments") or []],
                   parameters={str(k): str(v) for k, v in (data.get("parameters") or {}).items()},
                   site=data.get("site"), use_cache=bool(data.get("use_cache", True)),
                   catalog_root=Path(data["catalog_root"]) if data.get("catalog_root") else None,
                   require_signed=bool(data.get("require_signed")), trust_ca=data.get("trust_ca"),
                   project=project.load(Path(data["project"])) if data.get("project") else None,
                   skip_unknown=bool(data.get("skip_unknown")),
                   overlays={str(k): str(v) for k, v in (data.get("overlays") or {}).items()},
                   allow_roots=[str(r) for r in data.get("allow_roots") or []],
                   max_bytes=int(data["max_bytes"]) if data.get("max_bytes") else None)


@dataclass
class Report:
    findings: list[Finding]
    files: int
    timings: dict[str, float] = field(default_factory=dict)
    jobs: dict[str, int] = field(default_factory=dict)
    cache_hits: int = 0
    engine_failed: bool = False
    skipped: list[str] = field(default_factory=list)  # none of nfvcat's kinds (discovery.skipped)
    excluded: list[str] = field(default_factory=list)  # .nfvcat.yaml exclude
    suppressed: list[Suppressed] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)  # the files checked (JUnit's test cases), as given

    def to_json(self) -> dict[str, Any]:
        return {"findings": [f.to_json() for f in self.findings], "files": self.files, "timings": self.timings,
                "jobs": self.jobs, "cache_hits": self.cache_hits, "engine_failed": self.engine_failed,
                "skipped": self.skipped, "excluded": self.excluded,
                "suppressed": [s.to_json() for s in self.suppressed]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Report:
        from nfvcat.core.findings import Finding, Suppressed

        return cls([Finding.from_json(f) for f in data["findings"]], int(data["files"]), dict(data["timings"]),
                   dict(data["jobs"]), int(data["cache_hits"]), bool(data["engine_failed"]),
                   list(data.get("skipped", [])), list(data.get("excluded", [])),
                   [Suppressed.from_json(s) for s in data.get("suppressed", [])])
