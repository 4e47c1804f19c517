"""Reports of a campaign: JUnit XML (one testsuite per test, one testcase per step), JSON (every figure and
every trial, plus one result record per test in OPNFV xtesting's format), and one self-contained HTML page
(inline CSS, SVG drawn by inline JavaScript from the embedded JSON; nothing fetched)."""

from __future__ import annotations

import html
import io
import json
import time
from importlib import resources
from pathlib import Path
from typing import Any

from nfvcat.campaign.results import ERROR, FAIL, SKIP, CampaignRecord, TestRecord
from nfvcat.core.xmltext import xml_text

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
            "details": {"target": camp.target, "dataplane": t.dataplane, "status": t.status,
                        "steps": [s.as_dict() for s in t.steps],
                        "placement": t.placement, "throughput": t.searches, "latency": t.latency,
                        "expectations": t.expectations, "figures": t.details.get("figures", {}),
                        "day2": t.details.get("day2", {})}}


def as_json(camp: CampaignRecord) -> dict[str, Any]:
    return {"tdf": camp.tdf, "target": camp.target, "project": camp.project, "status": camp.status,
            "start_date": _date(camp.start), "stop_date": _date(camp.stop),
            "duration": round(camp.stop - camp.start, 3), "environment": camp.environment,
            "tests": [t.as_dict() for t in camp.tests],
            "results": [xtesting_record(camp, t) for t in camp.tests]}


def junit(camp: CampaignRecord) -> str:
    """JUnit XML as the Jenkins xUnit plugin's schema (junit-10.xsd) and pytest write it, by junitparser's
    xunit2 flavour: one testsuite per test, one testcase per step, no ``skipped`` on <testsuites>; times are
    the measured ones (a suite's and the campaign's wall clock, not the sum of their steps)."""
    from junitparser import Error, Failure, Skipped, xunit2

    top = xunit2.JUnitXml(name=xml_text(f"nfvcat test {Path(camp.tdf).name}"))
    for t in camp.tests:
        suite = xunit2.TestSuite(xml_text(t.name))
        suite.timestamp = _date(t.start).replace(" ", "T")
        for s in t.steps:
            case = xunit2.TestCase(xml_text(s.name), classname=xml_text(f"{camp.project}.{t.name}"),
                                   time=round(s.duration, 3))
            text = xml_text(f"{s.label}: {s.message}")
            if s.status in (FAIL, ERROR):
                result = (Failure if s.status == FAIL else Error)(xml_text(s.message[:500]), s.status)
                result.text = text
                case.result = [result]
            elif s.status == SKIP:
                case.result = [Skipped(xml_text(s.message or "not run"))]
            elif s.message:
                case.system_out = text
            suite.add_testcase(case)
        top.add_testsuite(suite)
    top.update_statistics()
    for t, written in zip(camp.tests, top, strict=True):
        written.time = round(max(0.0, t.stop - t.start), 3)
    top.time = round(max(0.0, camp.stop - camp.start), 3)
    out = io.BytesIO()
    top.write(out, pretty=True)
    return out.getvalue().decode("utf-8")


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
