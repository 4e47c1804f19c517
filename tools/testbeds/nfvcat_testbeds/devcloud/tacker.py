"""Tacker in the dev cloud: configuration, database sync, its two processes (server and conductor) and the dev
cloud registered as Tacker's default VIM.

The VIM's password is kept encrypted by Tacker with Fernet keys it writes under ``lib/tacker/vim_keys`` (and
``lib/tacker/crypt``) of the state directory, so ``devcloud down --wipe`` removes them with everything else.
Without a default VIM, v2 instantiate rolls back at the grant (``No vimConnectionInfo``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nfvcat_testbeds.devcloud import configs, services
from nfvcat_testbeds.devcloud.services import Service
from nfvcat_testbeds.devcloud.state import HOST, PORTS, REGION, State

VIM_NAME = "nfvcat-dev"


def config(state: State) -> Path:
    d = state.etc / "tacker"
    d.mkdir(parents=True, exist_ok=True)
    (d / "api-paste.ini").write_text((state.venv / "etc/tacker/api-paste.ini").read_text())
    csar = state.lib / "tacker" / "csar_files"
    csar.mkdir(parents=True, exist_ok=True)
    return configs.write(d / "tacker.conf", {
        "DEFAULT": {**configs.common(state, "tacker"), "crypt_key_dir": str(vim_keys(state).parent / "crypt"),
                    "bind_host": HOST, "bind_port": PORTS["tacker"],
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
        "vim_keys": {"openstack": str(vim_keys(state)), "use_barbican": False},
    })


def vim_keys(state: State) -> Path:
    """Where Tacker keeps the Fernet keys of the registered VIMs' passwords (inside the state directory)."""
    keys = state.lib / "tacker" / "vim_keys"
    keys.mkdir(parents=True, exist_ok=True, mode=0o700)
    (keys.parent / "crypt").mkdir(parents=True, exist_ok=True, mode=0o700)
    return keys


def conf_args(state: State) -> list[str]:
    return ["--config-file", str(state.etc / "tacker" / "tacker.conf")]


def db_sync(state: State) -> list[tuple[list[str], str]]:
    return [([str(state.venv_bin / "tacker-db-manage"), *conf_args(state), "upgrade", "head"],
             "tacker-db-manage upgrade head")]


def processes(state: State) -> list[Service]:
    server = services.oslo(state, "tacker-server", conf_args(state))
    server.ready = services.http_ok(PORTS["tacker"], "/")
    return [server, services.oslo(state, "tacker-conductor", conf_args(state))]


def keystone_v3(auth_url: str) -> str:
    """The auth URL as Tacker stores a VIM's (it appends /v3 to one without)."""
    base = auth_url.rstrip("/")
    return base if base.endswith("/v3") else f"{base}/v3"


def vim_body(auth: dict[str, Any]) -> dict[str, Any]:
    """The v1 NFVO request registering the dev cloud (the admin project) as the default OpenStack VIM."""
    return {"vim": {
        "name": VIM_NAME, "type": "openstack", "is_default": True,
        "description": "the nfvcat dev cloud (nfvcat devcloud up)",
        "auth_url": keystone_v3(auth["auth_url"]),
        "auth_cred": {"username": auth["username"], "password": auth["password"],
                      "user_domain_name": auth["user_domain_name"]},
        "vim_project": {"name": auth["project_name"], "project_domain_name": auth["project_domain_name"]},
        "extra": {},
    }}


def register_vim(client: Any, auth: dict[str, Any]) -> dict[str, Any]:
    """Find or register the dev cloud as Tacker's default VIM (python-tackerclient ``client``); idempotent.
    A VIM of our name that is not the default or points elsewhere is replaced."""
    body = vim_body(auth)
    for vim in client.list_vims().get("vims", []):
        if vim.get("name") != VIM_NAME:
            continue
        if vim.get("is_default") and keystone_v3(str(vim.get("auth_url", ""))) == keystone_v3(auth["auth_url"]):
            return {"vim_id": vim["id"], "registered": False}
        client.delete_vim(vim["id"])
    vim = client.create_vim(body)["vim"]
    return {"vim_id": vim["id"], "registered": True}


def tacker_client(sess: Any) -> Any:
    """python-tackerclient on a keystoneauth session (Tacker's endpoint from the session's catalog)."""
    from tackerclient.v1_0 import client

    return client.Client(session=sess, region_name=REGION, service_type="nfv-orchestration")


def session(auth: dict[str, Any]) -> Any:
    from keystoneauth1 import session as ks_session
    from keystoneauth1.identity import v3

    return ks_session.Session(auth=v3.Password(**auth))
