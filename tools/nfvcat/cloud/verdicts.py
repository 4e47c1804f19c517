"""What ``nfvcat check`` says: one verdict per VNF, subject and check, and the report of them. Apart from
the checks (placement, SFC, redundancy) so that each imports it and none imports another."""

from __future__ import annotations

import json
from dataclasses import dataclass

PASS, FAIL, ADMIN, UNKNOWN, HOST_ACCESS = "pass", "FAIL", "needs admin", "unknown", "needs host access"
# a server that boots a local rebuild of a catalog image (nfvcat.cloud.image_provenance): no failure, but said
REBUILD = "local rebuild"
PASSING = (PASS, REBUILD)


@dataclass
class Verdict:
    vnf: str
    subject: str
    check: str
    status: str
    detail: str

    def as_dict(self) -> dict[str, str]:
        return {"vnf": self.vnf, "subject": self.subject, "check": self.check, "status": self.status,
                "detail": self.detail}


def text_table(verdicts: list[Verdict]) -> str:
    rows = [("VNF", "SUBJECT", "CHECK", "VERDICT", "DETAIL")] + [
        (v.vnf, v.subject, v.check, v.status, v.detail) for v in verdicts]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join("  ".join(c.ljust(widths[i]) if i < 4 else c for i, c in enumerate(r)).rstrip() for r in rows)


def passed(verdicts: list[Verdict]) -> bool:
    return bool(verdicts) and all(v.status in PASSING for v in verdicts)


def report(verdicts: list[Verdict], stack: str, fmt: str) -> str:
    """The check report as ``nfvcat check`` and ``nfvcat instantiate`` print it (``fmt`` text or json)."""
    if fmt == "json":
        return json.dumps({"stack": stack, "ok": passed(verdicts), "verdicts": [v.as_dict() for v in verdicts]},
                          indent=2)
    bad = sum(v.status not in PASSING for v in verdicts)
    rebuilt = sum(v.status == REBUILD for v in verdicts)
    summary = (f"{stack}: all {len(verdicts)} checks pass" if passed(verdicts)
               else f"{stack}: {bad} of {len(verdicts)} not passed")
    if rebuilt:
        summary += f"; {rebuilt} server(s) boot a local rebuild of a catalog image, not the catalog's own"
    return f"{text_table(verdicts)}\n{summary}"
