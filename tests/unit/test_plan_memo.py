"""The memoised planner (hosts grouped by signature, one verdict and one Nova fit per group and request) places
every VNF exactly where the un-memoised planner (host by host, its own Nova objects per host) does: same host,
NUMA cells, pinned CPUs, emulator CPUs, pages, PCI devices and failures, on randomised inventories of many equal
hosts, including hosts that differ only in their pCPU numbering or their thread siblings."""

from __future__ import annotations

import copy
import random
from dataclasses import asdict
from typing import Any

import pytest

from nfvcat.catalog import inventory
from nfvcat.plan import hoststate, novaenv, pciplacement
from nfvcat.plan.planner import Failure, Planner
from nfvcat.plan.request import Chain, Vnf
from tests.unit.test_plan_equivalence import ALIAS, random_inventory, random_vnfs


def _renumbered(host: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """The same host with its pCPUs numbered otherwise: the dedicated CPUs of each cell shifted past the
    others (siblings follow), so only the CPU ids differ."""
    h = copy.deepcopy(host)
    h["name"] += "-renumbered"
    shift = 1000 + 100 * rng.randrange(3)
    for c in h["numa_cells"]:
        ded = sorted(inventory.parse_cpu_spec(c["cpu_dedicated_set"]))
        moved = {cpu: cpu + shift for cpu in ded}
        c["cpu_dedicated_set"] = ",".join(str(moved[cpu]) for cpu in ded)
        pinned = inventory.parse_cpu_spec((c.get("used") or {}).get("pinned_cpus", ""))
        if pinned:
            c["used"]["pinned_cpus"] = ",".join(str(moved[cpu]) for cpu in sorted(pinned))
        shared = sorted(inventory.parse_cpu_spec(c["cpu_shared_set"]))
        sib = c.pop("siblings", None)
        cpus = shared + ded
        if sib is None:
            continue
        pairs = [(cpu, cpu + sib["offset"]) for cpu in cpus if cpu + sib["offset"] in cpus]
        c["siblings"] = [f"{moved.get(a, a)},{moved.get(b, b)}" for a, b in pairs]
    return h


def _resiblinged(host: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """The same host, the same CPU ids, other thread siblings: pairs made of neighbours instead of the
    offset partner (or no SMT at all)."""
    h = copy.deepcopy(host)
    h["name"] += "-siblings"
    for c in h["numa_cells"]:
        cpus = sorted(inventory.parse_cpu_spec(c["cpu_shared_set"]) | inventory.parse_cpu_spec(c["cpu_dedicated_set"]))
        if "siblings" in c and rng.random() < 0.5:
            del c["siblings"]
        else:
            c["siblings"] = [",".join(map(str, cpus[i:i + 2])) for i in range(0, len(cpus), 2)]
    return h


def scale_inventory(seed: int, second_qat: bool = False) -> inventory.Inventory:
    """A few random host kinds, each repeated, plus copies that differ only in pCPU numbering or siblings;
    ``second_qat``: a host with a QAT PF gets another one, on the next cell (two Placement providers)."""
    rng = random.Random(seed)
    kinds = []
    for k in range(3):
        inv = random_inventory(seed * 10 + k, 2)
        raw = _raw(inv, seed * 10 + k)
        kinds.extend(raw)
    for h in kinds if second_qat else []:
        qat = [d for d in h["pci_devices"] if d.get("kind") == "qat"]
        if qat:
            h["pci_devices"].append({**qat[0], "address": "0000:b1:00.0",
                                     "numa_node": (qat[0]["numa_node"] + 1) % len(h["numa_cells"])})
    hosts: list[dict[str, Any]] = []
    for i, h in enumerate(kinds):
        for r in range(rng.randint(2, 4)):
            c = copy.deepcopy(h)
            c["name"] = f"{h['name']}-k{i}-r{r}"
            hosts.append(c)
        hosts.append(_renumbered(hosts[-1], rng))
        hosts.append(_resiblinged(hosts[-2], rng))
    rng.shuffle(hosts)
    return inventory.from_data({"kind": "nfvcat/inventory", "pci": {"alias": ALIAS}, "hosts": hosts}, "scale")


def _raw(inv: inventory.Inventory, seed: int) -> list[dict[str, Any]]:
    """random_inventory's raw host mappings (rebuilt with the same seed)."""
    from tests.unit import test_plan_equivalence as eq

    captured: list[Any] = []
    real = eq.inventory.from_data
    try:
        eq.inventory.from_data = lambda data, path="": captured.append(data) or real(data, path)  # type: ignore
        eq.random_inventory(seed, len(inv.hosts))
    finally:
        eq.inventory.from_data = real
    return list(captured[0]["hosts"])


def _placements(planner: Planner, chain: Chain) -> list[Any]:
    out: list[Any] = []
    result = planner.place_chain(chain)
    out.extend(asdict(p) for p in result.placements)
    out.extend((f.instance, sorted((h, r.code, r.message) for h, r in f.reasons)) for f in result.failures)
    return out


def _state(planner: Planner) -> list[Any]:
    return [(hs.name, hs.signature()[1:], hs.free_devices) for hs in planner.hosts]


@pytest.mark.parametrize(("seed", "strategy", "in_placement"), [
    (11, "spread", False), (12, "pack", False), (13, "spread", False), (14, "pack", False),
    (21, "spread", True), (19, "pack", True)])  # PCI in Placement, offline candidate order (pciplacement)
def test_memoised_planner_places_as_the_unmemoised_one(seed: int, strategy: str, in_placement: bool) -> None:
    inv = scale_inventory(seed, second_qat=in_placement)
    rng = random.Random(seed)
    kinds = random_vnfs(seed, 12)
    vnfs = []
    for i in range(10):  # the same flavors again and again, as counts and --capacity place them
        for k in rng.sample(kinds, 6):
            vnfs.append(Vnf(name=f"{k.name}-{i}", flavor=k.flavor, image_properties=k.image_properties,
                            ports=k.ports, count=rng.randint(1, 3),
                            server_group=rng.choice([None, None, "ha", "aff"])))
    chain = Chain(source="random", vnfs=vnfs, server_groups={"ha": "anti-affinity", "aff": "affinity"})
    memo = Planner(copy.deepcopy(inv), strategy, placement=pciplacement.Candidates() if in_placement else None)
    plain = Planner(copy.deepcopy(inv), strategy, memo=False,
                    placement=pciplacement.Candidates() if in_placement else None)
    got, want = _placements(memo, chain), _placements(plain, chain)
    if in_placement:
        assert any(p.get("other_numa_cells") for p in want if isinstance(p, dict)), "Placement's order must matter"
    placed = [p for p in want if isinstance(p, dict)]
    assert len(placed) > 40 and len(placed) < len(want), "the workload must place and run hosts full"
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g == w, f"placement {i}"
    assert _state(memo) == _state(plain)
    assert memo.fits_memoised > 0, "the memo must answer some fits"


def test_hosts_differing_only_in_pcpu_numbering_or_siblings_have_other_signatures() -> None:
    novaenv.nova()
    rng = random.Random(3)
    base = _raw(random_inventory(31, 1), 31)[0]
    for c in base["numa_cells"]:
        c["siblings"] = {"offset": 16}
    variants = [base, _renumbered(base, rng), _resiblinged(base, rng)]
    inv = inventory.from_data({"kind": "nfvcat/inventory", "pci": {"alias": ALIAS}, "hosts": variants}, "v")
    novaenv.configure(ALIAS)
    sigs = [hoststate.build(h, share=True).signature() for h in inv.hosts]
    assert len(set(sigs)) == 3
    again = hoststate.build(inv.hosts[0], share=True).signature()
    assert again == sigs[0], "an equal host has an equal signature"


def test_signature_knows_every_numa_cell_field() -> None:
    hoststate.check_signature_fields()
    fields = set(novaenv.nova().objects.NUMACell.fields)
    assert fields == hoststate.STATIC_CELL_FIELDS | hoststate.DYNAMIC_CELL_FIELDS


def test_usage_accounting_leaves_the_static_cell_fields_alone() -> None:
    """The signature's static part is taken once per host: Nova's usage accounting must copy those fields."""
    inv = scale_inventory(21)
    planner = Planner(inv, "pack")
    before = {hs.index: [[getattr(c, f) for f in sorted(hoststate.STATIC_CELL_FIELDS) if f in c]
                         for c in hs.topology.cells] for hs in planner.hosts}
    result = planner.place_chain(Chain(source="r", vnfs=random_vnfs(21, 60)))
    assert len(result.placements) > 20
    for hs in planner.hosts:
        assert [[getattr(c, f) for f in sorted(hoststate.STATIC_CELL_FIELDS) if f in c]
                for c in hs.topology.cells] == before[hs.index], hs.name


def test_a_failure_explained_by_the_memoised_planner_is_the_same() -> None:
    inv = scale_inventory(22)
    vnf = random_vnfs(22, 1)[0]
    vnf.count = 400
    got = Planner(copy.deepcopy(inv), "spread").place_chain(Chain(source="r", vnfs=[vnf]))
    want = Planner(copy.deepcopy(inv), "spread", memo=False).place_chain(Chain(source="r", vnfs=[vnf]))
    assert got.failures and isinstance(got.failures[0], Failure)
    assert [asdict(p) for p in got.placements] == [asdict(p) for p in want.placements]
    assert [f.reasons for f in got.failures] == [f.reasons for f in want.failures]


def _full(value: Any) -> Any:
    """Every field of a Nova object, recursively (sets sorted): what 'the same state' means."""
    base = novaenv.nova().objects.base.NovaObject
    if isinstance(value, (set, frozenset)):
        return tuple(sorted(value))
    if isinstance(value, (list, tuple)):
        return tuple(_full(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _full(v)) for k, v in value.items()))
    if isinstance(value, base):
        return (type(value).__name__, tuple((f, _full(getattr(value, f)) if f in value else "<unset>")
                                            for f in sorted(value.fields)))
    return value


def _everything(hs: hoststate.HostState) -> Any:
    spec = copy.copy(hs.spec)
    spec.name, spec.index = "", 0
    return (_full(hs.topology), _full(hs.pci.pools), hs.vcpu_used, hs.pcpu_used, hs.mem_used, repr(spec),
            tuple(hs.enabled_filters))


@pytest.mark.parametrize("seed", [41, 42, 43, 44, 45, 46])
def test_equal_signatures_mean_equal_hosts(seed: int) -> None:
    """Hosts of one kind filled in other orders (1+3 pinned vCPUs, 3+1, 2+2, 1+1+1+1, with pages and PCI
    devices) reach equal usage counts with other pinned CPUs: after every step, two hosts share a signature
    only if their Nova state is equal in every field (NUMA cells, pinned CPUs, pages, PCI pools)."""
    from nfvcat.plan import demand, filters
    from nfvcat.plan.request import Flavor

    raw = _raw(random_inventory(seed, 1), seed)[0]
    inv = inventory.from_data({"kind": "nfvcat/inventory", "pci": {"alias": ALIAS}, "hosts": [raw]}, "same")
    novaenv.configure(ALIAS)
    rng = random.Random(seed)

    def vnf(cpus: int) -> demand.Demand:
        specs = {"hw:cpu_policy": "dedicated", "hw:cpu_thread_policy": rng.choice(["prefer", "isolate", "require"]),
                 "hw:mem_page_size": rng.choice(["small", "any"])}
        return demand.build(Vnf(f"v{cpus}", Flavor(f"v{cpus}", cpus, 512 * cpus, extra_specs=specs)))

    orders = [[1, 3], [3, 1], [2, 2], [1, 1, 1, 1], [1, 1, 2], [2, 1, 1], [4]]
    hosts = [hoststate.build(inv.hosts[0], share=True) for _ in orders]
    demands = {c: vnf(c) for c in (1, 2, 3, 4)}
    seen: dict[Any, list[Any]] = {}
    for hs, sizes in zip(hosts, orders, strict=True):
        for c in sizes:
            d = demands[c]
            ok, fitted = filters.exact_fit(d, hs)
            if ok:
                hs.consume(fitted, d.pci_requests, d.vcpus, d.pcpus, d.memory_mb)
            seen.setdefault(hs.signature(), []).append(_everything(hs))
    assert any(len(v) > 1 for v in seen.values()) or len(seen) > 4
    for states in seen.values():
        assert all(s == states[0] for s in states)
    fulls = {}
    for sig, states in seen.items():
        fulls.setdefault(states[0], set()).add(sig)
    assert all(len(sigs) == 1 for sigs in fulls.values()), "equal hosts must share a signature (memo hits)"
