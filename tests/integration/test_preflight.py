"""`nfvcat preflight` on the dev cloud (issue #43): every catalog entry and environment gets a verdict read from
the live cloud and its hosts (--host-access devcloud: Nova's compute_nodes records), then the cloud is changed,
one thing at a time and restored after: a flavor's host aggregate removed, the 1 GiB huge pages exhausted, the
SR-IOV agents disabled, networking-sfc taken out of neutron-server. The verdict and its reason must change, named
with the rule behind it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tests.integration.conftest import nfvcat
from tests.integration.recorded import Recorded, cells

pytestmark = pytest.mark.usefixtures("onboarded")

SCHEDULER = "Nova scheduler (filters and NUMA fitting, nova.virt.hardware)"
DPDK = ("chain-vrouter", "ovs-dpdk")
SRIOV = ("chain-vrouter", "sriov")


def preflight(*args: str) -> dict[tuple[str, str], dict[str, Any]]:
    res = nfvcat("preflight", "--host-access", "devcloud", "-f", "json", *args, timeout=600)
    assert res.returncode in (0, 2), res.stderr
    doc = json.loads(res.stdout)
    return {(c["entry"], c["environment"]): c for c in doc["cases"]}


def reason(case: dict[str, Any], rule: str) -> dict[str, str]:
    found = [r for r in case["reasons"] if r["rule"].startswith(rule)]
    assert found, f"{case['entry']} [{case['environment']}]: no reason {rule!r}: {case['reasons']}"
    return found[0]


def test_every_entry_gets_a_verdict_from_the_live_cloud() -> None:
    from nfvcat import catalog
    from nfvcat.cloud import preflight as pf

    got = preflight()
    want = {(e.name, pf._env_name(env)) for e, env in pf.cases(catalog.find_root())}
    assert set(got) == want
    assert all(c["verdict"] in ("runs", "does not run", "unknown") and c["reasons"] for c in got.values())
    # the dev cloud's hosts are read through the host access: no cell is estimated, so the plan is judged
    assert reason(got[DPDK], SCHEDULER)["status"] in ("pass", "fail")
    assert reason(got[DPDK], "Nova AggregateInstanceExtraSpecsFilter (nfv.dpdk)")["status"] == "pass"
    assert reason(got[SRIOV], "Neutron ML2 sriovnicswitch binding")["status"] == "pass"
    assert reason(got[("chain-sfc", "udp-flows")], "Neutron networking-sfc")["status"] == "pass"


@contextmanager
def aggregate_without(conn: Any, cls: str) -> Iterator[None]:
    """Every host aggregate's nfv_class without ``cls`` (the flavors of that class lose their hosts)."""
    before = {a.id: dict(a.metadata or {}) for a in conn.compute.aggregates()}
    try:
        for agg in conn.compute.aggregates():
            values = [v for v in str((agg.metadata or {}).get("nfv_class", "")).split(",") if v]
            if cls in values:
                conn.compute.set_aggregate_metadata(agg, {"nfv_class": ",".join(v for v in values if v != cls)})
        yield
    finally:
        for agg in conn.compute.aggregates():
            if agg.id in before and "nfv_class" in before[agg.id]:
                conn.compute.set_aggregate_metadata(agg, {"nfv_class": before[agg.id]["nfv_class"]})


def test_a_flavors_host_aggregate_removed(conn: Any) -> None:
    assert reason(preflight()[DPDK], "Nova AggregateInstanceExtraSpecsFilter (nfv.dpdk)")["status"] == "pass"
    with aggregate_without(conn, "dpdk"):
        case = preflight()[DPDK]
    assert case["verdict"] == "does not run"
    agg = reason(case, "Nova AggregateInstanceExtraSpecsFilter (nfv.dpdk)")
    assert agg["status"] == "fail" and "no aggregate's host matches" in agg["detail"]
    assert reason(preflight()[DPDK], "Nova AggregateInstanceExtraSpecsFilter (nfv.dpdk)")["status"] == "pass"


@contextmanager
def pages_used(db: Recorded, size_kb: int) -> Iterator[Callable[[], bool]]:
    """Every host's pages of ``size_kb`` all in use in Nova's compute_nodes record (what the host access reads);
    yields whether the edit is still there (nova-compute rewrites the record on its periodic update)."""
    rows = db.rows("nova", "SELECT host, numa_topology FROM compute_nodes WHERE deleted=0 AND numa_topology "
                           "IS NOT NULL")
    before = {host: topo for host, topo in rows}
    for host, raw in rows:
        topo = json.loads(raw)
        for cell in cells(topo):
            for page in cell.get("mempages") or []:
                data = page["nova_object.data"]
                if int(data["size_kb"]) == size_kb:
                    data["used"] = int(data["total"]) - int(data.get("reserved") or 0)
        db.execute("nova", "UPDATE compute_nodes SET numa_topology=%s WHERE host=%s AND deleted=0",
                   json.dumps(topo), host)

    def intact() -> bool:
        for (raw,) in db.rows("nova", "SELECT numa_topology FROM compute_nodes WHERE deleted=0 AND "
                                         "numa_topology IS NOT NULL"):
            for cell in cells(json.loads(raw)):
                for page in cell.get("mempages") or []:
                    data = page["nova_object.data"]
                    if int(data["size_kb"]) == size_kb and int(data["used"]) < int(data["total"]) - int(
                            data.get("reserved") or 0):
                        return False
        return True
    try:
        yield intact
    finally:
        for host, raw in before.items():
            db.execute("nova", "UPDATE compute_nodes SET numa_topology=%s WHERE host=%s AND deleted=0", raw, host)


def test_huge_pages_exhausted() -> None:
    db = Recorded()
    before = reason(preflight()[DPDK], SCHEDULER)
    assert before["status"] == "pass", before
    for _ in range(3):  # again if nova-compute rewrote its record while preflight ran
        with pages_used(db, 1048576) as intact:
            case = preflight()[DPDK]
            if intact():
                break
    else:
        raise AssertionError("nova-compute undid the exhausted pages during each of 3 runs")
    assert case["verdict"] == "does not run"
    plan = reason(case, SCHEDULER)
    assert plan["status"] == "fail" and "1G pages" in plan["detail"], plan


@contextmanager
def sriov_agents_down(conn: Any) -> Iterator[None]:
    agents = [a for a in conn.network.agents() if a.agent_type == "NIC Switch agent"]
    assert agents, "the dev cloud runs no SR-IOV agent"
    try:
        for a in agents:
            conn.network.update_agent(a, is_admin_state_up=False)
        yield
    finally:
        for a in agents:
            conn.network.update_agent(a, is_admin_state_up=True)


def test_sriov_agent_dropped(conn: Any) -> None:
    assert reason(preflight()[SRIOV], "Neutron ML2 sriovnicswitch binding")["status"] == "pass"
    with sriov_agents_down(conn):
        case = preflight()[SRIOV]
    assert case["verdict"] == "does not run"
    bind = reason(case, "Neutron ML2 sriovnicswitch binding (vnic direct, physnet physnet_sriov)")
    assert bind["status"] == "fail" and "no live NIC Switch agent" in bind["detail"]
    assert reason(preflight()[SRIOV], "Neutron ML2 sriovnicswitch binding")["status"] == "pass"


@contextmanager
def neutron_without_sfc() -> Iterator[None]:
    """neutron-server started again without networking-sfc's service plugins (`nfvcat devcloud up` with
    NFVCAT_DEVCLOUD_SFC=0, which writes its neutron.conf so), then again with them."""
    from nfvcat_testbeds.devcloud import procs
    from nfvcat_testbeds.devcloud.configs import SFC_ENV
    from nfvcat_testbeds.devcloud.state import State, default_dir

    state = State(default_dir())

    def restart(**env: str) -> None:
        procs.stop(state, "neutron-api", grace=10)
        res = nfvcat("devcloud", "up", env=env, timeout=600)
        assert res.returncode == 0, res.stderr[-2000:]

    restart(**{SFC_ENV: "0"})
    try:
        yield
    finally:
        restart(**{SFC_ENV: "1"})


def test_networking_sfc_disabled() -> None:
    sfc = ("chain-sfc", "udp-flows")
    with neutron_without_sfc():
        case = preflight()[sfc]
    assert case["verdict"] == "does not run"
    rule = reason(case, "Neutron networking-sfc (extensions sfc, flow_classifier)")
    assert rule["status"] == "fail" and "extension(s) flow_classifier, sfc not loaded" in rule["detail"], rule
    assert reason(preflight()[sfc], "Neutron networking-sfc")["status"] == "pass"
