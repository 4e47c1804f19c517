"""One-time (and cheap every-time) set-up steps: data directories, databases, OVS bridges, the Keystone catalog,
clouds.yaml, and the wait for the compute host to be usable."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from nfvcat.core.errors import EXIT_ENGINE, UserError
from nfvcat.core.waiting import TimedOut, until
from nfvcat_testbeds.devcloud import configs, hostnet, services
from nfvcat_testbeds.devcloud.computes import Compute
from nfvcat_testbeds.devcloud.state import CLOUD_NAME, DATABASES, HOST, PORTS, REGION, SERVICE_USERS, State, url

CATALOG = {  # service name -> (type, port, path)
    "glance": ("image", "glance", ""),
    "placement": ("placement", "placement", ""),
    "nova": ("compute", "nova", "/v2.1"),
    "neutron": ("network", "neutron", ""),
    "heat": ("orchestration", "heat", "/v1/%(tenant_id)s"),
    "tacker": ("nfv-orchestration", "tacker", "/"),
}


def _check(argv: list[str], what: str, env: dict[str, str] | None = None) -> str:
    res = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **(env or {})}, check=False,
                         timeout=300)
    if res.returncode != 0:
        raise UserError(f"devcloud: {what} failed: {(res.stderr or res.stdout).strip()[-1500:]}", EXIT_ENGINE)
    return res.stdout


def prepare_infra(state: State) -> None:
    mysql = state.lib / "mysql"
    if not (mysql / "mysql").is_dir():
        mysql.mkdir(parents=True, exist_ok=True)
        _check(["mariadb-install-db", "--no-defaults", f"--datadir={mysql}", "--user=root",
                "--auth-root-authentication-method=normal", "--skip-test-db"], "mariadb-install-db")
    rabbit_etc = state.etc / "rabbitmq"
    rabbit_etc.mkdir(parents=True, exist_ok=True)
    (rabbit_etc / "rabbitmq-env.conf").write_text("")
    (rabbit_etc / "enabled_plugins").write_text("[].\n")
    (rabbit_etc / "rabbitmq.conf").write_text(
        f"listeners.tcp.default = {HOST}:{PORTS['rabbitmq']}\nloopback_users.guest = true\n"
        "log.console = true\nlog.file = false\n")
    (state.lib / "rabbitmq").mkdir(parents=True, exist_ok=True)
    (state.log / "rabbitmq").mkdir(parents=True, exist_ok=True)
    ovs_db = state.lib / "ovs" / "conf.db"
    (state.run / "ovs").mkdir(parents=True, exist_ok=True)
    (state.run / "vhu").mkdir(parents=True, exist_ok=True)
    (state.etc / "ovs").mkdir(parents=True, exist_ok=True)
    if not ovs_db.exists():
        ovs_db.parent.mkdir(parents=True, exist_ok=True)
        _check(["ovsdb-tool", "create", str(ovs_db), "/usr/share/openvswitch/vswitch.ovsschema"], "ovsdb-tool create")
    for sub in ("glance/images", "glance/staging", "glance/tasks", "glance/lock", "nova/instances", "nova/lock",
                "neutron/lock", "heat/lock", "keystone/fernet-keys", "keystone/credential-keys"):
        (state.lib / sub).mkdir(parents=True, exist_ok=True)


def databases(state: State) -> None:
    pw = state.secrets()["db"]
    sql = "".join(f"CREATE DATABASE IF NOT EXISTS {d} CHARACTER SET utf8mb4;" for d in DATABASES)
    sql += (f"CREATE USER IF NOT EXISTS 'nfvcat'@'127.0.0.1' IDENTIFIED BY '{pw}';"
            "GRANT ALL PRIVILEGES ON *.* TO 'nfvcat'@'127.0.0.1'; FLUSH PRIVILEGES;")
    _check(["mariadb", "--no-defaults", f"--socket={services.mysql_socket(state)}", "-uroot", "-e", sql],
           "creating databases")


def vsctl(state: State, *args: str, run: Path | None = None) -> str:
    run = run or state.run / "ovs"
    return _check(["ovs-vsctl", f"--db=unix:{run / 'db.sock'}", "--timeout=30", *args],
                  f"ovs-vsctl {' '.join(args[:3])}", services.ovs_env(state))


PMD_MAX_SLEEP_US = 10000  # OVS 3.1's most (pmd-maxsleep; pmd-sleep-max from 3.2)


def ovs_dpdk(state: State) -> None:
    """DPDK settings of the main switch. Its PMD thread polls the vhost-user ports (ports bound vhostuser on
    the OVS-DPDK host) at 100 % of a core while one exists: measured, 689 s of CPU in a 45-min integration run
    on 2 cores. Load-based sleeping lets it sleep up to PMD_MAX_SLEEP_US when idle (a tap port starts no PMD)."""
    from nfvcat_testbeds.devcloud import host

    vsctl(state, "--no-wait", "set", "Open_vSwitch", ".", "other_config:dpdk-init=true",
          f'other_config:dpdk-extra="--no-pci --huge-dir {host.hugepage_dir(state)}"',
          "other_config:dpdk-socket-mem=256", f"other_config:pmd-maxsleep={PMD_MAX_SLEEP_US}",
          f"other_config:pmd-sleep-max={PMD_MAX_SLEEP_US}")


def bridges(state: State, computes: list[Compute]) -> None:
    """Each compute's physnet bridges, on its own switch (netdev datapath), each with its physnet's link as port,
    and its br-phy: the underlay link as port, the host's tunnel endpoint as address (hostnet)."""
    for c in computes:
        for index, bridge in enumerate(c.bridges().values()):  # in ovs_physnets' order, as hostnet.ensure_host
            vsctl(state, "--may-exist", "add-br", bridge, "--", "set", "bridge", bridge, "datapath_type=netdev",
                  "--", "--may-exist", "add-port", bridge, hostnet.link_names(c.position, index)[1],
                  run=c.ovs_run(state))
        link = hostnet.link_names(c.position)[1]
        vsctl(state, "--may-exist", "add-br", c.phy_bridge, "--", "set", "bridge", c.phy_bridge,
              "datapath_type=netdev", "--", "--may-exist", "add-port", c.phy_bridge, link, run=c.ovs_run(state))
        hostnet.attach(c.netns, c.position, c.phy_bridge)


def ovs_databases(computes: list[Compute], state: State) -> None:
    for c in computes:
        db = c.ovs_db(state)
        c.ovs_run(state).mkdir(parents=True, exist_ok=True)
        if not db.exists():
            db.parent.mkdir(parents=True, exist_ok=True)
            _check(["ovsdb-tool", "create", str(db), "/usr/share/openvswitch/vswitch.ovsschema"], "ovsdb-tool create")


def db_syncs(state: State) -> dict[str, list[tuple[list[str], str]]]:
    b = state.venv_bin
    e = state.etc
    nova = ["--config-file", str(e / "nova/nova.conf")]
    neutron = ["--config-file", str(e / "neutron/neutron.conf"), "--config-file", str(e / "neutron/ml2_conf.ini")]
    return {
        "keystone": [([str(b / "keystone-manage"), "--config-file", str(e / "keystone/keystone.conf"), *cmd],
                      f"keystone-manage {cmd[0]}") for cmd in (
            ["db_sync"], ["fernet_setup", "--keystone-user", "root", "--keystone-group", "root"],
            ["credential_setup", "--keystone-user", "root", "--keystone-group", "root"])],
        "glance": [([str(b / "glance-manage"), "--config-file", str(e / "glance/glance-api.conf"), "db_sync"],
                    "glance-manage db_sync")],
        "placement": [([str(b / "placement-manage"), "--config-file", str(e / "placement/placement.conf"), "db",
                        "sync"], "placement-manage db sync")],
        "nova": [
            ([str(b / "nova-manage"), *nova, "api_db", "sync"], "nova-manage api_db sync"),
            ([str(b / "nova-manage"), *nova, "cell_v2", "map_cell0", "--database_connection",
              configs.db(state, "nova_cell0")], "nova-manage cell_v2 map_cell0"),
            (["sh", "-c", f"{b / 'nova-manage'} --config-file {e / 'nova/nova.conf'} cell_v2 list_cells | grep -q cell1"
              f" || {b / 'nova-manage'} --config-file {e / 'nova/nova.conf'} cell_v2 create_cell --name cell1"],
             "nova-manage cell_v2 create_cell"),
            ([str(b / "nova-manage"), *nova, "db", "sync"], "nova-manage db sync"),
        ],
        # the key names the marker: a state directory synced before networking-sfc gets its tables on the next up
        "neutron+sfc": [
            ([str(b / "neutron-db-manage"), *neutron, "upgrade", "heads"], "neutron-db-manage upgrade heads"),
            ([str(b / "neutron-db-manage"), *neutron, "--subproject", "networking-sfc", "upgrade", "head"],
             "neutron-db-manage --subproject networking-sfc upgrade head")],
        "heat": [([str(b / "heat-manage"), "--config-file", str(e / "heat/heat.conf"), "db_sync"],
                  "heat-manage db_sync")],
    }


def admin_auth(state: State) -> dict[str, Any]:
    return {"auth_url": url("keystone"), "username": "admin", "password": state.secrets()["admin"],
            "project_name": "admin", "user_domain_name": "Default", "project_domain_name": "Default"}


def identity(state: State) -> None:
    """keystone-manage bootstrap (once), then catalog()."""
    s = state.secrets()
    _check([str(state.venv_bin / "keystone-manage"), "--config-file", str(state.etc / "keystone/keystone.conf"),
            "bootstrap", "--bootstrap-password", s["admin"], "--bootstrap-admin-url", url("keystone"),
            "--bootstrap-internal-url", url("keystone"), "--bootstrap-public-url", url("keystone"),
            "--bootstrap-region-id", REGION], "keystone-manage bootstrap")


def catalog(state: State) -> None:
    """The service project, service users with admin+service roles, services and endpoints (find or create)."""
    import openstack

    s = state.secrets()
    conn = openstack.connect(auth=admin_auth(state), region_name=REGION, identity_api_version="3")
    idn: Any = conn.identity
    project = idn.find_project("service") or idn.create_project(name="service", domain_id="default")
    roles = {r.name: r for r in idn.roles()}
    for name in ("service", "member", "reader", "heat_stack_owner", "heat_stack_user"):
        if name not in roles:
            roles[name] = idn.create_role(name=name)
    admin = idn.find_user("admin")
    admin_project = idn.find_project("admin")
    idn.assign_project_role_to_user(admin_project, admin, roles["heat_stack_owner"])
    for user in SERVICE_USERS:
        u = idn.find_user(user) or idn.create_user(name=user, password=s[user], domain_id="default")
        for role in ("admin", "service"):
            idn.assign_project_role_to_user(project, u, roles[role])
    existing = {svc.type for svc in idn.services()}
    for name, (stype, port_key, path) in CATALOG.items():
        if stype in existing:
            continue
        svc = idn.create_service(name=name, type=stype)
        for iface in ("public", "internal", "admin"):
            idn.create_endpoint(service_id=svc.id, interface=iface, url=url(port_key, path), region_id=REGION)


def clouds_yaml_path() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "openstack" / "clouds.yaml"


def cloud_entry(state: State) -> dict[str, Any]:
    return {"auth": admin_auth(state), "region_name": REGION, "identity_api_version": 3, "interface": "public"}


def clouds_yaml(state: State) -> Path:
    """The ``nfvcat-dev`` entry, merged into the user's clouds.yaml (and a copy in the state directory)."""
    path = clouds_yaml_path()
    data: dict[str, Any] = {}
    if path.is_file():
        data = yaml.safe_load(path.read_text()) or {}
    data.setdefault("clouds", {})[CLOUD_NAME] = cloud_entry(state)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    os.chmod(path, 0o600)
    (state.root / "clouds.yaml").write_text(yaml.safe_dump({"clouds": {CLOUD_NAME: cloud_entry(state)}}))
    return path


def remove_clouds_yaml() -> None:
    path = clouds_yaml_path()
    if not path.is_file():
        return
    data = yaml.safe_load(path.read_text()) or {}
    if CLOUD_NAME in (data.get("clouds") or {}):
        del data["clouds"][CLOUD_NAME]
        path.write_text(yaml.safe_dump(data, sort_keys=False))


def wait_computes(state: State, computes: list[Compute], say: Callable[[str], None], timeout: float = 300) -> None:
    """Until every compute service is up, its node is in a cell with PCPU inventory and its two agents are
    alive."""
    import openstack

    from nfvcat_testbeds.devcloud import procs

    conn = openstack.connect(auth=admin_auth(state), region_name=REGION, identity_api_version="3")
    waiting = {(c.name, what): False for c in computes for what in
               ("nova-compute", "hypervisor", "PCPU inventory", "Open vSwitch agent", "NIC Switch agent")}
    names = {c.name for c in computes}

    def ready() -> bool:
        for c in computes:
            for binary in ("nova-compute", "neutron-openvswitch-agent", "neutron-sriov-nic-agent"):
                if not procs.pid_of(state, c.service(binary)):
                    log = state.log / f"{c.service(binary)}.log"
                    raise UserError(f"devcloud: {c.service(binary)} exited; last lines of {log}:\n{procs.tail(log)}",
                                    EXIT_ENGINE)
        try:
            for s in conn.compute.services():
                if s.binary == "nova-compute" and s.state == "up" and s.host in names:
                    waiting[(s.host, "nova-compute")] = True
            # a node by its service's host: a simulated node is named after its host, a libvirt one after the
            # machine (its resource provider too: found by the node's id)
            nodes = {}
            for h in conn.compute.hypervisors(details=True):
                host = (h.service_details or {}).get("host") or h.name
                if host in names:
                    waiting[(host, "hypervisor")] = True
                    nodes[h.id] = host
            for rp in conn.placement.resource_providers():
                host = nodes.get(rp.id)
                if host and not waiting[(host, "PCPU inventory")]:
                    waiting[(host, "PCPU inventory")] = any(
                        i.resource_class == "PCPU" for i in conn.placement.resource_provider_inventories(rp))
            for agent in conn.network.agents():
                if (agent.host, agent.agent_type) in waiting and agent.is_alive:
                    waiting[(agent.host, agent.agent_type)] = True
        except Exception as exc:  # an API still warming up
            say(f"waiting: {type(exc).__name__}")
        return all(waiting.values())

    try:
        until(ready, bool, timeout=timeout, what="devcloud compute hosts", first=1.0, most=5.0)
    except TimedOut:
        missing = sorted({f"{h}: {w}" for (h, w), ok in waiting.items() if not ok})
        first = next(c for c in computes if any(not ok for (h, _), ok in waiting.items() if h == c.name))
        log = state.log / f"{first.service('nova-compute')}.log"
        raise UserError(f"devcloud: not ready after {timeout:.0f} s: {', '.join(missing)}; last lines of {log}:\n"
                        f"{procs.tail(log)}", EXIT_ENGINE) from None
    # a host the scheduler can see: the cell mapping comes from discover_hosts (scheduler, every 5 s)
    _check([str(state.venv_bin / "nova-manage"), "--config-file", str(state.etc / "nova/nova.conf"),
            "cell_v2", "discover_hosts"], "nova-manage cell_v2 discover_hosts")
    say(f"{len(computes)} compute host(s), PCPU inventory and agents ready")


def aggregates(state: State, computes: list[Compute]) -> None:
    """One host aggregate per compute with the inventory's aggregate_metadata (AggregateInstanceExtraSpecsFilter
    matches the catalog flavors' aggregate_instance_extra_specs against it). Find or create; metadata set."""
    import openstack

    conn = openstack.connect(auth=admin_auth(state), region_name=REGION, identity_api_version="3")
    existing = {a.name: a for a in conn.compute.aggregates()}
    for c in computes:
        name = f"devcloud-{c.name}"
        agg = existing.get(name) or conn.compute.create_aggregate(name=name)
        if c.name not in (agg.hosts or []):
            agg = conn.compute.add_host_to_aggregate(agg, c.name)
        want = {str(k): str(v) for k, v in c.spec.aggregate_metadata.items()}
        if any((agg.metadata or {}).get(k) != v for k, v in want.items()):
            conn.compute.set_aggregate_metadata(agg, want)


def quotas(state: State) -> None:
    """No compute quota on the admin project: a dev cloud's limits are its hosts (Nova's defaults, 20 cores and
    10 instances, would stop the catalog's 13 flavors long before the hosts are full)."""
    import openstack

    conn = openstack.connect(auth=admin_auth(state), region_name=REGION, identity_api_version="3")
    conn.set_compute_quotas("admin", cores=-1, ram=-1, instances=-1)
