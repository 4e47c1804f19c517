"""What a campaign records: per test, its steps (each a test case with a verdict and a duration), the
placement table, every RFC 2544 search with all its trials, latency, and the expected figures checked.

Verdicts: PASS, FAIL (ran and did not meet its criteria), ERROR (could not run: cloud or tool unavailable),
SKIP (not run: an earlier step of the test failed, or the step does not apply)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

PASS, FAIL, ERROR, SKIP = "PASS", "FAIL", "ERROR", "SKIP"


@dataclass
class Step:
    name: str  # validate, plan, onboard, instantiate, check, dataplane, terminate, or a lab step
    label: str  # what ran, e.g. "lab: build the namespace chain (in place of instantiate)"
    status: str = SKIP
    start: float = 0.0
    stop: float = 0.0
    message: str = ""

    @property
    def duration(self) -> float:
        return max(0.0, self.stop - self.start)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "label": self.label, "status": self.status, "start": self.start,
                "stop": self.stop, "duration": round(self.duration, 3), "message": self.message}


@dataclass
class TestRecord:
    __test__ = False  # not a pytest test class

    name: str
    description: str
    chain: str | None
    vnfs: int | None  # VNFs on the measured path (lab), for latency per chain length
    topology: str | None
    steps: list[Step] = field(default_factory=list)
    placement: list[dict[str, str]] = field(default_factory=list)  # rows: source, vnf, subject, check, status, detail
    searches: list[dict[str, Any]] = field(default_factory=list)
    latency: dict[str, Any] | None = None
    expectations: list[dict[str, Any]] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    dataplane: str | None = None  # where its data plane ran: netns (the namespace lab), cloud (the deployed chain)
    start: float = 0.0
    stop: float = 0.0

    @property
    def status(self) -> str:
        states = {s.status for s in self.steps}
        if FAIL in states:
            return FAIL
        if ERROR in states:
            return ERROR
        return PASS if PASS in states else SKIP

    def failed_step(self) -> Step | None:
        return next((s for s in self.steps if s.status in (FAIL, ERROR)), None)

    def throughput(self, frame: str) -> float | None:
        found = next((s for s in self.searches if s["frame"] == frame), None)
        return float(found["throughput_pps"]) if found else None

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "chain": self.chain, "vnfs": self.vnfs,
                "topology": self.topology, "dataplane": self.dataplane, "status": self.status, "start": self.start,
                "stop": self.stop,
                "duration": round(max(0.0, self.stop - self.start), 3),
                "steps": [s.as_dict() for s in self.steps], "placement": self.placement,
                "throughput": self.searches, "latency": self.latency, "expectations": self.expectations,
                "details": self.details}


@dataclass
class CampaignRecord:
    tdf: str
    target: str
    project: str
    tests: list[TestRecord] = field(default_factory=list)
    start: float = field(default_factory=time.time)
    stop: float = 0.0
    environment: dict[str, Any] = field(default_factory=dict)

    @property
    def status(self) -> str:
        states = {t.status for t in self.tests}
        for s in (FAIL, ERROR, PASS):
            if s in states:
                return s
        return SKIP
