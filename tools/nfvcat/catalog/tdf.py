"""The Test Description File (kind: nfvcat/test-description): one loader, checked against the JSON Schema
shipped in the package and then for what a schema cannot say (unique test names, expectations that refer
to tests run before them, a data plane only where a lab topology is given)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema

from nfvcat.core import yamlpos
from nfvcat.core.errors import UserError

KIND = "nfvcat/test-description"


@dataclass(frozen=True)
class SearchSettings:
    """A data-plane test's RFC 2544 search, as its TDF sets it (nfvcat.campaign.rfc2544 runs it)."""
    trial_seconds: float = 1.0
    max_rate_pps: float = 1_000_000
    min_rate_pps: float = 1_000
    resolution: float = 0.05  # stop when (high - low) / high is at most this
    loss_tolerance: float = 0.0  # fraction of frames a passing trial may lose
    max_trials: int = 8
    generator_margin: float = 0.95  # offered below this share of the rate asked: the generator ran out
    samples: int = 1  # trials at a generator-limited rate; the figure is their median


@dataclass
class Expectation:
    name: str
    metric: str
    frame: str | None
    min: float | None
    max: float | None
    relative_to: str | None
    per_added_vnf_vs: str | None


@dataclass
class LatencySpec:
    frame: str = "64"
    load_fraction: float = 0.5
    probes: int = 200
    interval_ms: float = 2.0


@dataclass
class AclSpec:
    """ACL probes through the cloud: rate-limit trials at ``under`` x and ``over`` x the limit."""

    trial_seconds: float = 2.0
    under: float = 0.25
    over: float = 3.0
    samples: int = 3


@dataclass
class QosSpec:
    """QoS through the cloud: the net-provider outputs naming the policies, and how TCP is measured."""

    bandwidth_limit: str
    dscp_marking: str
    direction: str | None = None  # the catalog rule's when None
    max_kbps: int | None = None
    tcp_seconds: float = 5.0
    omit_seconds: float = 2.0
    streams: int = 4  # TCP connections in parallel: one alone leaves a shaper idle after each loss
    samples: int = 3
    tolerance: float = 0.1


@dataclass
class Dataplane:
    frames: list[str]
    settings: SearchSettings
    latency: LatencySpec | None
    expect: list[Expectation]
    acl: AclSpec | None = None
    qos: QosSpec | None = None


@dataclass
class Day2Spec:
    """A lifecycle operation run under traffic on the test's stack (nfvcat.campaign.day2)."""

    name: str
    op: str  # upgrade | heal
    to: str | None = None
    environment: list[str] | None = None  # None: the test's
    parameters: dict[str, str] = field(default_factory=dict)
    server: str | None = None
    traffic: str | None = None
    traffic_command: str | None = None
    rate_pps: float = 200
    recover_timeout: float = 600
    timeout: float = 900
    expect: list[Expectation] = field(default_factory=list)


@dataclass
class LabSpec:
    topology: str
    length: int = 1
    vnf_parameters: dict[str, str] = field(default_factory=dict)

    @property
    def vnfs(self) -> int:
        """VNFs on the measured path (the ipsec topology: vRouter and two gateways)."""
        return 3 if self.topology == "ipsec" else self.length


@dataclass
class TestSpec:
    __test__ = False  # not a pytest test class

    name: str
    description: str
    chain: str | None
    environment: list[str]
    parameters: dict[str, str]
    flavors: list[str]
    networks: list[dict[str, Any]]
    placement: list[str] | None
    lab: LabSpec | None
    dataplane: Dataplane | None
    plan: bool = True  # plan the chain on the inventory first
    day2: list[Day2Spec] = field(default_factory=list)


@dataclass
class General:
    cloud: str | None
    lab: str | None
    dataplane: str
    external_network: str | None
    availability_zone: str | None
    image_dir: Path | None
    inventory: Path | None
    results_dir: Path
    project: str


@dataclass
class Tdf:
    path: Path
    description: str
    general: General
    tests: list[TestSpec]

    @property
    def target(self) -> str:
        return f"cloud {self.general.cloud}" if self.general.cloud else f"lab {self.general.lab}"


def schema() -> dict[str, Any]:
    text = resources.files("nfvcat").joinpath("data/schemas/test-description.schema.json").read_text()
    return dict(json.loads(text))


def schema_errors(data: Any) -> list[tuple[tuple[Any, ...], str]]:
    """(path, message) of every schema violation, then of every semantic one when the schema is met."""
    errors = [(tuple(e.absolute_path), e.message if len(e.message) < 200 else e.message[:197] + "...")
              for e in jsonschema.Draft202012Validator(schema()).iter_errors(data)]
    if errors:
        return sorted(errors, key=lambda pm: [str(p) for p in pm[0]])
    return _semantic_errors(data)


def _semantic_errors(data: dict[str, Any]) -> list[tuple[tuple[Any, ...], str]]:
    out: list[tuple[tuple[Any, ...], str]] = []
    seen: dict[str, dict[str, Any]] = {}
    for i, test in enumerate(data["tests"]):
        name = test["name"]
        if name in seen:
            out.append((("tests", i, "name"), f"duplicate test name '{name}'"))
        dp = test.get("dataplane")
        in_cloud = (data.get("general") or {}).get("dataplane") == "cloud" and "chain" in test
        if dp is not None and "lab" not in test and not in_cloud:
            out.append((("tests", i, "dataplane"), "a data plane needs a lab topology (tests[].lab) to run on, or "
                        "general.dataplane: cloud and a chain"))
        for probe in ("acl", "qos"):
            if probe in (dp or {}) and not (in_cloud and "lab" not in test):
                out.append((("tests", i, "dataplane", probe), f"{probe} probes run through the cloud only "
                            "(general.dataplane: cloud, a chain and no lab topology)"))
        if "day2" in test and not ((data.get("general") or {}).get("target") or {}).get("cloud"):
            out.append((("tests", i, "day2"), "day2 operations run on a cloud target's stack (general.target.cloud)"))
        if "day2" in test and "chain" not in test:
            out.append((("tests", i, "day2"), "day2 operations need the test's chain"))
        if "lab" not in test and "chain" not in test:
            out.append((("tests", i), "a test needs a chain, a lab topology, or both"))
        lab = test.get("lab") or {}
        if lab.get("topology") == "ipsec" and lab.get("length", 1) != 1:
            out.append((("tests", i, "lab", "length"), "the ipsec topology has one vRouter"))
        for j, exp in enumerate((dp or {}).get("expect") or []):
            for key in ("relative_to", "per_added_vnf_vs"):
                ref = exp.get(key)
                if ref is None:
                    continue
                where = ("tests", i, "dataplane", "expect", j, key)
                if ref not in seen:
                    out.append((where, f"'{ref}' is not a test run before this one"))
                elif not (seen[ref].get("dataplane")):
                    out.append((where, f"test '{ref}' measures no data plane"))
                elif key == "per_added_vnf_vs" and _vnfs(seen[ref]) == _vnfs(test):
                    out.append((where, f"test '{ref}' has as many VNFs as this one"))
            frame = str(exp.get("frame", ""))
            if exp["metric"].startswith("throughput") and frame not in {str(f) for f in (dp or {}).get("frames", [])}:
                out.append((("tests", i, "dataplane", "expect", j, "frame"),
                            f"throughput of frame '{frame or '(none)'}' is not measured by this test"))
        seen[name] = test
    return out


def _vnfs(test: dict[str, Any]) -> int:
    lab = test.get("lab") or {}
    return 3 if lab.get("topology") == "ipsec" else int(lab.get("length", 1))


def load(path: str | Path) -> Tdf:
    path = Path(path)
    data, positions = yamlpos.read_file(path)
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise UserError(f"{path}: not a test description (expected kind: {KIND})")
    errors = schema_errors(data)
    if errors:
        where, message = errors[0]
        line, col = positions.locate(where)
        more = f" (and {len(errors) - 1} more: nfvcat validate {path})" if len(errors) > 1 else ""
        raise UserError(f"{path}:{line}:{col}: E0013 /{'/'.join(map(str, where))}: {message}{more}")
    return from_data(data, path)


def _rel(base: Path, value: str | None) -> Path | None:
    if not value:
        return None
    p = Path(os.path.expandvars(os.path.expanduser(value)))
    return (p if p.is_absolute() else base / p).resolve()


def from_data(data: dict[str, Any], path: Path) -> Tdf:
    base = path.resolve().parent
    g = data["general"]
    target = g["target"]
    general = General(cloud=target.get("cloud"), lab=target.get("lab"), dataplane=g.get("dataplane", "netns"),
                      external_network=g.get("external_network"), availability_zone=g.get("availability_zone"),
                      image_dir=_rel(base, g.get("image_dir")), inventory=_rel(base, g.get("inventory")),
                      results_dir=_rel(base, g.get("results_dir")) or base / "results",
                      project=str(g.get("project", "nfvcat")))
    tests = []
    for t in data["tests"]:
        lab = None
        if "lab" in t:
            vnf_params = {str(k): str(v) for k, v in (t["lab"].get("vnf_parameters") or {}).items()}
            lab = LabSpec(t["lab"]["topology"], int(t["lab"].get("length", 1)), vnf_params)
        dp = None
        if "dataplane" in t:
            d = t["dataplane"]
            defaults = SearchSettings()
            settings = SearchSettings(
                trial_seconds=float(d.get("trial_seconds", defaults.trial_seconds)),
                max_rate_pps=float(d.get("max_rate_pps", defaults.max_rate_pps)),
                min_rate_pps=float(d.get("min_rate_pps", defaults.min_rate_pps)),
                resolution=float(d.get("resolution", defaults.resolution)),
                loss_tolerance=float(d.get("loss_tolerance", defaults.loss_tolerance)),
                max_trials=int(d.get("max_trials", defaults.max_trials)),
                samples=int(d.get("samples", defaults.samples)))
            lat = d.get("latency")
            latency = LatencySpec(str(lat.get("frame", "64")), float(lat.get("load_fraction", 0.5)),
                                  int(lat.get("probes", 200)), float(lat.get("interval_ms", 2.0))) if lat else None
            expect = [Expectation(e["name"], e["metric"], str(e["frame"]) if "frame" in e else None, e.get("min"),
                                  e.get("max"), e.get("relative_to"), e.get("per_added_vnf_vs"))
                      for e in d.get("expect") or []]
            acl = AclSpec(**d["acl"]) if "acl" in d else None
            qos = QosSpec(**d["qos"]) if "qos" in d else None
            dp = Dataplane([str(f) for f in d.get("frames", [64])], settings, latency, expect, acl, qos)
        env = [str(_rel(base, e)) if (base / e).is_file() else e for e in t.get("environment") or []]
        params = {str(k): str(v) for k, v in (t.get("parameters") or {}).items()}
        day2 = [Day2Spec(d["name"], d["op"], d.get("to"),
                         [str(_rel(base, e)) if (base / e).is_file() else e for e in d["environment"]]
                         if "environment" in d else None,
                         {str(k): str(v) for k, v in (d.get("parameters") or {}).items()}, d.get("server"),
                         d.get("traffic"), d.get("traffic_command"), float(d.get("rate_pps", 200)),
                         float(d.get("recover_timeout", 600)), float(d.get("timeout", 900)),
                         [Expectation(e["name"], e["metric"], None, e.get("min"), e.get("max"), None, None)
                          for e in d.get("expect") or []])
                for d in t.get("day2") or []]
        tests.append(TestSpec(name=t["name"], description=t.get("description", ""), chain=t.get("chain"),
                              environment=env, parameters=params,
                              flavors=list(t.get("flavors") or []), networks=list(t.get("networks") or []),
                              placement=t.get("placement"), lab=lab, dataplane=dp,
                              plan=bool(t.get("plan", True)), day2=day2))
    return Tdf(path, str(data.get("description", "")), general, tests)
