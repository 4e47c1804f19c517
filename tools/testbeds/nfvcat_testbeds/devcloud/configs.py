"""The services' configuration files, written under etc/ on every ``up`` (cheap, and always current)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nfvcat.catalog import inventory
from nfvcat_testbeds.devcloud.state import HOST, PORTS, REGION, State, url

Ini = dict[str, dict[str, Any]]
CONTROLLER = "devcloud-controller"
VNI_RANGES = "5000:5999"  # VXLAN ids of project networks (tests make admin networks with VNIs below)


def vlan_ranges() -> str:
    """ML2's network_vlan_ranges from the site profile's physnets."""
    from nfvcat import catalog
    from nfvcat.catalog import site

    profile = site.of_catalog(catalog.find_root())
    return ",".join(f"{name}:{r}" for name in sorted(profile.physnets) for r in profile.vlan_ranges(name))


def render(ini: Ini) -> str:
    out = []
    for section, values in ini.items():
        out.append(f"[{section}]")
        for key, value in values.items():
            if isinstance(value, bool):
                value = "true" if value else "false"
            elif isinstance(value, (list, tuple)):
                value = ",".join(str(v) for v in value)
            out.append(f"{key} = {value}")
        out.append("")
    return "\n".join(out)


def write(path: Path, ini: Ini) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(ini))
    return path


def db(state: State, name: str) -> str:
    return f"mysql+pymysql://nfvcat:{state.secrets()['db']}@{HOST}:{PORTS['mariadb']}/{name}?charset=utf8"


def transport() -> str:
    return f"rabbit://guest:guest@{HOST}:{PORTS['rabbitmq']}/"


def auth(state: State, user: str) -> dict[str, Any]:
    return {"auth_url": url("keystone"), "auth_type": "password", "project_domain_name": "Default",
            "user_domain_name": "Default", "project_name": "service", "username": user,
            "password": state.secrets()[user], "region_name": REGION}


def authtoken(state: State, user: str) -> dict[str, Any]:
    return {"www_authenticate_uri": url("keystone"), **auth(state, user), "service_token_roles_required": True}


def common(state: State, name: str) -> dict[str, Any]:
    return {"debug": False, "log_file": str(state.log / f"{name}.log"), "use_stderr": False,
            "transport_url": transport(), "state_path": str(state.lib / name)}


def keystone(state: State) -> Path:
    k = state.lib / "keystone"
    return write(state.etc / "keystone" / "keystone.conf", {
        "DEFAULT": {"log_file": str(state.log / "keystone.log"), "use_stderr": False},
        "database": {"connection": db(state, "keystone")},
        "token": {"provider": "fernet"},
        "fernet_tokens": {"key_repository": str(k / "fernet-keys")},
        "fernet_receipts": {"key_repository": str(k / "fernet-keys")},
        "credential": {"key_repository": str(k / "credential-keys")},
        "cache": {"enabled": True, "backend": "dogpile.cache.memory"},
        "identity": {"password_hash_rounds": 4},
    })


def glance(state: State) -> Path:
    d = state.etc / "glance"
    d.mkdir(parents=True, exist_ok=True)
    (d / "glance-api-paste.ini").write_text((state.venv / "etc/glance/glance-api-paste.ini").read_text())
    return write(d / "glance-api.conf", {
        "DEFAULT": {"log_file": str(state.log / "glance.log"), "use_stderr": False,
                    "enabled_backends": "file:file", "transport_url": transport()},
        "database": {"connection": db(state, "glance")},
        "keystone_authtoken": authtoken(state, "glance"),
        "paste_deploy": {"flavor": "keystone"},
        "glance_store": {"default_backend": "file"},
        "file": {"filesystem_store_datadir": str(state.lib / "glance/images")},
        "oslo_concurrency": {"lock_path": str(state.lib / "glance/lock")},
        "os_glance_staging_store": {"filesystem_store_datadir": str(state.lib / "glance/staging")},
        "os_glance_tasks_store": {"filesystem_store_datadir": str(state.lib / "glance/tasks")},
    })


def placement(state: State) -> Path:
    return write(state.etc / "placement" / "placement.conf", {
        "DEFAULT": {"log_file": str(state.log / "placement.log"), "use_stderr": False},
        "placement_database": {"connection": db(state, "placement")},
        "api": {"auth_strategy": "keystone"},
        "keystone_authtoken": authtoken(state, "placement"),
    })


def nova(state: State, inv: inventory.Inventory) -> Path:
    """nova.conf of the API, conductor, scheduler and (before its own compute-<host>.conf) every nova-compute.
    PCI aliases from the site profile; the scheduler's filters from the inventory (what `nfvcat plan` models);
    PCI devices tracked in Placement ([filter_scheduler] pci_in_placement, each compute's [pci]
    report_in_placement)."""
    from nfvcat import catalog
    from nfvcat.catalog import site

    d = state.etc / "nova"
    d.mkdir(parents=True, exist_ok=True)
    (d / "api-paste.ini").write_text((state.venv / "etc/nova/api-paste.ini").read_text())
    alias = [json.dumps(a, sort_keys=True) for a in site.of_catalog(catalog.find_root()).pci_aliases()]
    ini: Ini = {
        "DEFAULT": {**common(state, "nova"), "host": CONTROLLER, "my_ip": HOST,
                    "compute_driver": "nfvcat_devcloud.InventoryDriver",
                    "instances_path": str(state.lib / "nova/instances"),
                    "osapi_compute_workers": 1, "metadata_workers": 1,
                    "force_config_drive": False, "mkisofs_cmd": "genisoimage"},
        "api": {"auth_strategy": "keystone"},
        "api_database": {"connection": db(state, "nova_api")},
        "database": {"connection": db(state, "nova")},
        "keystone_authtoken": authtoken(state, "nova"),
        "service_user": {**auth(state, "nova"), "send_service_user_token": True},
        "placement": auth(state, "placement") | {"username": "nova", "password": state.secrets()["nova"]},
        # the metadata API (services.apis) behind Neutron's metadata agent (lab.devcloud.metadata)
        "neutron": {**auth(state, "neutron") | {"username": "nova", "password": state.secrets()["nova"]},
                    "service_metadata_proxy": True, "metadata_proxy_shared_secret": state.secrets()["metadata"]},
        "glance": {"api_servers": url("glance"), "region_name": REGION},
        "pci": {"alias": alias},
        "filter_scheduler": {"enabled_filters": ",".join(inv.enabled_filters), "pci_in_placement": True},
        "scheduler": {"discover_hosts_in_cells_interval": 5, "workers": 1},
        "conductor": {"workers": 1},
        "oslo_concurrency": {"lock_path": str(state.lib / "nova/lock")},
        "oslo_messaging_notifications": {"driver": "noop"},
        "wsgi": {"api_paste_config": str(d / "api-paste.ini")},
        "vnc": {"enabled": False},
        "cinder": {"catalog_info": "volumev3::publicURL", "os_region_name": REGION},
    }
    return write_multi(d / "nova.conf", ini)


def write_multi(path: Path, ini: Ini) -> Path:
    """Like write, but list values of multi-valued options (pci device_spec, alias) repeat the key."""
    path.parent.mkdir(parents=True, exist_ok=True)
    out = []
    for section, values in ini.items():
        out.append(f"[{section}]")
        for key, value in values.items():
            if isinstance(value, list):
                out.extend(f"{key} = {v}" for v in value)
            elif isinstance(value, bool):
                out.append(f"{key} = {'true' if value else 'false'}")
            else:
                out.append(f"{key} = {value}")
        out.append("")
    path.write_text("\n".join(out))
    return path


# networking-sfc (service plugins flow_classifier and sfc in neutron.conf), with its OVS drivers; its tables come
# from `neutron-db-manage --subproject networking-sfc upgrade head` (bootstrap.db_syncs)
SFC_DRIVERS: Ini = {"sfc": {"drivers": "ovs"}, "flowclassifier": {"drivers": "ovs"}}
SFC_ENV = "NFVCAT_DEVCLOUD_SFC"


def sfc_enabled() -> bool:
    """networking-sfc on (the default), or off with NFVCAT_DEVCLOUD_SFC=0 (a smaller dev cloud; what its cost is
    measured against)."""
    import os

    return os.environ.get(SFC_ENV, "1") != "0"


def neutron(state: State) -> dict[str, Path]:
    """The Neutron server's configuration (the agents': nfvcat_testbeds.devcloud.computes)."""
    d = state.etc / "neutron"
    d.mkdir(parents=True, exist_ok=True)
    (d / "api-paste.ini").write_text((state.venv / "etc/neutron/api-paste.ini").read_text())
    helper = f"{state.venv_bin / 'privsep-helper'}"
    server = write(d / "neutron.conf", {
        "DEFAULT": {**common(state, "neutron"), "core_plugin": "ml2",
                    "service_plugins": "qos,flow_classifier,sfc" if sfc_enabled() else "qos",
                    "auth_strategy": "keystone", "api_paste_config": str(d / "api-paste.ini"),
                    "api_workers": 1, "rpc_workers": 1, "rpc_state_report_workers": 1,
                    "notify_nova_on_port_status_changes": True, "notify_nova_on_port_data_changes": True,
                    "allow_overlapping_ips": True, "host": CONTROLLER,
                    # DHCP only where `up` puts it (the real host's networks that need it: lab.devcloud.metadata)
                    "network_auto_schedule": False, "dhcp_agents_per_network": 1},
        "database": {"connection": db(state, "neutron")},
        "keystone_authtoken": authtoken(state, "neutron"),
        "nova": auth(state, "nova") | {"username": "neutron", "password": state.secrets()["neutron"]},
        "placement": auth(state, "placement") | {"username": "neutron", "password": state.secrets()["neutron"]},
        "oslo_concurrency": {"lock_path": str(state.lib / "neutron/lock")},
        "agent": {"root_helper": "", "root_helper_daemon": ""},
        "privsep": {"helper_command": helper},
        **(SFC_DRIVERS if sfc_enabled() else {}),
    })
    ml2 = write(d / "ml2_conf.ini", {
        # vxlan: project networks (a VNF's internal virtual links, made by Tacker's BaseHOT without a provider
        # segment) take VNIs of VNI_RANGES, no VLAN id of the physnets the catalog's provider networks use;
        # networking-sfc's OVS agent extension needs the agents' tunnel bridge (see computes.agent_confs), and
        # its OVS driver steers only ports of VXLAN networks (admin networks with an explicit VNI)
        "ml2": {"type_drivers": "flat,vlan,vxlan", "tenant_network_types": "vxlan", "mechanism_drivers":
                "openvswitch,sriovnicswitch", "extension_drivers": "port_security,qos"},
        "ml2_type_vlan": {"network_vlan_ranges": vlan_ranges()},
        "ml2_type_vxlan": {"vni_ranges": VNI_RANGES},
        "ml2_type_flat": {"flat_networks": "*"},
        "securitygroup": {"firewall_driver": "noop", "enable_security_group": True},
    })
    return {"server": server, "ml2": ml2}


def heat(state: State) -> Path:
    d = state.etc / "heat"
    d.mkdir(parents=True, exist_ok=True)
    (d / "api-paste.ini").write_text((state.venv / "etc/heat/api-paste.ini").read_text())
    return write(d / "heat.conf", {
        "DEFAULT": {**common(state, "heat"), "heat_metadata_server_url": url("heat"),
                    "num_engine_workers": 1, "action_retry_limit": 0,
                    "region_name_for_services": REGION, "convergence_engine": True,
                    "max_stacks_per_tenant": 1000, "server_keystone_endpoint_type": "public",
                    "host": "devcloud"},
        "database": {"connection": db(state, "heat")},
        "keystone_authtoken": authtoken(state, "heat"),
        "trustee": auth(state, "heat"),
        "clients_keystone": {"auth_uri": url("keystone")},
        "heat_api": {"workers": 1},
        "paste_deploy": {"api_paste_config": str(d / "api-paste.ini")},
        "oslo_messaging_notifications": {"driver": "noop"},
        "oslo_concurrency": {"lock_path": str(state.lib / "heat/lock")},
    })
