"""Neutron's own API checks of what a template asks it to create, run in the Nova worker.

Heat validates a QoS rule's properties by its own schema; Neutron's QoS plugin (``QoSPlugin.create_policy_rule``)
then checks each new rule against the rules its policy already has, and answers 409 when the stack is created:
two rules of one type and direction (``QosRule.duplicates``), a minimum bandwidth above the policy's own limit
in that direction (``qos_policy_validator.check_bandwidth_rule_conflict``), a directionless minimum packet rate
beside a directed one (``check_min_pps_rule_conflict``). This module builds Neutron's own rule objects
(``neutron.objects.qos.rule``) from the rules Heat creates, with Heat's property defaults (``direction`` egress,
as each OS::Neutron::QoS*Rule's schema says: tests/unit compares), and runs Neutron's validator on them in the
template's order, as Heat would create them one after the other.

Neutron is a dependency of the product for this (pyproject.toml): its QoS objects import beside Nova's in one
process (oslo.config options do not clash, unlike Heat's), ~0.6 s, once per worker and only when a template has a
QoS policy with two rules or more (then kept out of the collector's reach: worker.load_frozen).
"""

from __future__ import annotations

from typing import Any

from nfvcat.core import hot
from nfvcat.core.documents import Document
from nfvcat.validation.emitted import QOS_RULES_CONFLICT
from nfvcat.validation.engines.jobs import EngineJob, JobContext
from nfvcat.validation.engines.nova_server import stand_in
from nfvcat.validation.engines.worker import Job, Result, finding, load_frozen

ENGINE = "nova"
LABEL = "neutron"  # whose verdict the findings are

# Heat's QoS rule types -> Neutron's rule object class, and Heat's defaults for the properties it sends
RULE_CLASSES = {
    "OS::Neutron::QoSBandwidthLimitRule": "QosBandwidthLimitRule",
    "OS::Neutron::QoSDscpMarkingRule": "QosDscpMarkingRule",
    "OS::Neutron::QoSMinimumBandwidthRule": "QosMinimumBandwidthRule",
    "OS::Neutron::QoSMinimumPacketRateRule": "QosMinimumPacketRateRule",
}
HEAT_DEFAULTS: dict[str, dict[str, Any]] = {
    "OS::Neutron::QoSBandwidthLimitRule": {"direction": "egress", "max_burst_kbps": 0},
    "OS::Neutron::QoSDscpMarkingRule": {},
    "OS::Neutron::QoSMinimumBandwidthRule": {"direction": "egress"},
    "OS::Neutron::QoSMinimumPacketRateRule": {"direction": "egress"},
}
_FIELDS = ("direction", "max_kbps", "max_burst_kbps", "min_kbps", "min_kpps", "dscp_mark")


def jobs(doc: Document, ctx: JobContext) -> list[EngineJob]:
    """One job per QoS policy of the template with two rules or more: each rule's known properties."""
    params = ctx.rules.parameters
    rules: dict[str, list[dict[str, Any]]] = {}
    for name, body in hot.resources(doc.data, *RULE_CLASSES):
        p = hot.props(body)
        policy = hot.resource_ref(p.get("policy"))
        if policy is None:
            continue
        values: dict[str, Any] = {"resource": name, "type": body["type"], "given": []}
        for key in _FIELDS:
            if key not in p:
                continue
            value = hot.resolve(doc.data, p[key], params)
            if value is hot.UNRESOLVED or value is None:
                values["unknown"] = True
                break
            values[key] = value
            values["given"].append(key)
        if not values.get("unknown"):
            rules.setdefault(policy, []).append(values)
    return [EngineJob(ENGINE, doc, {"qos_policy": {"name": policy, "rules": found}}, ("resources",))
            for policy, found in rules.items() if len(found) > 1]


class _Policy:
    """What Neutron's validator reads of a policy: its id and its rules."""

    def __init__(self, name: str) -> None:
        self.id = name
        self.rules: list[Any] = []

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)


def check(job: Job) -> Result:
    checker, rule_objects, exceptions = load_frozen(
        "neutron.objects.qos.qos_policy_validator", "neutron.objects.qos.rule", "neutron_lib.exceptions")

    spec = job["qos_policy"]
    policy = _Policy(str(spec["name"]))
    findings = []
    names: dict[str, str] = {}  # stand-in UUID -> the rule's resource name, for the messages
    for item in spec["rules"]:
        data = {**HEAT_DEFAULTS[item["type"]], **{k: item[k] for k in _FIELDS if k in item}}
        cls = getattr(rule_objects, RULE_CLASSES[item["type"]])
        data = {k: v for k, v in data.items() if k in cls.fields}
        name = item["resource"]
        names[stand_in(name)] = name
        try:
            checker.check_bandwidth_rule_conflict(policy, data)
            rule = cls(id=stand_in(name), **data)
            checker.check_min_pps_rule_conflict(policy, rule)
            checker.check_rules_conflict(policy, rule)
        except exceptions.NeutronException as exc:
            key = _key(exc, item)
            message = str(exc)
            for uid, resource in names.items():
                message = message.replace(uid, resource)
            findings.append(finding(QOS_RULES_CONFLICT.id, [name, "properties", *key[:1]] if key else [name],
                                    f"Neutron's API refuses the rule (HTTP 409, {type(exc).__name__}): {message}"
                                    + _why(exc, item), LABEL))
            continue
        except (ValueError, TypeError):
            continue  # a value of the wrong type: Heat's schema reports it
        policy.rules.append(rule)
    return {"findings": findings, "deps": {}}


def _key(exc: Exception, item: dict[str, Any]) -> list[str]:
    """The property of the rule the conflict is about, where the template gives it."""
    wanted = ["direction"] if type(exc).__name__ == "QoSRulesConflict" else ["min_kbps", "max_kbps", "direction"]
    return [k for k in wanted if k in item["given"]]


def _why(exc: Exception, item: dict[str, Any]) -> str:
    if type(exc).__name__ == "QoSRulesConflict" and "direction" not in item["given"]:
        return " (its direction is Heat's default, egress)"
    return ""
