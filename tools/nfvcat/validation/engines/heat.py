"""Heat engine: openstack-heat's own template and resource validation, in-process and offline.

The cloud look-ups are neutralised (heat_offline). Everything else is Heat's code in strict mode, nested
stacks included (heat_nested), which checks value types, allowed values and references; an exception any
resource raises is a finding, unless it comes from a cloud client (heat_cloud_errors: the resource is then
checked template-only and reported as not validated offline, E0009). Parameters without a value get an
invented value that satisfies their constraints and the properties they feed (heat_values); findings are
located on the offending key (heat_findings, heat_paths). A finding that may depend on an invented value is
decided by evidence: the stack is validated again with other invented values, and only a finding that changes
or goes is W1005 (heat_findings.settle).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from nfvcat.core import confine
from nfvcat.core.documents import Document
from nfvcat.core.problems import INVALID_YAML
from nfvcat.validation.emitted import HEAT_VALIDATION, INVENTED_VALUE
from nfvcat.validation.engines import heat_findings, heat_state, heat_values
from nfvcat.validation.engines.heat_handover import handover
from nfvcat.validation.engines.heat_offline import setup, tacker_base_hot
from nfvcat.validation.engines.heat_state import ENGINE, STATE
from nfvcat.validation.engines.jobs import EngineJob, JobContext
from nfvcat.validation.engines.worker import Job, Result, finding, serve


def jobs(doc: Document, ctx: JobContext) -> list[EngineJob]:
    """A template (HOT or CloudFormation format) once per example environment of its entry (or with the -e
    files), an environment alone."""
    if doc.kind in ("hot", "cfn"):
        env_sets = [[ex] for ex in ctx.examples] or [[os.path.abspath(e) for e in ctx.environments]]
        policy = confine.current().to_json()  # what the worker may read: the call's roots and size cap
        return [EngineJob(ENGINE, doc, {"file": doc.abspath, "environments": envs, "parameters": ctx.parameters,
                                        "confine": policy},
                          handover=lambda: handover(doc, ctx.read))
                for envs in env_sets]
    if doc.kind == "environment":
        return [EngineJob(ENGINE, doc, {"file": doc.abspath, "kind": "environment",
                                        "confine": confine.current().to_json()})]
    return []


def check(job: Job) -> Result:
    from heatclient.common import template_utils

    path = job["file"]
    overlay = dict(job.get("overlay") or {})
    # heatclient resolves a template's path (a buffer named /dev/fd/63, a shell's <(cmd), to /proc/PID/fd/63)
    STATE["overlay"] = {**{os.path.realpath(k): v for k, v in overlay.items()}, **overlay}
    STATE["policy"] = confine.Policy.from_json(job.get("confine"))
    STATE["handed_over"] = {one["text"]: one["data"] for one in job.get("parsed") or []}
    deps: dict[str, None] = {}
    STATE["looked_for"] = deps
    for env_path in job.get("environments") or []:
        deps[os.path.abspath(env_path)] = None
    if job.get("kind") == "environment":
        return {"findings": heat_findings.environment_findings(path, deps), "deps": deps}
    STATE["aliases"] = {}
    try:
        tacker = tacker_base_hot(path)
        if tacker is None:
            files, tpl = template_utils.get_template_contents(template_file=path)
        else:
            files, tpl = tacker
        env_files, env = template_utils.process_multiple_environments_and_files(
            env_paths=job.get("environments") or None)
    except Exception as exc:  # a nested template or get_file that cannot be read
        return {"findings": [heat_findings.bundle_finding(path, exc, job.get("environments") or [])], "deps": deps}
    files.update(env_files)
    # heatclient sends these as JSON, which turns its bytes into strings; Heat only ever sees strings.
    files = {url: body.decode("utf-8") if isinstance(body, bytes) else body for url, body in files.items()}
    for url in files:
        deps[heat_state.path_of(url)] = None

    params = dict(env.get("parameters") or {})
    params.update(job.get("parameters") or {})
    env["parameters"] = params
    if job.get("mode") == "heat-api":
        return {"findings": heat_findings.heat_api_verdict(tpl, files, env), "deps": deps}
    first = _round(tpl, files, env, params, {})
    later: list[Round] = []
    pending = {heat_findings.key(f) for f in first.findings if f["id"] == INVENTED_VALUE.id}
    tried = {stack: {n: heat_values.Tried((v,)) for n, v in values.items()} for stack, values in first.by_stack.items()}
    while pending and len(later) < MORE_ROUNDS:
        # A would-be W1005: validated again with other invented values (of another format each round) while it
        # stays; only what changes or goes is W1005.
        again = _round(tpl, files, env, params, tried)
        later.append(again)
        pending &= {heat_findings.key(f) for f in again.findings}
        new = False
        for stack, values in again.by_stack.items():
            for n, v in values.items():
                before = tried.setdefault(stack, {}).get(n, heat_values.Tried())
                if v not in before:
                    tried[stack][n], new = heat_values.Tried((*before, v)), True
        if not new:
            break  # no other value left to try
    return {"findings": heat_findings.settle(first.findings, [r.findings for r in later],
                                             [r.by_template for r in later]), "deps": deps}


# Rounds after the first for a finding that may come from an invented value: one per format of
# heat_values.GENERIC_STRINGS' first ones (an IP, a CIDR, a MAC, a UUID, a number) after the first's word.
MORE_ROUNDS = 5


@dataclass
class Round:
    findings: list[dict[str, Any]]  # located and marked (heat_findings.finish)
    by_stack: dict[str, dict[str, Any]]  # the values invented, per stack (the top level's and nested ones)
    by_template: dict[str, dict[str, Any]]  # the same, per template: '' the top level, a nested one's URL


def _round(tpl: Any, files: dict[str, Any], env: dict[str, Any], given: dict[str, Any],
           avoid: dict[str, dict[str, Any]]) -> Round:
    """Heat's strict validation of the stack, each parameter without a value given an invented one (with
    ``avoid``, the values of an earlier round per stack: other ones)."""
    from heat.common import exception, template_format
    from heat.engine import environment, stack, template

    params = dict(given)
    env = {**env, "parameters": params}
    findings: list[dict[str, Any]] = []
    invented: dict[str, Any] = {}
    STATE["nested_invented"] = {}
    STATE["invented_by_stack"] = {"nfvcat-validate": invented}
    STATE["avoid"] = avoid
    STATE["unfit"] = set()  # (template: '' or a nested one's URL, parameter) whose value fits not all it feeds
    top = avoid.get("nfvcat-validate", {})
    try:
        tmpl = template.Template(tpl, files=files, env=environment.Environment(env))
        for name, schema in tmpl.param_schemata().items():
            if name not in params and schema.default is None and name not in (env.get("parameter_defaults") or {}):
                value, fits = heat_values.invent_judged(
                    name, schema, tpl, heat_values.classes(tmpl.env, files), STATE["ctx"],
                    top.get(name, heat_values.NOTHING))
                invented[name] = params[name] = value
                if not fits:
                    STATE["unfit"].add(("", name))
        tmpl = template.Template(tpl, files=files, env=environment.Environment(env))
        stk = stack.Stack(STATE["ctx"], "nfvcat-validate", tmpl, strict_validate=True)
        heat_findings.validate(stk, findings)
    except exception.StackValidationFailed as exc:
        findings.append(finding(HEAT_VALIDATION.id, exc.path, exc.error_message, ENGINE))
    except exception.HeatException as exc:
        findings.append(finding(HEAT_VALIDATION.id, getattr(exc, "path", []) or [], str(exc), ENGINE))
    except template_format.yaml.YAMLError as exc:
        findings.append(finding(INVALID_YAML.id, [], f"invalid YAML: {exc}", ENGINE))
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        if os.environ.get("NFVCAT_DEBUG"):
            raise
        findings.append(finding(HEAT_VALIDATION.id, [], f"{type(exc).__name__}: {exc}", ENGINE))
    finally:
        STATE["avoid"] = {}
    known = frozenset(params) - set(invented)
    return Round([heat_findings.finish(f, tpl, files, invented, known) for f in findings],
                 {name: dict(values) for name, values in STATE["invented_by_stack"].items()},
                 {"": dict(invented), **{url: dict(v) for url, v in STATE["nested_invented"].items()}})


def main() -> None:
    serve(ENGINE, setup, check)


if __name__ == "__main__":
    main()
