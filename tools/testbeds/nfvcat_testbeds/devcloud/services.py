"""The dev cloud's services: how each starts and how to tell it is up."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from nfvcat_testbeds.devcloud import computes as computes_mod
from nfvcat_testbeds.devcloud import hostnet
from nfvcat_testbeds.devcloud import metadata as metadata_mod
from nfvcat_testbeds.devcloud import realhost as realhost_mod
from nfvcat_testbeds.devcloud.state import HOST, PORTS, State

Check = Callable[[], bool]
# Open vSwitch's daemons log to --log-file; their console (stderr) goes to the same file (procs.start): without this,
# every line is there twice
QUIET_CONSOLE = ["-vconsole:off"]


@dataclass
class Service:
    name: str
    argv: list[str]
    ready: Check
    env: dict[str, str] = field(default_factory=dict)
    grace: float = 10.0  # seconds between SIGTERM and SIGKILL on stop
    log: str | None = None  # the log file to show on failure (default log/<name>.log)


def tcp_open(port: int) -> Check:
    def check() -> bool:
        try:
            with socket.create_connection((HOST, port), timeout=1):
                return True
        except OSError:
            return False
    return check


def http_ok(port: int, path: str = "/") -> Check:
    def check() -> bool:
        try:
            with urllib.request.urlopen(f"http://{HOST}:{port}{path}", timeout=3):
                return True
        except urllib.error.HTTPError as exc:
            return exc.code < 500
        except (OSError, ValueError):
            return False
    return check


def command_ok(argv: list[str], env: dict[str, str] | None = None) -> Check:
    def check() -> bool:
        try:
            return subprocess.run(argv, capture_output=True, timeout=10, env={**os.environ, **(env or {})},
                                  check=False).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False
    return check


def always() -> bool:
    return True


def ovs_env(state: State) -> dict[str, str]:
    d = state.run / "ovs"
    return {"OVS_RUNDIR": str(d), "OVS_DBDIR": str(state.lib / "ovs"), "OVS_LOGDIR": str(state.log),
            "OVS_SYSCONFDIR": str(state.etc / "ovs"), "OVS_PKGDATADIR": "/usr/share/openvswitch"}


def rabbit_env(state: State) -> dict[str, str]:
    base = state.lib / "rabbitmq"
    return {
        "HOME": str(base), "RABBITMQ_NODENAME": "rabbit@localhost", "RABBITMQ_NODE_IP_ADDRESS": HOST,
        "RABBITMQ_NODE_PORT": str(PORTS["rabbitmq"]), "RABBITMQ_DIST_PORT": str(PORTS["rabbitmq_dist"]),
        "ERL_EPMD_ADDRESS": HOST, "ERL_EPMD_PORT": str(PORTS["epmd"]),
        "RABBITMQ_MNESIA_BASE": str(base / "mnesia"), "RABBITMQ_LOG_BASE": str(state.log / "rabbitmq"),
        "RABBITMQ_CONF_ENV_FILE": str(state.etc / "rabbitmq" / "rabbitmq-env.conf"),
        "RABBITMQ_CONFIG_FILE": str(state.etc / "rabbitmq" / "rabbitmq"),
        "RABBITMQ_ENABLED_PLUGINS_FILE": str(state.etc / "rabbitmq" / "enabled_plugins"),
        "RABBITMQ_PID_FILE": str(state.run / "rabbitmq-server.pid"), "RABBITMQ_LOGS": "-",
        "RABBITMQ_FEATURE_FLAGS_FILE": str(base / "feature_flags"),
    }


def mysql_socket(state: State) -> Path:
    return state.run / "mysqld.sock"


def infra(state: State, dpdk: bool) -> list[Service]:
    ovs = state.run / "ovs"
    vswitchd = ("/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk" if dpdk else
                "/usr/lib/openvswitch-switch/ovs-vswitchd")
    if not Path(vswitchd).exists():
        vswitchd = shutil.which("ovs-vswitchd") or "ovs-vswitchd"
    return [
        Service("mariadb", [
            "/usr/sbin/mariadbd", "--no-defaults", f"--datadir={state.lib / 'mysql'}",
            f"--socket={mysql_socket(state)}",
            f"--port={PORTS['mariadb']}", f"--bind-address={HOST}", "--user=root", "--skip-name-resolve",
            f"--pid-file={state.run / 'mariadbd.pidfile'}", f"--log-error={state.log / 'mariadb.log'}",
            "--innodb-buffer-pool-size=256M", "--max-connections=1000", "--innodb-flush-log-at-trx-commit=2",
            "--skip-log-bin", "--character-set-server=utf8mb4", "--collation-server=utf8mb4_general_ci"],
            command_ok(["mariadb", "--no-defaults", f"--socket={mysql_socket(state)}", "-uroot", "-e",
                        "select 1"]),
            grace=20),
        Service("epmd", ["epmd", "-address", HOST, "-port", str(PORTS["epmd"])], tcp_open(PORTS["epmd"])),
        Service("rabbitmq", ["/usr/lib/rabbitmq/bin/rabbitmq-server"], tcp_open(PORTS["rabbitmq"]),
                env=rabbit_env(state), grace=15),
        Service("ovsdb-server", [
            "ovsdb-server", str(state.lib / "ovs" / "conf.db"), f"--remote=punix:{ovs / 'db.sock'}",
            "--remote=db:Open_vSwitch,Open_vSwitch,manager_options", f"--pidfile={ovs / 'ovsdb-server.pid'}",
            f"--unixctl={ovs / 'ovsdb-server.ctl'}", f"--log-file={state.log / 'ovsdb-server.log'}", *QUIET_CONSOLE],
            lambda: (ovs / "db.sock").exists(), env=ovs_env(state)),
        Service("ovs-vswitchd", [
            vswitchd, f"unix:{ovs / 'db.sock'}", f"--pidfile={ovs / 'ovs-vswitchd.pid'}",
            f"--unixctl={ovs / 'ovs-vswitchd.ctl'}", f"--log-file={state.log / 'ovs-vswitchd.log'}", *QUIET_CONSOLE],
            command_ok(["ovs-appctl", "-t", str(ovs / "ovs-vswitchd.ctl"), "version"]), env=ovs_env(state)),
    ]


def gunicorn(state: State, name: str, port: int, module: str, argv: list[str] | None = None,
             env: dict[str, str] | None = None, path: str = "/") -> Service:
    return Service(name, [
        str(state.venv_bin / "gunicorn"), "--bind", f"{HOST}:{port}", "--workers", "1", "--worker-class", "gthread",
        "--threads", "8", "--keep-alive", "0", "--timeout", "300", "--graceful-timeout", "5", "--no-control-socket",
        "--name", name, "nfvcat_testbeds.devcloud.wsgiapp:application"],
        http_ok(port, path),
        env={"NFVCAT_WSGI_MODULE": module, "NFVCAT_WSGI_ARGV": json.dumps(argv or [name]), **(env or {})})


def keystone(state: State) -> Service:
    return gunicorn(state, "keystone", PORTS["keystone"], "keystone.wsgi.api",
                    env={"OS_KEYSTONE_CONFIG_DIR": str(state.etc / "keystone")}, path="/v3")


def apis(state: State) -> list[Service]:
    nconf = ["--config-file", str(state.etc / "neutron/neutron.conf"), "--config-file",
             str(state.etc / "neutron/ml2_conf.ini")]
    nova = ["--config-file", str(state.etc / "nova/nova.conf")]
    heat = ["--config-file", str(state.etc / "heat/heat.conf")]
    return [
        gunicorn(state, "glance", PORTS["glance"], "glance.wsgi.api",
                 env={"OS_GLANCE_CONFIG_DIR": str(state.etc / "glance")}),
        gunicorn(state, "placement", PORTS["placement"], "placement.wsgi.api",
                 env={"OS_PLACEMENT_CONFIG_DIR": str(state.etc / "placement")}),
        gunicorn(state, "nova-api", PORTS["nova"], "nova.wsgi.osapi_compute",
                 env={"OS_NOVA_CONFIG_DIR": str(state.etc / "nova"),
                      "OS_NOVA_CONFIG_FILES": "api-paste.ini;nova.conf"}),
        gunicorn(state, "nova-api-metadata", PORTS["nova_metadata"], "nova.wsgi.metadata",
                 env={"OS_NOVA_CONFIG_DIR": str(state.etc / "nova"),
                      "OS_NOVA_CONFIG_FILES": "api-paste.ini;nova.conf"}),
        gunicorn(state, "neutron-api", PORTS["neutron"], "neutron.wsgi.api", argv=["neutron-api", *nconf]),
        oslo(state, "neutron-rpc-server", nconf),
        oslo(state, "neutron-periodic-workers", nconf),
        gunicorn(state, "heat-api", PORTS["heat"], "heat.wsgi.api", argv=["heat-api", *heat]),
        oslo(state, "heat-engine", heat),
        oslo(state, "nova-conductor", nova),
        oslo(state, "nova-scheduler", nova),
    ]


def oslo(state: State, name: str, conf: list[str], env: dict[str, str] | None = None) -> Service:
    """An oslo.service console script, logging to log/<name>.log (stopped by SIGKILL after a short grace: the
    agents and some engines ignore SIGTERM)."""
    return Service(name, [str(state.venv_bin / name), *conf, "--log-file", str(state.log / f"{name}.log")], always,
                   env=env or {}, grace=5)


def switch(state: State, c: computes_mod.Compute) -> list[Service]:
    """A compute's own plain userspace Open vSwitch (ovsdb-server, and ovs-vswitchd in the host's namespace), for
    hosts not on the main switch: its agent reports no vhost-user interface type, so normal ports bind ``ovs``."""
    if c.main_switch:
        return []
    run = c.ovs_run(state)
    env = computes_mod.ovs_env(state, c)
    vswitchd = "/usr/lib/openvswitch-switch/ovs-vswitchd"
    if not Path(vswitchd).exists():
        vswitchd = shutil.which("ovs-vswitchd") or "ovs-vswitchd"
    # in the host's namespace, on real netdevs: its tap devices (ovs-netdev, its bridges, its VIFs) are its own, and
    # so are the routes its tunnels take (hostnet)
    datapath = [*c.in_netns(), vswitchd]
    return [
        Service(c.service("ovsdb-server"), [
            "ovsdb-server", str(c.ovs_db(state)), f"--remote=punix:{run / 'db.sock'}",
            "--remote=db:Open_vSwitch,Open_vSwitch,manager_options", f"--pidfile={run / 'ovsdb-server.pid'}",
            f"--unixctl={run / 'ovsdb-server.ctl'}", f"--log-file={state.log / c.service('ovsdb-server')}.log",
            *QUIET_CONSOLE],
            lambda: (run / "db.sock").exists(), env=env),
        Service(c.service("ovs-vswitchd"), [
            *datapath, f"unix:{run / 'db.sock'}", f"--pidfile={run / 'ovs-vswitchd.pid'}",
            f"--unixctl={run / 'ovs-vswitchd.ctl'}", f"--log-file={state.log / c.service('ovs-vswitchd')}.log",
            *QUIET_CONSOLE],
            command_ok(["ovs-appctl", "-t", str(run / "ovs-vswitchd.ctl"), "version"]), env=env),
    ]


def compute(state: State, c: computes_mod.Compute, inventory: Path) -> list[Service]:
    """The agents and the nova-compute of one host."""
    n = state.etc / "neutron"
    confs = computes_mod.agent_confs(state, c)
    env = computes_mod.ovs_env(state, c)
    nova_conf = computes_mod.nova_conf(state, c)

    def proc(binary: str, conf: list[Path], extra: dict[str, str] | None = None, prefix: list[str] | None = None
             ) -> Service:
        name = c.service(binary)
        args = [a for p in conf for a in ("--config-file", str(p))]
        return Service(name, [*(prefix or []), str(state.venv_bin / binary), *args, "--log-file",
                              str(state.log / f"{name}.log")], always, env=extra or {}, grace=5)

    return [
        *amqp_relay(state, c),
        # beside its switch: its local_ip is an address of the host's namespace (hostnet)
        proc("neutron-openvswitch-agent", [n / "neutron.conf", confs["ovs"]], env,
             hostnet.nsenter(c.name) if c.netns else None),
        *metadata_path(state, c),
        proc("neutron-sriov-nic-agent", [n / "neutron.conf", confs["sriov"]]),
        proc("nova-compute", [state.etc / "nova/nova.conf", nova_conf],
             {"NFVCAT_DEVCLOUD_INVENTORY": str(inventory), "NFVCAT_DEVCLOUD_CONFIG_DRIVE": "1",
              "NFVCAT_DEVCLOUD_NETNS": c.netns or "", **env}),
    ]


def amqp_relay(state: State, c: computes_mod.Compute) -> list[Service]:
    """RabbitMQ on 127.0.0.1:5672 of a namespaced host (for its agents): a socat of the host's namespace to a Unix
    socket, a socat of the machine's from there to RabbitMQ (hostnet)."""
    if not c.netns:
        return []
    sock = hostnet.relay_socket(state.run, c.name)
    amqp = f"{HOST}:{PORTS['rabbitmq']}"
    netns = hostnet.nsenter(c.name)
    return [
        Service(c.service("amqp-relay"), ["socat", f"UNIX-LISTEN:{sock},fork,unlink-early,mode=600", f"TCP:{amqp}"],
                sock.exists),
        Service(c.service("amqp-relay-netns"), [*netns, "socat", f"TCP-LISTEN:{PORTS['rabbitmq']},bind={HOST},fork,"
                                                "reuseaddr", f"UNIX-CONNECT:{sock}"],
                command_ok([*netns, "socat", "-u", "OPEN:/dev/null", f"TCP:{amqp}"])),
    ]


def hypervisor(state: State, c: computes_mod.Compute) -> list[Service]:
    """A real host's libvirtd (in its namespace; started before its nova-compute, which needs it at start)."""
    if not c.real:
        return []
    lv = realhost_mod.Libvirt(state, c.name)
    return [Service(c.service("libvirtd"), lv.argv(), command_ok(["virsh", "-c", lv.uri, "version"]),
                    env=computes_mod.ovs_env(state, c), grace=10)]


def metadata_path(state: State, c: computes_mod.Compute) -> list[Service]:
    """A real host's DHCP agent (in its namespace, reaching RabbitMQ through the host's relay) and metadata agent
    (:mod:`nfvcat_testbeds.devcloud.metadata`)."""
    if not c.real:
        return []
    n = state.etc / "neutron"
    dhcp = metadata_mod.dhcp_agent_conf(state, c)
    meta = metadata_mod.metadata_agent_conf(state, c)

    def agent(binary: str, conf: Path, prefix: list[str]) -> Service:
        name = c.service(binary)
        return Service(name, [*prefix, str(state.venv_bin / binary), "--config-file", str(n / "neutron.conf"),
                              "--config-file", str(conf), "--log-file", str(state.log / f"{name}.log")],
                       always, env=computes_mod.ovs_env(state, c), grace=5)

    return [
        agent("neutron-dhcp-agent", dhcp, hostnet.nsenter(c.name)),
        agent("neutron-metadata-agent", meta, []),
    ]
