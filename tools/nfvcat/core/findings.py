"""A finding: one problem a rule reports, located in a file."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

SEVERITIES = {"E": "error", "W": "warning", "I": "informational"}


@dataclass(frozen=True, order=True)
class Finding:
    file: str
    line: int
    column: int
    rule_id: str
    message: str
    engine: str

    @property
    def severity(self) -> str:
        return SEVERITIES[self.rule_id[0]]

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        return {
            "id": data.pop("rule_id"),
            "severity": self.severity,
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "message": self.message,
            "engine": self.engine,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Finding:
        return cls(
            file=data["file"],
            line=int(data["line"]),
            column=int(data["column"]),
            rule_id=data["id"],
            message=data["message"],
            engine=data["engine"],
        )


@dataclass(frozen=True)
class RawFinding:
    """What a rule or an engine reports before the path is mapped to a line.

    ``path`` is the key path inside the document (e.g. ``["resources", "port", "properties"]``);
    ``file`` overrides the document's file when the problem is in another file (a nested template);
    ``line``/``column`` give the position directly when there is no path (a parse error).
    """

    rule_id: str
    path: tuple[Any, ...]
    message: str
    engine: str = "nfvcat"
    file: str | None = None
    line: int | None = None  # known position, when there is no key path (a parse error)
    column: int | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RawFinding:
        return cls(data["id"], tuple(data.get("path") or ()), data["message"],
                   data.get("engine", "nfvcat"), data.get("file"), data.get("line"), data.get("column"))


@dataclass(frozen=True, order=True)
class Suppressed:
    """A finding the user accepted (nfvcat.validation.suppress): counted and listed, not reported."""

    finding: Finding
    by: str  # where the suppression is: "file:line" of the comment or metadata, or the project file
    reason: str = ""
    external: bool = False  # the project file, not the template (SARIF's suppression kind)

    def to_json(self) -> dict[str, Any]:
        return {**self.finding.to_json(), "suppressed_by": self.by, "reason": self.reason, "external": self.external}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Suppressed:
        return cls(Finding.from_json(data), data["suppressed_by"], data.get("reason", ""), bool(data.get("external")))
