"""A VNFD as Tacker's LCM reads it, after tosca-parser accepted it: each deployment flavour (a
``substitution_mappings`` with a ``flavour_id``) is instantiated at each of its instantiation levels and scaled
along each of its aspects, through the methods of ``tacker.sol_refactored.common.vnfd_utils.Vnfd`` that
Tacker's instantiate and scale code calls (``get_default_instantiation_level``, ``get_vdu_num``,
``get_scale_info_from_inst_level``, ``get_max_scale_level``, ``get_scale_vdu_and_num``).

What fails there, found at its key: a level with no number of instances for a VDU (instantiate makes
``range(None)``), a default level that is no level, a level's scale_info naming an aspect no ScalingAspects
has or a scale level above its max_scale_level, an aspect whose step delta no VduScalingAspectDeltas defines
(``DeltaMissingInVnfd``, raised only when the VNF is scaled), and deltas for an aspect that does not exist.
Runs in the tosca worker, where tacker is loaded.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

LEVELS = "tosca.policies.nfv.InstantiationLevels"
VDU_LEVELS = "tosca.policies.nfv.VduInstantiationLevels"
ASPECTS = "tosca.policies.nfv.ScalingAspects"
DELTAS = "tosca.policies.nfv.VduScalingAspectDeltas"
VDU = "tosca.nodes.nfv.Vdu.Compute"

Problem = tuple[str, list[Any], str]  # the document's name, key path, message


def _policies(data: Any, ptype: str) -> Iterator[tuple[list[Any], dict[str, Any]]]:
    """(key path, properties) of each policy of a type, as Tacker reads them (a list of one-key maps)."""
    topo = data.get("topology_template") if isinstance(data, dict) else None
    policies = topo.get("policies") if isinstance(topo, dict) else None
    items = [policies] if isinstance(policies, dict) else policies if isinstance(policies, list) else []
    for i, item in enumerate(items):
        for name, body in (item.items() if isinstance(item, dict) else []):
            if isinstance(body, dict) and body.get("type") == ptype:
                base = ["topology_template", "policies", i, name] if isinstance(policies, list) else \
                    ["topology_template", "policies", name]
                props = body.get("properties")
                yield base, props if isinstance(props, dict) else {}


def _flavour(data: Any) -> str | None:
    topo = data.get("topology_template") if isinstance(data, dict) else None
    sub = topo.get("substitution_mappings") if isinstance(topo, dict) else None
    props = sub.get("properties") if isinstance(sub, dict) else None
    fid = props.get("flavour_id") if isinstance(props, dict) else None
    return fid if isinstance(fid, str) else None


def check(docs: list[tuple[str, Any]]) -> list[Problem]:
    from tacker.sol_refactored.common.vnfd_utils import Vnfd

    vnfd = Vnfd("nfvcat")
    vnfd.definitions = {name: data for name, data in docs if isinstance(data, dict)}
    out: list[Problem] = _flavour_ids(docs)
    for name, data in docs:
        fid = _flavour(data)
        if fid is None or vnfd.get_vnfd_flavour(fid) is not data:
            continue
        try:
            out.extend(_flavour_problems(vnfd, name, data, fid))
        except (TypeError, AttributeError, KeyError, IndexError, ValueError) as exc:
            # Tacker's own reader fails on this flavour (e.g. ``policies:`` with no value): so do its instantiate
            # and scale, which call the same methods
            topo = data.get("topology_template")
            where = ["topology_template", "policies"] if isinstance(topo, dict) and "policies" in topo else \
                ["topology_template"]
            out.append((name, where, f"flavour {fid}: Tacker's VNFD reader (vnfd_utils) fails on it with "
                                     f"{type(exc).__name__}: {exc}: Tacker's instantiate and scale fail the same way"))
    return out


def _flavour_ids(docs: list[tuple[str, Any]]) -> list[Problem]:
    """A flavour's substitution_mappings flavour_id that is not the flavour_id of the VNF node it substitutes
    (a node template of its node_type): the node asks for a flavour no substitution_mappings gives, and Tacker
    finds no deployment flavour of that id to instantiate."""
    nodes: list[tuple[str, str, Any]] = []  # (node type, node name, flavour_id)
    subs: list[tuple[str, str, Any]] = []  # (document, node type, flavour_id)
    for name, data in docs:
        topo = data.get("topology_template") if isinstance(data, dict) else None
        if not isinstance(topo, dict):
            continue
        templates = topo.get("node_templates")
        for node, body in templates.items() if isinstance(templates, dict) else ():
            props = body.get("properties") if isinstance(body, dict) else None
            ntype = body.get("type") if isinstance(body, dict) else None
            if isinstance(props, dict) and isinstance(props.get("flavour_id"), str) and isinstance(ntype, str):
                nodes.append((ntype, str(node), props["flavour_id"]))
        sub = topo.get("substitution_mappings")
        fid = _flavour(data)
        if isinstance(sub, dict) and fid is not None and isinstance(sub.get("node_type"), str):
            subs.append((name, sub["node_type"], fid))
    out: list[Problem] = []
    for ntype, node, wanted in nodes:
        given = [(name, fid) for name, stype, fid in subs if stype == ntype]
        if not given or any(fid == wanted for _, fid in given):
            continue
        for name, fid in given:
            out.append((name, ["topology_template", "substitution_mappings", "properties", "flavour_id"],
                        f"substitution_mappings flavour_id {fid} is not the flavour_id of the VNF node {node} "
                        f"({wanted}): no deployment flavour {wanted} substitutes the node, and Tacker finds none to "
                        "instantiate"))
    return out


def _flavour_problems(vnfd: Any, name: str, data: Any, fid: str) -> list[Problem]:
    from tacker.sol_refactored.common import exceptions as sol_ex

    out: list[Problem] = []
    levels = list(_policies(data, LEVELS))
    aspects = {str(k): v for _, props in _policies(data, ASPECTS) if isinstance(props.get("aspects"), dict)
               for k, v in props["aspects"].items()}
    found = levels[0][1].get("levels") if levels else None
    defined: dict[Any, Any] = found if isinstance(found, dict) else {}
    default = vnfd.get_default_instantiation_level(fid)
    if levels and default is not None and default not in defined:
        out.append((name, [*levels[0][0], "properties", "default_level"],
                    f"flavour {fid}: default_level {default} is not one of its instantiation levels "
                    f"({', '.join(map(str, defined)) or 'none'}): Tacker's instantiate without a level fails"))
    for level in defined:
        out.extend(_instantiate(vnfd, name, data, fid, level))
        info = vnfd.get_scale_info_from_inst_level(fid, level)
        for aspect, value in (info.items() if isinstance(info, dict) else []):
            where = [*levels[0][0], "properties", "levels", level, "scale_info", aspect]
            if str(aspect) not in aspects:
                out.append((name, where, f"flavour {fid}: instantiation level {level} scales aspect {aspect}, "
                            "which no ScalingAspects policy defines: Tacker's instantiate records a scale "
                            "status its scale operations cannot follow"))
                continue
            scale = value.get("scale_level") if isinstance(value, dict) else None
            top = vnfd.get_max_scale_level(fid, aspect)
            if not isinstance(scale, int) or (isinstance(top, int) and scale > top):
                out.append((name, [*where, "scale_level"] if isinstance(value, dict) else where,
                            f"flavour {fid}: instantiation level {level} puts aspect {aspect} at scale level "
                            f"{scale}, beyond its max_scale_level {top}"))
    for base, props in _policies(data, ASPECTS):
        for aspect in (props.get("aspects") or {}) if isinstance(props.get("aspects"), dict) else {}:
            try:
                vnfd.get_scale_vdu_and_num(fid, aspect)
            except (sol_ex.DeltaMissingInVnfd, KeyError, IndexError, TypeError) as exc:
                shown = getattr(exc, "detail", None) or f"{type(exc).__name__}: {exc}"
                out.append((name, [*base, "properties", "aspects", aspect, "step_deltas"],
                            f"flavour {fid}: scaling aspect {aspect}: {shown} (Tacker's scale fails)"))
    for base, props in _policies(data, DELTAS):
        aspect = props.get("aspect")
        if aspect is not None and str(aspect) not in aspects:
            out.append((name, [*base, "properties", "aspect"],
                        f"flavour {fid}: VduScalingAspectDeltas for aspect {aspect}, which no ScalingAspects "
                        "policy defines: a scale request for it fails"))
    return out


def _instantiate(vnfd: Any, name: str, data: Any, fid: str, level: str) -> list[Problem]:
    """What instantiating the flavour at ``level`` reads for each VDU (vnflcm_driver_v2.instantiate_grant)."""
    out: list[Problem] = []
    for vdu in vnfd.get_vdu_nodes(fid):
        if vnfd.get_vdu_num(fid, vdu, level) is not None:
            continue
        where = next((base for base, props in _policies(data, VDU_LEVELS)
                      if vdu in _targets(data, base)), None)
        out.append((name, [*where, "properties", "levels"] if where else
                    ["topology_template", "node_templates", vdu],
                    f"flavour {fid}: VDU {vdu} has no number_of_instances for instantiation level {level} "
                    "in its VduInstantiationLevels: Tacker's instantiate at that level fails"))
    return out


def _targets(data: Any, base: list[Any]) -> list[Any]:
    body: Any = data
    for key in base:
        body = body[key] if isinstance(body, (dict, list)) else None
    targets = body.get("targets") if isinstance(body, dict) else None
    return targets if isinstance(targets, list) else []
