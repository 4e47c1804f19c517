"""``nfvcat preflight``: will each catalog entry run on this cloud, per environment, and if not, why not, in the
cloud's own terms.

What the cloud's APIs show is read once (:class:`CloudFacts`): Nova's flavors with their extra specs, host
aggregates, availability zones and microversion; Glance's images; Neutron's agents (the mechanism drivers that
bind each vnic type on each physnet), extensions (networking-sfc, QoS), QoS rule types and segment ranges; Heat's
resource types and template versions; Placement's providers (inventories, usages, traits); Tacker's VIMs. With
host access, each host's own NUMA cells, thread siblings, huge pages and pinned pCPUs. Then every entry is
planned on the inventory those make (Nova's own fitting: :mod:`nfvcat.plan`), so "fits" means Nova would place it
now.

Each reason names the rule behind it (Nova's filter, Neutron's binding, Heat's constraint). A fact no API shows
gives "unknown", never a pass: the verdict is "does not run" when a rule fails, "unknown" when one cannot be
judged, else "runs". Judging the plan on estimated hosts (no host access) is unknown, not a fit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nfvcat import catalog
from nfvcat.catalog import entries as entries_mod
from nfvcat.catalog import site as site_profile
from nfvcat.cloud.cloudfacts import CloudFacts, get, host_aggregate_metadata
from nfvcat.core import hot, yamlpos
from nfvcat.core.errors import UserError

RUNS, DOES_NOT_RUN, UNKNOWN = "runs", "does not run", "unknown"
PASS, FAIL, NOTE = "pass", "fail", "note"  # a reason's status (UNKNOWN too); a note never changes the verdict
OVS_AGENT, SRIOV_AGENT = "Open vSwitch agent", "NIC Switch agent"
SFC_TYPES = {"OS::Neutron::PortChain", "OS::Neutron::PortPair", "OS::Neutron::PortPairGroup",
             "OS::Neutron::FlowClassifier"}
QOS_RULES = {"OS::Neutron::QoSBandwidthLimitRule": "bandwidth_limit", "OS::Neutron::QoSDscpMarkingRule":
             "dscp_marking", "OS::Neutron::QoSMinimumBandwidthRule": "minimum_bandwidth",
             "OS::Neutron::QoSMinimumPacketRateRule": "minimum_packet_rate"}
SRIOV_VNICS = {"direct", "direct-physical", "macvtap"}


@dataclass
class Reason:
    status: str  # pass, fail, unknown, note
    rule: str  # the platform's rule: "Nova AggregateInstanceExtraSpecsFilter", "Neutron ML2 sriovnicswitch", ...
    detail: str

    def as_dict(self) -> dict[str, str]:
        return {"status": self.status, "rule": self.rule, "detail": self.detail}


@dataclass
class Case:
    """One entry in one environment."""
    entry: str
    version: str
    environment: str
    reasons: list[Reason] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        statuses = {r.status for r in self.reasons}
        return DOES_NOT_RUN if FAIL in statuses else UNKNOWN if UNKNOWN in statuses else RUNS

    def add(self, status: str, rule: str, detail: str) -> None:
        self.reasons.append(Reason(status, rule, detail))

    def as_dict(self) -> dict[str, Any]:
        return {"entry": self.entry, "version": self.version, "environment": self.environment,
                "verdict": self.verdict, "reasons": [r.as_dict() for r in self.reasons]}


@dataclass
class Needs:
    """What an entry's template asks of the cloud in one environment."""
    template_version: str
    resource_types: set[str]
    chain: Any  # plan.request.Chain, None when the template has no server
    images: list[dict[str, Any]]


def needs(entry: entries_mod.Entry, env: Path | None) -> Needs:
    from nfvcat.plan import hot_reader

    path = entry.template
    data = _load(path)
    types: set[str] = set()
    _types(data, path, types, 0)
    params = hot_reader.environment_parameters(str(env)) if env else {}
    chain = None
    if any(True for _ in hot.resources(data, "OS::Nova::Server")) or any(
            t.endswith((".yaml", ".yml")) for t in types):
        root = catalog.find_root()
        networks = catalog.provider_networks(root, _load_quiet)
        try:
            chain = hot_reader.load(str(path), data, params, None, networks)
        except UserError as exc:
            if "no OS::Nova::Server" not in str(exc):
                raise
    return Needs(str(data.get("heat_template_version", "")), {t for t in types if t.startswith("OS::")}, chain,
                 entry.images)


def _load(path: Path) -> Any:
    try:
        return yamlpos.load(path.read_text(encoding="utf-8")[:yamlpos.MAX_BYTES + 1])[0]
    except (OSError, UnicodeDecodeError, yamlpos.DocumentError) as exc:
        raise UserError(f"{path}: {getattr(exc, 'message', exc)}") from None


def _load_quiet(path: Any) -> Any:
    try:
        return _load(Path(path))
    except UserError:
        return None


def _types(data: Any, path: Path, out: set[str], depth: int) -> None:
    for _, body in hot.resources(data):
        rtype = body.get("type")
        if isinstance(rtype, str):
            out.add(rtype)
    if depth > 5:
        return
    for _, child, _ in hot.reached_templates(data, str(path.parent)):
        _types(_load(Path(child)), Path(child), out, depth + 1)


# -- the rules -----------------------------------------------------------------------------------------------

def judge(case: Case, need: Needs, facts: CloudFacts, site: dict[str, Any]) -> None:
    _heat(case, need, facts)
    _neutron_extensions(case, need, facts)
    _images(case, need, facts)
    if need.chain is not None:
        _flavors(case, need, facts)
        _ports(case, need, facts, site)
        _plan(case, need, facts)


def _heat(case: Case, need: Needs, facts: CloudFacts) -> None:
    rule = "Heat template versions"
    versions = facts.template_versions
    want = f"heat_template_version.{need.template_version}"
    if versions is None:
        case.add(UNKNOWN, rule, "GET /template_versions is not allowed")
    else:
        case.add(PASS if want in versions else FAIL, rule,
                 f"{need.template_version} " + ("offered" if want in versions else "not offered by this Heat"))
    kinds = facts.resource_types
    used = sorted(t for t in need.resource_types if "::" in t)
    if kinds is None:
        case.add(UNKNOWN, "Heat resource types", "GET /resource_types is not allowed")
        return
    missing = [t for t in used if t not in kinds]
    case.add(FAIL if missing else PASS, "Heat resource types",
             f"{', '.join(missing)} not available (Heat lists a type only when its service and extension are there)"
             if missing else f"{len(used)} types available")


def _neutron_extensions(case: Case, need: Needs, facts: CloudFacts) -> None:
    sfc = sorted(need.resource_types & SFC_TYPES)
    if sfc:
        ext = facts.extensions
        rule = "Neutron networking-sfc (extensions sfc, flow_classifier)"
        if ext is None:
            case.add(UNKNOWN, rule, "GET /extensions is not allowed")
        else:
            missing = sorted({"sfc", "flow_classifier"} - ext)
            case.add(FAIL if missing else PASS, rule, f"{', '.join(sfc)}: " +
                     (f"extension(s) {', '.join(missing)} not loaded" if missing else "extensions loaded"))
    rules = sorted({QOS_RULES[t] for t in need.resource_types if t in QOS_RULES})
    if rules:
        have = facts.qos_rule_types
        rule = "Neutron QoS rule types (the backends' supported rules)"
        if have is None:
            case.add(UNKNOWN, rule, "GET /qos/rule-types is not allowed")
        else:
            missing = [r for r in rules if r not in have]
            case.add(FAIL if missing else PASS, rule, (f"{', '.join(missing)} not supported by any loaded "
                                                       f"mechanism driver" if missing else f"{', '.join(rules)} "
                                                       "supported"))


def _images(case: Case, need: Needs, facts: CloudFacts) -> None:
    for img in need.images:
        name = str(img.get("name"))
        rule = f"Heat constraint glance.image ({name})"
        found = [i for i in facts.images(name) if i.get("status") == "active"]
        if not found:
            case.add(FAIL, rule, f"no active Glance image named {name}")
            continue
        case.add(PASS, rule, f"{len(found)} active image(s) named {name}")
        lock = img.get("checksum") or {}
        algo, value = str(lock.get("algorithm") or ""), str(lock.get("value") or "")
        same = [i for i in found if i.get("os_hash_algo") == algo and i.get("os_hash_value") == value]
        if same:
            case.add(PASS, f"image lock ({name})", f"Glance's {algo} equals the lock's")
        elif any(i.get("os_hash_algo") == algo for i in found):
            case.add(FAIL, f"image lock ({name})", f"Glance's {algo} differs from the lock's {value[:12]}")
        else:
            case.add(NOTE, f"image lock ({name})", f"Glance hashes with {found[0].get('os_hash_algo')}, the lock "
                     f"has {algo or 'no hash'}: not compared (nfvcat onboard verifies the file)")


def _flavors(case: Case, need: Needs, facts: CloudFacts) -> None:
    flavors = facts.flavors
    seen: set[str] = set()
    for vnf in need.chain.vnfs:
        f = vnf.flavor
        if f.name in seen:
            continue
        seen.add(f.name)
        rule = f"Nova flavor {f.name}"
        if flavors is None:
            case.add(UNKNOWN, rule, "GET /flavors/detail is not allowed")
            continue
        cloud = flavors.get(f.name)
        if cloud is None:
            case.add(FAIL, rule, "no such flavor (Heat constraint nova.flavor)")
            continue
        specs = {str(k): str(v) for k, v in (cloud.get("extra_specs") or {}).items()}
        want = {str(k): str(v) for k, v in (f.extra_specs or {}).items()}
        diff = [f"{k}={specs.get(k)!r} (catalog {v!r})" for k, v in sorted(want.items()) if specs.get(k) != v]
        size = [f"{k} {cloud.get(k)} (catalog {v})" for k, v in (("vcpus", f.vcpus), ("ram", f.ram))
                if cloud.get(k) is not None and int(cloud[k]) != int(v)]
        case.add(FAIL if diff or size else PASS, rule, "; ".join(diff + size) or "extra specs and size as the catalog")
        _aggregates(case, f.name, want, facts)


def _aggregates(case: Case, flavor: str, specs: dict[str, str], facts: CloudFacts) -> None:
    scoped = {k.split(":", 1)[1]: v for k, v in specs.items() if k.startswith("aggregate_instance_extra_specs:")}
    if not scoped:
        return
    rule = f"Nova AggregateInstanceExtraSpecsFilter ({flavor})"
    aggs = facts.aggregates
    if aggs is None:
        case.add(UNKNOWN, rule, "GET /os-aggregates is admin-only")
        return
    from nova.scheduler.filters import extra_specs_ops

    merged = host_aggregate_metadata(aggs)
    hosts = sorted(h for h, meta in merged.items()
                   if all(any(extra_specs_ops.match(have, want) for have in meta.get(k, set()))
                          for k, want in scoped.items()))
    case.add(FAIL if not hosts else PASS, rule, f"{scoped}: " + (f"hosts {', '.join(hosts)}" if hosts else
                                                                 "no aggregate's host matches this metadata"))


def _ports(case: Case, need: Needs, facts: CloudFacts, site: dict[str, Any]) -> None:
    agents = facts.agents
    wanted = sorted({(p.vnic_type, p.physnet) for v in need.chain.vnfs for p in v.ports if p.physnet})
    for vnic, physnet in wanted:
        sriov = vnic in SRIOV_VNICS
        kind = str((site.get(physnet) or {}).get("type", ""))
        rule = (f"Neutron ML2 {'sriovnicswitch' if sriov else 'openvswitch'} binding (vnic {vnic}, physnet "
                f"{physnet})")
        if agents is None:
            case.add(UNKNOWN, rule, "GET /agents is admin-only")
            continue
        live = [a for a in agents if a.get("alive") and a.get("admin_state_up", True)]
        if sriov:
            hosts = sorted(a["host"] for a in live if a.get("agent_type") == SRIOV_AGENT
                           and physnet in ((a.get("configurations") or {}).get("device_mappings") or {}))
        else:
            hosts = sorted(a["host"] for a in live if a.get("agent_type") == OVS_AGENT
                           and physnet in ((a.get("configurations") or {}).get("bridge_mappings") or {})
                           and (kind != "ovs-dpdk" or (a.get("configurations") or {}).get("datapath_type")
                                == "netdev"))
        what = "live NIC Switch agent mapping it" if sriov else (
            "live OVS agent (datapath netdev) bridging it" if kind == "ovs-dpdk" else "live OVS agent bridging it")
        case.add(PASS if hosts else FAIL, rule, f"{what}: {', '.join(hosts)}" if hosts else
                 f"no {what}: the port's binding fails (vif_type binding_failed)")


def _plan(case: Case, need: Needs, facts: CloudFacts) -> None:
    from nfvcat.plan.planner import Planner

    rule = "Nova scheduler (filters and NUMA fitting, nova.virt.hardware)"
    got = facts.inventory
    if got is None:
        case.add(UNKNOWN, rule, "the hypervisors or Placement's providers are admin-only, or no host is up")
        return
    inv, estimated = got
    result = Planner(inv).place_chain(need.chain)
    if result.failures:
        from nfvcat.plan.output import grouped

        f = result.failures[0]
        text = f"{f.instance} fits no host now: " + "; ".join(
            f"{', '.join(g['host_names'][:3])}{' and more' if g['hosts'] > 3 else ''}: {g['message']}"
            for g in grouped(f))
        unsure = sorted({(h, r.code) for h, r in f.reasons if estimated.decides(h, r.code)})
        if unsure:
            host, code = unsure[0]
            case.add(UNKNOWN, rule, text + f" (on {', '.join(sorted({h for h, _ in unsure}))}: "
                     f"{estimated.why(host, code)}; preflight --host-access)")
        else:
            case.add(FAIL, rule, text)
        return
    placed = [f"{p.instance} on {p.host} cells {p.numa_cells}" for p in result.placements]
    on = sorted({p.host for p in result.placements if p.host in estimated.cells or
                 (p.pci_devices and p.host in estimated.devices)})
    if on:
        case.add(UNKNOWN, rule, "; ".join(placed) + f": on {', '.join(on)}, {estimated.why(on[0])} "
                 "(preflight --host-access)")
    else:
        case.add(PASS, rule, "; ".join(placed))


# -- the run -------------------------------------------------------------------------------------------------

def cases(root: Path, names: list[str] | None = None) -> list[tuple[entries_mod.Entry, Path | None]]:
    """Each Heat entry (those named, else all) with each of its example environments (none: the defaults)."""
    found = entries_mod.entries(root, "heat")
    if names:
        known = {e.name: e for e in found}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise UserError(f"no such Heat entry: {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        found = [known[n] for n in names]
    out: list[tuple[entries_mod.Entry, Path | None]] = []
    for e in found:
        out.extend([(e, env) for env in e.examples()] or [(e, None)])
    return out


def run(conn: Any, root: Path, names: list[str] | None = None, read_host: Any = None) -> tuple[list[Case],
                                                                                                dict[str, Any]]:
    """The cases, and the cloud's facts that no entry owns (Nova's microversion, zones, Tacker's VIMs)."""
    facts = CloudFacts(conn, read_host)
    site = site_profile.of_catalog(root).physnets
    out = []
    for entry, env in cases(root, names):
        case = Case(entry.name, entry.version, _env_name(env))
        judge(case, needs(entry, env), facts, site)
        out.append(case)
    return out, cloud_summary(conn, facts)


def _env_name(env: Path | None) -> str:
    if env is None:
        return "default"
    return env.name.removesuffix(".yaml").removesuffix(".env")


def cloud_summary(conn: Any, facts: CloudFacts) -> dict[str, Any]:
    from nfvcat.cloud import tacker_lcm

    vims: Any = "no Tacker endpoint"
    if tacker_lcm.available(conn):
        body = get(tacker_lcm.adapter(conn), "/v1.0/vims", "Tacker VIMs")
        vims = "not allowed" if body is None else [{"name": v.get("name"), "status": v.get("status")}
                                                     for v in body.get("vims") or []]
    got = facts.inventory
    return {"nova_microversion": facts.nova_microversion, "availability_zones": facts.zones,
            "tacker_vims": vims, "hosts": None if got is None else len(got[0].hosts),
            "estimated_hosts": None if got is None else sorted(got[1].cells),
            "estimated_devices": None if got is None else sorted(got[1].devices)}
