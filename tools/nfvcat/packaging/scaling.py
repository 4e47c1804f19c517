"""A VNFD flavour's scaling model, as Tacker's v2 LCM reads it (ETSI SOL001 v2.6.1 6.10: the policies
``tosca.policies.nfv.ScalingAspects``, ``VduScalingAspectDeltas``, ``VduInitialDelta``, ``InstantiationLevels``).

Tacker 16 (sol_refactored ``common/vnfd_utils.py``) supports uniform deltas only: an aspect's first
``step_deltas`` entry is its delta at every level (``get_scale_vdu_and_num``), so one delta per aspect is all
this model accepts. A VDU has ``initial + level x delta`` instances at an aspect's scale level; the
instantiation level's ``scale_info`` is the scale level Tacker records at instantiate (``scaleStatus``), and
``max_scale_level`` the one it refuses to go beyond. The VNFD is refused here when those counts leave the VDU's
``vdu_profile`` bounds, so a package never promises a level its ``AutoScalingGroup`` cannot hold.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nfvcat.core.errors import UserError

ASPECTS = "tosca.policies.nfv.ScalingAspects"
DELTAS = "tosca.policies.nfv.VduScalingAspectDeltas"
INITIAL = "tosca.policies.nfv.VduInitialDelta"
LEVELS = "tosca.policies.nfv.InstantiationLevels"


@dataclass(frozen=True)
class Aspect:
    id: str
    max_level: int
    deltas: dict[str, int]  # VDU -> instances added per step


@dataclass(frozen=True)
class Scaling:
    aspects: dict[str, Aspect] = field(default_factory=dict)
    initial: dict[str, int] = field(default_factory=dict)  # VDU -> instances at scale level 0
    levels: dict[str, dict[str, int]] = field(default_factory=dict)  # instantiation level -> aspect -> level
    default_level: str | None = None

    def scaled(self, vdu: str) -> bool:
        return any(vdu in a.deltas for a in self.aspects.values())

    def instances(self, vdu: str, scale_levels: dict[str, int]) -> int:
        """How many instances of ``vdu`` the VNFD gives at these aspects' scale levels."""
        return self.initial.get(vdu, 1) + sum(a.deltas.get(vdu, 0) * scale_levels.get(a.id, 0)
                                              for a in self.aspects.values())


def _policies(topology: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(type, policy) of each policy: SOL001 writes them as a list of one-key mappings."""
    found = []
    raw = topology.get("policies") or []
    for item in raw if isinstance(raw, list) else [raw]:
        for name, policy in (item.items() if isinstance(item, dict) else []):
            if not isinstance(policy, dict):
                raise UserError(f"VNFD policy {name}: not a mapping")
            found.append((str(policy.get("type")), policy))
    return found


def _count(value: Any, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise UserError(f"VNFD {where}: number_of_instances must be a whole number >= 0, not {value!r}")
    return value


def model(topology: dict[str, Any]) -> Scaling:
    """The flavour's scaling model from its ``topology_template``; a VNFD Tacker would misread is an error."""
    policies = _policies(topology)
    steps: dict[str, tuple[int, str]] = {}  # aspect -> (max level, its delta's name)
    for ptype, pol in policies:
        if ptype != ASPECTS:
            continue
        for aid, asp in ((pol.get("properties") or {}).get("aspects") or {}).items():
            deltas = asp.get("step_deltas") or []
            if len(set(deltas)) != 1:
                raise UserError(f"VNFD scaling aspect {aid}: give one step delta (Tacker scales by uniform deltas "
                                f"only), not {deltas!r}")
            level = asp.get("max_scale_level")
            if not isinstance(level, int) or level < 1:
                raise UserError(f"VNFD scaling aspect {aid}: max_scale_level must be a whole number >= 1")
            steps[str(aid)] = (level, str(deltas[0]))
    per_vdu: dict[str, dict[str, int]] = {a: {} for a in steps}
    initial: dict[str, int] = {}
    levels: dict[str, dict[str, int]] = {}
    default = None
    for ptype, pol in policies:
        props = pol.get("properties") or {}
        if ptype == DELTAS:
            aid = str(props.get("aspect"))
            if aid not in steps:
                raise UserError(f"VNFD {DELTAS}: aspect {aid} is no ScalingAspects aspect")
            delta = (props.get("deltas") or {}).get(steps[aid][1])
            if not isinstance(delta, dict):
                raise UserError(f"VNFD {DELTAS} of {aid}: no delta {steps[aid][1]} (its step delta)")
            for vdu in pol.get("targets") or []:
                per_vdu[aid][str(vdu)] = _count(delta.get("number_of_instances"), f"delta {steps[aid][1]}")
        elif ptype == INITIAL:
            for vdu in pol.get("targets") or []:
                initial[str(vdu)] = _count((props.get("initial_delta") or {}).get("number_of_instances"),
                                           f"initial delta of {vdu}")
        elif ptype == LEVELS:
            default = props.get("default_level")
            for lid, lvl in (props.get("levels") or {}).items():
                info = (lvl or {}).get("scale_info") or {}
                unknown = sorted(set(info) - set(steps))
                if unknown:
                    raise UserError(f"VNFD instantiation level {lid}: scale_info of unknown aspect "
                                    f"{', '.join(unknown)}")
                levels[str(lid)] = {str(a): int((v or {}).get("scale_level", 0)) for a, v in info.items()}
    aspects = {a: Aspect(a, steps[a][0], per_vdu[a]) for a in steps}
    for aid, asp in aspects.items():
        if not asp.deltas:
            raise UserError(f"VNFD scaling aspect {aid}: no {DELTAS} names it (which VDU it scales)")
        for lid, lvl in levels.items():
            if lvl.get(aid, 0) > asp.max_level:
                raise UserError(f"VNFD instantiation level {lid}: {aid} at scale level {lvl[aid]}, beyond its "
                                f"max_scale_level {asp.max_level}")
    return Scaling(aspects, initial, levels, str(default) if default else None)


def bounds(scaling: Scaling, vdu: str, node: dict[str, Any]) -> tuple[int, int]:
    """The VDU's ``vdu_profile`` (min, max instances), checked to hold every scale level of every aspect."""
    profile = (node.get("properties") or {}).get("vdu_profile") or {}
    low, high = profile.get("min_number_of_instances"), profile.get("max_number_of_instances")
    if not isinstance(low, int) or not isinstance(high, int) or not 0 <= low <= high:
        raise UserError(f"VNFD {vdu}: vdu_profile needs min_number_of_instances <= max_number_of_instances")
    smallest = scaling.instances(vdu, {})
    largest = scaling.instances(vdu, {a.id: a.max_level for a in scaling.aspects.values()})
    if smallest < low or largest > high:
        raise UserError(f"VNFD {vdu}: its scaling aspects give {smallest} to {largest} instances, outside its "
                        f"vdu_profile ({low} to {high})")
    return low, high
