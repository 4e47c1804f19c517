"""What a validation is asked (Options) and what it found (Report): light, for the engine server's client."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nfvcat.findings import Finding


@dataclass
class Options:
    environments: list[str] = field(default_factory=list)
    parameters: dict[str, str] = field(default_factory=dict)
    site: str | None = None
    use_cache: bool = True
    catalog_root: Path | None = None


@dataclass
class Report:
    findings: list[Finding]
    files: int
    timings: dict[str, float] = field(default_factory=dict)
    jobs: dict[str, int] = field(default_factory=dict)
    cache_hits: int = 0
    engine_failed: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"findings": [f.to_json() for f in self.findings], "files": self.files, "timings": self.timings,
                "jobs": self.jobs, "cache_hits": self.cache_hits, "engine_failed": self.engine_failed}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Report:
        return cls([Finding.from_json(f) for f in data["findings"]], int(data["files"]), dict(data["timings"]),
                   dict(data["jobs"]), int(data["cache_hits"]), bool(data["engine_failed"]))
