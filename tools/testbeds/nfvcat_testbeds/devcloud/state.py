"""Where the dev cloud keeps everything: one directory (``.devcloud/`` at the repository root, or
``$NFVCAT_DEVCLOUD_DIR``), with fixed loopback ports and generated passwords."""

from __future__ import annotations

import json
import os
import secrets
import sys
from dataclasses import dataclass
from pathlib import Path

HOST = "127.0.0.1"
REGION = "RegionOne"
CLOUD_NAME = "nfvcat-dev"
PORTS = {
    "keystone": 5000, "glance": 9292, "placement": 8778, "nova": 8774, "nova_metadata": 8775, "neutron": 9696,
    "heat": 8004, "tacker": 9890,
    "mariadb": 3306, "rabbitmq": 5672, "rabbitmq_dist": 25672, "epmd": 4369,
}
DATABASES = ("keystone", "glance", "placement", "nova_api", "nova", "nova_cell0", "neutron", "heat", "tacker")
SERVICE_USERS = ("glance", "placement", "nova", "neutron", "heat", "tacker")


def repo_root() -> Path:
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").is_file() and (parent / "tools").is_dir():
            return parent
    return Path.cwd()


def default_dir() -> Path:
    env = os.environ.get("NFVCAT_DEVCLOUD_DIR")
    return Path(env).resolve() if env else repo_root() / ".devcloud"


@dataclass
class State:
    root: Path

    @property
    def etc(self) -> Path:
        return self.root / "etc"

    @property
    def log(self) -> Path:
        return self.root / "log"

    @property
    def run(self) -> Path:
        return self.root / "run"

    @property
    def lib(self) -> Path:
        return self.root / "lib"

    @property
    def venv_bin(self) -> Path:
        return Path(sys.executable).parent

    @property
    def venv(self) -> Path:
        return self.venv_bin.parent

    def ensure(self) -> None:
        for d in (self.etc, self.log, self.run, self.lib):
            d.mkdir(parents=True, exist_ok=True)

    def secrets(self) -> dict[str, str]:
        """Passwords, generated once and kept (0600) in the state directory."""
        path = self.root / "secrets.json"
        values: dict[str, str] = dict(json.loads(path.read_text())) if path.is_file() else {}
        wanted = ("db", "admin", "metadata", *SERVICE_USERS)  # metadata: Neutron's and Nova's shared secret
        if all(name in values for name in wanted):
            return values
        values.update({name: secrets.token_hex(12) for name in wanted if name not in values})
        self.ensure()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(values, f)
        return values

    @property
    def inventory(self) -> Path:
        """The copy of the inventory `devcloud up` was given."""
        return self.etc / "inventory.yaml"

    def marker(self, name: str) -> Path:
        return self.lib / f".done-{name}"


def url(service: str, path: str = "") -> str:
    return f"http://{HOST}:{PORTS[service]}{path}"
