from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from nfvcat import hot
from nfvcat.documents import Document
from nfvcat.engines import cloudinit
from nfvcat.findings import RawFinding
from nfvcat.rules.base import Context, Rule


class CloudConfigSchema(Rule):
    id = "E6001"
    shortdesc = "cloud-config rejected by cloud-init's schema"
    description = ("Day-0 user data in cloud-config form is checked against cloud-init's own JSON Schema "
                   "(schema-cloud-config-v1.json, as `cloud-init schema` does): cloud-config files, "
                   "OS::Heat::CloudConfig `cloud_config`, and literal `#cloud-config` user_data of servers. "
                   "cloud-init skips a module whose config is invalid, so the VNF boots unconfigured.")
    source_url = "https://cloudinit.readthedocs.io/en/latest/reference/modules.html"
    engine = "cloud-init"
    kinds = ("cloud-config", "hot")

    def _check(self, where: tuple[Any, ...], data: Any) -> Iterator[RawFinding]:
        for path, message in cloudinit.check(data):
            yield self.finding(where + tuple(path), message)

    def check(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        if doc.kind == "cloud-config":
            if doc.data is None or isinstance(doc.data, dict):
                yield from self._check((), doc.data)
            else:
                yield self.finding((), f"cloud-config must be a mapping, not {type(doc.data).__name__}")
            return
        for name, body in hot.resources(doc.data, "OS::Heat::CloudConfig"):
            cfg = hot.props(body).get("cloud_config")
            if isinstance(cfg, dict) and not _has_functions(cfg):
                yield from self._check(("resources", name, "properties", "cloud_config"), cfg)
        for name, body in hot.resources(doc.data, "OS::Nova::Server"):
            user_data = hot.props(body).get("user_data")
            if isinstance(user_data, str) and user_data.startswith("#cloud-config"):
                where = ("resources", name, "properties", "user_data")
                try:
                    parsed = yaml.safe_load(user_data)
                except yaml.YAMLError as exc:
                    yield self.finding(where, f"user_data is not valid YAML: {exc}".splitlines()[0])
                    continue
                if isinstance(parsed, dict):
                    for _, message in cloudinit.check(parsed):
                        yield self.finding(where, f"user_data: {message}")


def _has_functions(value: Any) -> bool:
    """True when Heat intrinsic functions are inside: the value is only known at deploy time."""
    if isinstance(value, dict):
        if len(value) == 1 and next(iter(value)) in ("get_param", "get_attr", "get_resource", "str_replace",
                                                     "list_join", "get_file", "if", "yaql", "str_split"):
            return True
        return any(_has_functions(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_functions(v) for v in value)
    return False
