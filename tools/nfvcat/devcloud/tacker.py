"""Tacker in the dev cloud: configuration, database sync and its two processes (server and conductor)."""

from __future__ import annotations

from pathlib import Path

from nfvcat.devcloud import configs, services
from nfvcat.devcloud.services import Service
from nfvcat.devcloud.state import HOST, PORTS, State


def config(state: State) -> Path:
    d = state.etc / "tacker"
    d.mkdir(parents=True, exist_ok=True)
    (d / "api-paste.ini").write_text((state.venv / "etc/tacker/api-paste.ini").read_text())
    csar = state.lib / "tacker" / "csar_files"
    csar.mkdir(parents=True, exist_ok=True)
    return configs.write(d / "tacker.conf", {
        "DEFAULT": {**configs.common(state, "tacker"), "bind_host": HOST, "bind_port": PORTS["tacker"],
                    "api_paste_config": str(d / "api-paste.ini"), "auth_strategy": "keystone", "api_workers": 1},
        "database": {"connection": configs.db(state, "tacker")},
        "keystone_authtoken": configs.authtoken(state, "tacker"),
        "vnf_package": {"vnf_package_csar_path": str(csar)},
        # the uploaded zips (glance_store) and the extracted packages (csar path) must not share a directory
        "glance_store": {"default_backend": "file",
                         "filesystem_store_datadir": str(state.lib / "tacker" / "glance_store")},
        "oslo_concurrency": {"lock_path": str(state.lib / "tacker" / "lock")},
        "oslo_messaging_notifications": {"driver": "noop"},
        "oslo_policy": {"enforce_new_defaults": False, "enforce_scope": False},
    })


def conf_args(state: State) -> list[str]:
    return ["--config-file", str(state.etc / "tacker" / "tacker.conf")]


def db_sync(state: State) -> list[tuple[list[str], str]]:
    return [([str(state.venv_bin / "tacker-db-manage"), *conf_args(state), "upgrade", "head"],
             "tacker-db-manage upgrade head")]


def processes(state: State) -> list[Service]:
    server = services.oslo(state, "tacker-server", conf_args(state))
    server.ready = services.http_ok(PORTS["tacker"], "/")
    return [server, services.oslo(state, "tacker-conductor", conf_args(state))]
