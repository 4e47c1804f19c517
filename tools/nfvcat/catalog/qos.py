"""The catalog's Neutron QoS policies: those its provider-network entry (net-provider) creates, with the values its
template and example environment give them (the environment ``nfvcat onboard`` deploys it with), by the name of the
output that returns each policy (best_effort_qos_policy, realtime_qos_policy)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nfvcat.catalog import entries
from nfvcat.core import hot, yamlpos
from nfvcat.core.errors import UserError

NETWORK_ENTRY = "net-provider"
EXAMPLE = "default"


def policies(root: Path, entry: str = NETWORK_ENTRY, example: str = EXAMPLE) -> dict[str, dict[str, Any]]:
    e = entries.find(root, entry, "heat")
    data = yamlpos.load(e.template.read_text(encoding="utf-8"))[0]
    env = e.example(example)
    given = ((yamlpos.load(env.read_text(encoding="utf-8"))[0] or {}).get("parameters") or {}) if env else {}
    return hot.qos_policies(data, dict(given))


def rule(policy: dict[str, Any], kind: str, where: str) -> dict[str, Any]:
    """The policy's one rule of ``kind`` (bandwidth_limit, dscp_marking), every value resolved."""
    found = [r for r in policy["rules"] if r["type"] == kind]
    if len(found) != 1:
        raise UserError(f"{where}: policy {policy['name']} has {len(found)} {kind} rule(s), not one")
    unresolved = sorted(k for k, v in found[0].items() if v is hot.UNRESOLVED)
    if unresolved:
        raise UserError(f"{where}: {kind} rule of {policy['name']}: {', '.join(unresolved)} not resolved from the "
                        "catalog's parameters")
    return dict(found[0])
