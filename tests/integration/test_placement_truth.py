"""Every catalog flavor deployed on the dev cloud and checked (13/13), then the truth test: wrong placements
injected into the dev cloud's recorded state (Nova's instance_extra topology, Neutron's binding profile,
Placement's PCI allocation), one at a time and restored after; `check` must fail each with the right check
named, and pass again after the restore. The agreement counts are printed (run with -s to see them)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.conftest import ROOT, catalog_images, nfvcat
from tests.integration.recorded import Recorded, cells

pytestmark = pytest.mark.usefixtures("onboarded")

# flavors only the host without SMT can take (its aggregate has the classes shared and realtime; isolate is a
# forbidden HW_CPU_HYPERTHREADING trait): deployed first, so the others cannot take their pCPUs
FIRST = {"nfv.shared.4c4g", "nfv.pinned.isolate", "nfv.rt.isolate", "nfv.rt.share"}
# the SR-IOV flavor's server has two VF ports: Nova allocates a VF for each port's own PCI request
PORTS_OF = {"nfv.sriov": [("nfv-sriov-left", "direct"), ("nfv-sriov-right", "direct")],
            "nfv.dpdk": [("nfv-dpdk-left", "normal")]}


def catalog_flavors() -> dict[str, dict[str, Any]]:
    out = {}
    for path in sorted((ROOT / "flavors").glob("*/flavor.yaml")):
        data = yaml.safe_load(path.read_text())
        out[data["name"]] = data
    return out


def template(flavors: list[str]) -> dict[str, Any]:
    """One server per flavor, each with the ports its flavor is for (SR-IOV, OVS-DPDK) or a management port,
    booted one after the other."""
    resources: dict[str, Any] = {}
    for i, name in enumerate(flavors):
        short = f"f{i}-{name.removeprefix('nfv.').replace('.', '-')}"
        ports = PORTS_OF.get(name, [("nfv-mgmt", "normal")])
        for j, (net, vnic) in enumerate(ports):
            resources[f"port{i}_{j}"] = {"type": "OS::Neutron::Port", "properties": {
                "name": f"{short}-port{j or ''}", "network": net, "binding:vnic_type": vnic,
                "port_security_enabled": False}}
        resources[f"server{i}"] = {"type": "OS::Nova::Server", "properties": {
            "name": short, "flavor": name, "image": catalog_images()[0],
            "networks": [{"port": {"get_resource": f"port{i}_{j}"}} for j in range(len(ports))]}}
        if i:  # one at a time: concurrent claims race for the same NUMA cell and exhaust Nova's retries
            resources[f"server{i}"]["depends_on"] = [f"server{i - 1}"]
    return {"heat_template_version": "2021-04-16", "resources": resources}


def create(conn: Any, name: str, flavors: list[str]) -> None:
    stack = conn.orchestration.create_stack(name=name, template=template(flavors), timeout_mins=15,
                                            disable_rollback=True)
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        stack = conn.orchestration.get_stack(stack.id)
        if not stack.status.endswith("IN_PROGRESS"):
            break
        time.sleep(2)
    assert stack.status == "CREATE_COMPLETE", f"{name}: {stack.status}: {stack.status_reason}"


def delete(conn: Any, name: str) -> None:
    stack = conn.orchestration.find_stack(name)
    if stack is None:
        return
    conn.orchestration.delete_stack(stack)
    deadline = time.monotonic() + 600
    while conn.orchestration.find_stack(name) is not None and time.monotonic() < deadline:
        time.sleep(2)
    assert conn.orchestration.find_stack(name) is None, f"{name} not deleted"


@pytest.fixture(scope="module")
def deployed(conn: Any) -> Iterator[dict[str, Any]]:
    """Both stacks; server name -> {id, flavor, host, stack}."""
    names = catalog_flavors()
    stacks = {"truth-a": sorted(n for n in names if n in FIRST), "truth-b": sorted(n for n in names if n not in FIRST)}
    try:
        for stack in stacks:
            delete(conn, stack)
        for stack, flavors in stacks.items():
            t = time.monotonic()
            create(conn, stack, flavors)
            print(f"\n{stack}: {len(flavors)} servers created in {time.monotonic() - t:.0f} s")
        servers = {}
        for s in conn.compute.servers(all_projects=True, details=True):
            for stack, flavors in stacks.items():
                if s.flavor.original_name in flavors and s.name.startswith("f"):
                    servers[s.name] = {"id": s.id, "flavor": s.flavor.original_name, "host": s.compute_host,
                                       "stack": stack}
        yield servers
    finally:
        settle(Recorded())
        for stack in stacks:
            delete(conn, stack)


def rebuild_trackers(conn: Any, timeout: float = 240) -> None:
    """Restart every nova-compute of the dev cloud and wait for each one's first heartbeat after it.

    nova-compute keeps each node's usage (pinned pCPUs, huge pages) in memory and rebuilds it from the instances'
    recorded topologies in a periodic update (every 60 s). One that runs during an injection either counts the
    injected pins or stops half-way (CPUPinningInvalid: two instances on one pCPU) and saves nothing, leaving a
    usage in memory that no API and no table shows: a delete then fails (CPUUnpinningInvalid) and leaves the
    server in ERROR holding its pCPUs. A nova-compute rebuilds its usage from the (restored) records when it
    starts, before its first heartbeat; the devcloud's own service definitions start it again."""
    from nfvcat.catalog import inventory
    from nfvcat_testbeds.devcloud import computes, lifecycle, procs, services
    from nfvcat_testbeds.devcloud.state import State, default_dir

    state = State(default_dir())
    inv = lifecycle.inventory_of(state)
    hosts = computes.site_layout(inventory.load(str(inv)))
    svcs = [s for c in hosts for s in services.compute(state, c, inv) if s.name.startswith("nova-compute@")]
    assert svcs and all(procs.pid_of(state, s.name) for s in svcs), "no nova-compute of the dev cloud is running"
    logs = {s.name: state.log / f"{s.name}.log" for s in svcs}
    offsets = {name: log.stat().st_size for name, log in logs.items()}
    for svc in svcs:
        procs.stop(state, svc.name, svc.grace)
    started = datetime.now(UTC).replace(tzinfo=None)  # Nova's updated_at: naive UTC
    for svc in svcs:
        procs.start(state, svc.name, svc.argv, svc.env)
    deadline = time.monotonic() + timeout
    waiting = {s.host for s in conn.compute.services(binary="nova-compute")}
    while waiting and time.monotonic() < deadline:
        time.sleep(2)
        for s in conn.compute.services(binary="nova-compute"):
            if s.updated_at and datetime.fromisoformat(s.updated_at) > started and s.state == "up":
                waiting.discard(s.host)
    assert not waiting, f"nova-compute did not report after its restart: {sorted(waiting)}"
    for name, log in logs.items():
        with log.open("rb") as f:
            f.seek(offsets[name])
            tail = f.read().decode(errors="replace")
        assert "Error updating resources" not in tail, f"{name}: its usage was not rebuilt at start:\n{tail[-2000:]}"


def settle(db: Recorded, timeout: float = 240) -> None:
    """Wait until each compute node's usage is again the sum of its instances' (restored) topologies, so that
    the deletes that follow unpin what Nova really pinned (see Recorded.tracker_differences)."""
    deadline = time.monotonic() + timeout
    while (diff := db.tracker_differences()) and time.monotonic() < deadline:
        time.sleep(5)
    assert not diff, f"Nova's resource tracker did not settle after the restores: {diff}"


def check(stack: str, *extra: str) -> dict[str, Any]:
    """`nfvcat check STACK --host-access devcloud --format json` (exit code and report)."""
    res = nfvcat("check", stack, "--host-access", "devcloud", "--format", "json", *extra)
    assert res.returncode in (0, 2), res.stderr
    data: dict[str, Any] = json.loads(res.stdout)
    assert (res.returncode == 0) == data["ok"]
    return data


def check_in_process(conn: Any, stack: str, inventory: str | None = None) -> dict[str, Any]:
    """The same check through the library (what the command runs; saves a process start per injection)."""
    from nfvcat.cloud.check import check_stack
    from nfvcat.cloud.hostaccess import open_access
    from nfvcat.cloud.verdicts import passed
    from nfvcat_testbeds.devcloud.hostaccess import load_inventory

    verdicts = check_stack(conn, stack, load_inventory(inventory), open_access("devcloud"))
    return {"ok": passed(verdicts), "verdicts": [v.as_dict() for v in verdicts]}


def failed(report: dict[str, Any]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for v in report["verdicts"]:
        if v["status"] != "pass":
            out.setdefault(v["check"], []).append(f"{v['subject']}: {v['status']}: {v['detail']}")
    return out


def test_every_catalog_flavor_deploys_and_checks(conn: Any, deployed: dict[str, Any]) -> None:
    flavors = catalog_flavors()
    assert sorted(s["flavor"] for s in deployed.values()) == sorted(flavors)
    for stack in ("truth-a", "truth-b"):
        report = check(stack)
        assert report["ok"], failed(report)
    by_flavor = {s["flavor"]: s for s in deployed.values()}
    # isolate and the real-time flavors need the host without SMT; require the one with SMT
    assert {by_flavor[f]["host"] for f in ("nfv.pinned.isolate", "nfv.rt.isolate", "nfv.rt.share")} == \
        {"devcloud-nosmt"}
    assert by_flavor["nfv.pinned.require"]["host"] == "devcloud-smt"
    # physnets bound as the site profile says: the shared 4 KiB-page VNF's port is plain OVS
    vif = {by_flavor[f]["flavor"]: {p.binding_vif_type for p in conn.network.ports(device_id=by_flavor[f]["id"])}
           for f in ("nfv.shared.4c4g", "nfv.dpdk", "nfv.sriov")}
    assert vif == {"nfv.shared.4c4g": {"ovs"}, "nfv.dpdk": {"vhostuser"}, "nfv.sriov": {"hw_veb"}}
    print(f"\n13/13: {len(flavors)} catalog flavors deployed and checked: " +
          ", ".join(f"{f} on {s['host']}" for f, s in sorted(by_flavor.items())))


def server_of(deployed: dict[str, Any], flavor: str) -> dict[str, Any]:
    return next(s for s in deployed.values() if s["flavor"] == flavor)


def edit_cells(fn: Callable[[list[dict[str, Any]]], None]) -> Callable[[dict[str, Any]], None]:
    def edit(topo: dict[str, Any]) -> None:
        fn(cells(topo))
    return edit


def inventory_host(name: str) -> Any:
    from nfvcat.catalog import inventory

    hosts = inventory.load(str(ROOT / "tools/testbeds/nfvcat_testbeds/devcloud/inventory.yaml")).hosts
    return next(h for h in hosts if h.name == name)


@dataclass
class Case:
    """A wrong placement: injected by ``make`` (a context manager that restores it), caught when check fails
    ``expect`` (on ``subject``, if given) and not ``forbid``; ``intact`` tells the injection was still there."""
    label: str
    stack: str
    expect: str
    make: Callable[[], AbstractContextManager[Any]]
    subject: str | None = None
    forbid: str | None = None
    intact: Callable[[], bool] | None = None

    def caught(self, got: dict[str, list[str]]) -> bool:
        return (self.expect in got and self.forbid not in got and
                (self.subject is None or any(line.startswith(f"{self.subject}: ") for line in got[self.expect])))


def pinned(db: Recorded, server_id: str) -> bool:
    raw = db.rows("nova", "SELECT numa_topology FROM instance_extra WHERE instance_uuid=%s", server_id)
    return bool(raw and raw[0][0] and any(c.get("cpu_pinning_raw") for c in cells(json.loads(raw[0][0]))))


def test_check_fails_every_injected_wrong_placement(conn: Any, deployed: dict[str, Any], tmp_path: Path) -> None:
    db = Recorded()
    cases: list[Case] = []

    def case(label: str, stack: str, expect: str, subject: str | None = None, forbid: str | None = None,
             intact: Callable[[], bool] | None = None) -> Callable[[Callable[[], AbstractContextManager[Any]]], None]:
        def register(make: Callable[[], AbstractContextManager[Any]]) -> None:
            cases.append(Case(label, stack, expect, make, subject, forbid, intact))
        return register

    p1g = server_of(deployed, "nfv.pinned.1g")
    p2m = server_of(deployed, "nfv.pinned.2m")
    mixed = server_of(deployed, "nfv.mixed")
    rt = server_of(deployed, "nfv.rt.isolate")
    qat = server_of(deployed, "nfv.qat.required")
    sriov = server_of(deployed, "nfv.sriov")

    def pins(server: dict[str, Any]) -> dict[str, int]:
        return dict(cells(db.topology(server["id"]))[0]["cpu_pinning_raw"])

    def set_pins(server: dict[str, Any], new: dict[str, int]) -> AbstractContextManager[Any]:
        def edit(cs: list[dict[str, Any]]) -> None:
            cs[0]["cpu_pinning_raw"] = new
        return db.edited_topology(server["id"], edit_cells(edit))

    def vcpu_twice() -> AbstractContextManager[Any]:
        p = pins(p1g)
        first = sorted(p)[0]
        return set_pins(p1g, {**p, sorted(p)[1]: p[first]})
    case("two vCPUs on one pCPU", p1g["stack"], "pCPUs distinct")(vcpu_twice)

    def same_pcpus() -> AbstractContextManager[Any]:
        # another instance of the same host: its pins become p1g's (same node when there is one)
        mine = pins(p1g)
        other = next(s for s in deployed.values() if s["host"] == p1g["host"] and s is not p1g and
                     s["flavor"] in ("nfv.pinned.2m", "nfv.pinned.require", "nfv.dpdk", "nfv.sriov",
                                     "nfv.qat.preferred", "nfv.pinned.isolate"))
        theirs = pins(other)
        new = dict(zip(sorted(theirs), [mine[k] for k in sorted(mine)], strict=False))
        node = cells(db.topology(p1g["id"]))[0]["id"]

        def edit(cs: list[dict[str, Any]]) -> None:
            cs[0]["cpu_pinning_raw"] = new
            cs[0]["id"] = node
        return db.edited_topology(other["id"], edit_cells(edit))
    case("two instances on the same pCPUs", p1g["stack"], "pCPUs not shared with other instances")(same_pcpus)

    host_m = inventory_host(mixed["host"])

    def mixed_on_shared() -> AbstractContextManager[Any]:
        p = pins(mixed)
        node = cells(db.topology(mixed["id"]))[0]["id"]
        shared = sorted(next(c for c in host_m.cells if c.id == node).shared)
        return set_pins(mixed, {k: shared[i % len(shared)] for i, k in enumerate(sorted(p))})
    case("mixed: pins on shared pCPUs", mixed["stack"], "CPU pinning")(mixed_on_shared)

    def mask_ignored() -> AbstractContextManager[Any]:
        p = pins(mixed)  # vCPUs 2-5 pinned by the mask ^0-1: pin vCPU 0 instead of the last one
        last = sorted(p, key=int)[-1]
        new = {k: v for k, v in p.items() if k != last}
        new["0"] = p[last]

        def edit(cs: list[dict[str, Any]]) -> None:
            cs[0]["cpu_pinning_raw"] = new
            cs[0]["pcpuset"] = sorted(int(k) for k in new)
            cs[0]["cpuset"] = sorted(set(range(6)) - {int(k) for k in new})
        return db.edited_topology(mixed["id"], edit_cells(edit))
    case("mixed: hw:cpu_dedicated_mask ignored", mixed["stack"], "mixed dedicated mask")(mask_ignored)

    def mixed_other_node() -> AbstractContextManager[Any]:
        def edit(cs: list[dict[str, Any]]) -> None:
            cs[0]["id"] = 1 - cs[0]["id"]
        return db.edited_topology(mixed["id"], edit_cells(edit))
    case("mixed: cell on the other node", mixed["stack"], "CPU pinning")(mixed_other_node)

    host_p = inventory_host(p2m["host"])

    def outside_dedicated() -> AbstractContextManager[Any]:
        p = pins(p2m)
        node = cells(db.topology(p2m["id"]))[0]["id"]
        other_node = sorted(next(c for c in host_p.cells if c.id != node).dedicated)
        return set_pins(p2m, {k: other_node[-1 - i] for i, k in enumerate(sorted(p))})
    case("pins outside the node's dedicated set", p2m["stack"], "CPU pinning")(outside_dedicated)

    sriov_ports = sorted(conn.network.ports(device_id=sriov["id"]), key=lambda p: p.name)
    assert len(sriov_ports) == 2, [p.name for p in sriov_ports]

    def vf_differs() -> AbstractContextManager[Any]:
        port = sriov_ports[0]
        slot = port.binding_profile["pci_slot"]
        host = inventory_host(sriov["host"])
        dev = next(d for d in host.devices if slot in d.vf_addresses())
        given = {p.binding_profile["pci_slot"] for p in sriov_ports}
        other = next(a for a in dev.vf_addresses() if a not in given)  # same PF: only Nova's record differs

        def edit(profile: dict[str, Any]) -> None:
            profile["pci_slot"] = other
        return db.edited_binding_profile(port.id, edit)
    case("Neutron pci_slot differs from Nova's VF", sriov["stack"], "VF = Nova's allocation")(vf_differs)

    def emulator_unreserved() -> AbstractContextManager[Any]:
        def edit(cs: list[dict[str, Any]]) -> None:
            cs[0]["cpuset_reserved"] = []
        return db.edited_topology(rt["id"], edit_cells(edit))
    case("emulator threads isolate without a reserved pCPU", rt["stack"], "emulator threads")(emulator_unreserved)

    def emulator_overlap() -> AbstractContextManager[Any]:
        p = pins(rt)

        def edit(cs: list[dict[str, Any]]) -> None:
            cs[0]["cpuset_reserved"] = [p[sorted(p)[0]]]
        return db.edited_topology(rt["id"], edit_cells(edit))
    case("emulator threads overlapping a vCPU", rt["stack"], "emulator threads")(emulator_overlap)

    def qat_placement_moved() -> AbstractContextManager[Any]:
        allocs = conn.placement.get(f"/allocations/{qat['id']}").json()["allocations"]
        pci_rp = next(rp for rp, a in allocs.items() if any(rc.startswith("CUSTOM_PCI_") for rc in a["resources"]))
        rps = conn.placement.get("/resource_providers").json()["resource_providers"]
        name = next(r["name"] for r in rps if r["uuid"] == pci_rp)
        host = inventory_host(qat["host"])
        qats = [d for d in host.devices if d.kind == "qat"]
        mine = next(d for d in qats if name.lower().endswith(d.address))
        other = next(d for d in qats if d.numa_node != mine.numa_node)
        target = next(r["uuid"] for r in rps if r["name"] == f"{qat['host']}_{other.address.upper()}")
        return db.moved_allocation(qat["id"], pci_rp, target)
    # the guest's device (Nova's record) is still on the guest's node: a disagreement, not an affinity failure
    case("QAT: only Placement's allocation on the other PF", qat["stack"], "Placement and Nova's PCI records",
         forbid="PCI NUMA affinity")(qat_placement_moved)

    def qat_vf() -> dict[str, Any]:
        vfs = [d for d in db.allocated_pci(qat["id"]) if d["parent_addr"]]
        assert len(vfs) == 1, vfs
        return vfs[0]

    def qat_nova_moved() -> AbstractContextManager[Any]:
        mine = qat_vf()
        host = inventory_host(qat["host"])
        other_pf = next(d for d in host.devices if d.kind == "qat" and d.address != mine["parent_addr"])
        free = next(d for d in (db.pci_device(a, qat["host"]) for a in other_pf.vf_addresses())
                    if d["status"] == "available")
        return db.edited_pci_devices({
            mine["id"]: {"status": "available", "instance_uuid": None, "request_id": None},
            free["id"]: {"status": "allocated", "instance_uuid": qat["id"], "request_id": mine["request_id"]}})
    case("QAT: only Nova's record on the other PF", qat["stack"], "Placement and Nova's PCI records")(qat_nova_moved)

    injected_node: list[int] = []

    def qat_node() -> AbstractContextManager[Any]:
        mine = qat_vf()
        injected_node[:] = [1 - int(mine["numa_node"])]
        return db.edited_pci_devices({mine["id"]: {"numa_node": injected_node[0]}})

    def qat_node_intact() -> bool:  # nova-compute's periodic update (60 s) writes the driver's node back
        return bool(qat_vf()["numa_node"] == injected_node[0])
    case("QAT VF's node in Nova's record on the other node", qat["stack"], "PCI NUMA affinity",
         intact=qat_node_intact)(qat_node)

    def ports_swapped() -> AbstractContextManager[Any]:
        left, right = sriov_ports
        slots = (left.binding_profile["pci_slot"], right.binding_profile["pci_slot"])
        stack = ExitStack()
        for port, slot in ((left, slots[1]), (right, slots[0])):
            def edit(profile: dict[str, Any], slot: str = slot) -> None:
                profile["pci_slot"] = slot
            stack.enter_context(db.edited_binding_profile(port.id, edit))
        return stack
    case("SR-IOV ports' VFs swapped (each the other port's)", sriov["stack"], "VF = Nova's allocation")(ports_swapped)

    nosmt_pinned = sorted((s for s in deployed.values() if s["host"] == rt["host"] and s is not rt and
                           pinned(db, s["id"])), key=lambda s: s["flavor"])
    neighbour = nosmt_pinned[0]

    def on_emulator_pcpu() -> AbstractContextManager[Any]:
        reserved = cells(db.topology(rt["id"]))[0]["cpuset_reserved"]
        node = cells(db.topology(rt["id"]))[0]["id"]
        p = pins(neighbour)

        def edit(cs: list[dict[str, Any]]) -> None:
            cs[0]["cpu_pinning_raw"] = {**p, sorted(p)[0]: reserved[0]}
            cs[0]["id"] = node
        return db.edited_topology(neighbour["id"], edit_cells(edit))
    case("vCPUs on another instance's emulator pCPU", neighbour["stack"], "pCPUs not shared with other instances",
         subject=next(n for n, s in deployed.items() if s is neighbour))(on_emulator_pcpu)

    require = server_of(deployed, "nfv.pinned.require")

    def no_siblings() -> AbstractContextManager[Any]:
        def edit(siblings: list[list[list[int]]]) -> None:
            for i, cell in enumerate(siblings):
                siblings[i] = [[c] for core in cell for c in core]
        return db.edited_siblings(require["host"], edit)

    def siblings_intact() -> bool:
        return all(len(core) == 1 for c in cells(db.host_topology(require["host"])) for core in c["siblings"])
    case("thread policy require on cores without siblings", require["stack"], "CPU thread policy",
         intact=siblings_intact)(no_siblings)

    isolate = server_of(deployed, "nfv.pinned.isolate")
    busy = next(s for s in nosmt_pinned if s is not isolate)

    def busy_sibling() -> AbstractContextManager[Any]:
        mine, theirs = sorted(pins(isolate).values())[0], sorted(pins(busy).values())[0]

        def edit(siblings: list[list[list[int]]]) -> None:
            for i, cell in enumerate(siblings):
                siblings[i] = [core for core in cell if not {mine, theirs} & set(core)]
                if any(mine in core for core in cell):
                    siblings[i].append([mine, theirs])
        return db.edited_siblings(isolate["host"], edit)

    def pair_intact() -> bool:
        return any(len(core) == 2 for c in cells(db.host_topology(isolate["host"])) for core in c["siblings"])
    case("thread policy isolate next to a busy sibling", isolate["stack"], "CPU thread policy",
         intact=pair_intact)(busy_sibling)

    results = []
    for stack in ("truth-a", "truth-b"):  # clean before; each case is checked clean again after its restore
        assert check(stack)["ok"], f"{stack}: not clean before the injections"
    try:
        for c in cases:
            for _ in range(3):  # again if nova-compute undid the injection while check ran
                with c.make():
                    got = failed(check_in_process(conn, c.stack))
                    intact = c.intact is None or c.intact()
                if intact:
                    break
            else:
                raise AssertionError(f"{c.label}: nova-compute undid the injection during each of 3 checks")
            after = check_in_process(conn, c.stack)
            results.append((c.label, c.expect, got, after["ok"], c.caught(got)))
            print(f"  {c.label:50} -> {'FAIL ' + c.expect if c.caught(got) else 'MISSED'}"
                  f"{'' if set(got) <= {c.expect} else ' (also ' + ', '.join(sorted(set(got) - {c.expect})) + ')'}"
                  f"; after restore: {'pass' if after['ok'] else 'NOT CLEAN'}")
    finally:  # whatever a periodic update saw during the injections leaves nova-compute's memory
        t = time.monotonic()
        rebuild_trackers(conn)
        print(f"  nova-compute restarted on every host after the restores ({time.monotonic() - t:.0f} s)")

    # the inventory's CPU sets swapped (dedicated <-> shared): every pin is outside the node's dedicated set
    inv = yaml.safe_load((ROOT / "tools/testbeds/nfvcat_testbeds/devcloud/inventory.yaml").read_text())
    for host in inv["hosts"]:
        if "numa_cells" not in host:
            continue  # the real host (hypervisor: libvirt): its CPU sets are the machine's
        host["numa_cells"] = [{**c, "cpu_dedicated_set": c["cpu_shared_set"], "cpu_shared_set": c["cpu_dedicated_set"]}
                              for c in host["numa_cells"]]
    swapped = tmp_path / "swapped.yaml"
    swapped.write_text(yaml.safe_dump(inv))
    got = failed(check(p1g["stack"], "--inventory", str(swapped)))
    results.append(("inventory CPU sets swapped", "CPU pinning", got, True, "CPU pinning" in got))
    caught = sum(right for *_, right in results)
    clean = sum(ok for *_, ok, _ in results)
    print(f"truth test: {len(results)} wrong placements injected, check failed {caught} with the right check, "
          f"{len(results) - caught} false pass(es); {clean}/{len(results)} clean again after restore")
    assert caught == len(results), [(label, expect, got) for label, expect, got, _, right in results if not right]
    assert clean == len(results)


def test_check_without_host_access_says_so(deployed: dict[str, Any]) -> None:
    res = nfvcat("check", "truth-a", "--format", "json")
    report = json.loads(res.stdout)
    assert res.returncode == 2
    emulator = [v for v in report["verdicts"] if v["check"] == "emulator threads"]
    assert emulator and {v["status"] for v in emulator} == {"needs host access"}

