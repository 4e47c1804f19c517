"""Reports of a campaign: JUnit XML (one testsuite per test, one testcase per step), JSON (every figure and
every trial, plus one result record per test in OPNFV xtesting's format), and one self-contained HTML page
(inline CSS, SVG drawn by inline JavaScript from the embedded JSON; nothing fetched)."""

from __future__ import annotations

import html
import json
import time
import xml.etree.ElementTree as ET
from importlib import resources
from pathlib import Path
from typing import Any

from nfvcat.lab.campaign.results import ERROR, FAIL, SKIP, CampaignRecord, TestRecord

XTESTING_DATE = "%Y-%m-%d %H:%M:%S"  # xtesting's start_date/stop_date format (here in UTC)


def _date(ts: float) -> str:
    return time.strftime(XTESTING_DATE, time.gmtime(ts))


def xtesting_record(camp: CampaignRecord, t: TestRecord) -> dict[str, Any]:
    """The fields xtesting's TestCase.push_to_db sends to the test results database."""
    env = camp.environment
    return {"project_name": camp.project, "case_name": t.name, "criteria": "PASS" if t.status == "PASS" else "FAIL",
            "start_date": _date(t.start), "stop_date": _date(t.stop), "installer": env.get("installer"),
            "scenario": env.get("scenario"), "pod_name": env.get("pod_name"), "build_tag": env.get("build_tag"),
            "version": env.get("nfvcat"),
            "details": {"target": camp.target, "status": t.status, "steps": [s.as_dict() for s in t.steps],
                        "placement": t.placement, "throughput": t.searches, "latency": t.latency,
                        "expectations": t.expectations, "figures": t.details.get("figures", {})}}


def as_json(camp: CampaignRecord) -> dict[str, Any]:
    return {"tdf": camp.tdf, "target": camp.target, "project": camp.project, "status": camp.status,
            "start_date": _date(camp.start), "stop_date": _date(camp.stop),
            "duration": round(camp.stop - camp.start, 3), "environment": camp.environment,
            "tests": [t.as_dict() for t in camp.tests],
            "results": [xtesting_record(camp, t) for t in camp.tests]}


def junit(camp: CampaignRecord) -> str:
    suites = ET.Element("testsuites", name=f"nfvcat test {Path(camp.tdf).name}",
                        time=f"{camp.stop - camp.start:.3f}")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for t in camp.tests:
        counts = {"tests": len(t.steps), "failures": sum(s.status == FAIL for s in t.steps),
                  "errors": sum(s.status == ERROR for s in t.steps), "skipped": sum(s.status == SKIP for s in t.steps)}
        attrib = {"name": t.name, "timestamp": _date(t.start).replace(" ", "T"), "time": f"{t.stop - t.start:.3f}",
                  **{k: str(v) for k, v in counts.items()}}
        suite = ET.SubElement(suites, "testsuite", attrib)
        for k in totals:
            totals[k] += counts[k]
        for s in t.steps:
            case = ET.SubElement(suite, "testcase", classname=f"{camp.project}.{t.name}", name=s.name,
                                 time=f"{s.duration:.3f}")
            if s.status == FAIL:
                ET.SubElement(case, "failure", message=s.message[:500], type="FAIL").text = f"{s.label}: {s.message}"
            elif s.status == ERROR:
                ET.SubElement(case, "error", message=s.message[:500], type="ERROR").text = f"{s.label}: {s.message}"
            elif s.status == SKIP:
                ET.SubElement(case, "skipped", message=s.message or "not run")
            elif s.message:
                ET.SubElement(case, "system-out").text = f"{s.label}: {s.message}"
    for k, v in totals.items():
        suites.set(k, str(v))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def _page() -> str:
    return resources.files("nfvcat").joinpath("data/campaign-report.html").read_text()


def html_page(camp: CampaignRecord) -> str:
    data = json.dumps(as_json(camp), sort_keys=True).replace("</", "<\\/")
    return (_page().replace("__TITLE__", html.escape(Path(camp.tdf).name)).replace("__STATUS__", camp.status)
            .replace("__TARGET__", html.escape(camp.target)).replace("__START__", _date(camp.start))
            .replace("__DURATION__", f"{camp.stop - camp.start:.0f}")
            .replace("__VERSION__", html.escape(str(camp.environment.get("nfvcat"))))
            .replace("__DATA__", data))


def write_all(camp: CampaignRecord, directory: Path) -> dict[str, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    out = {"junit": directory / "junit.xml", "json": directory / "results.json", "html": directory / "report.html"}
    out["junit"].write_text(junit(camp))
    out["json"].write_text(json.dumps(as_json(camp), indent=2, sort_keys=True) + "\n")
    out["html"].write_text(html_page(camp))
    return out
