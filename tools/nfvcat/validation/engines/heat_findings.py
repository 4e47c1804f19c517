"""The Heat engine's findings: Heat's verdicts on a template, its resources and outputs (strict, going on past
the first bad resource), on an environment, and on the files a template bundles; located on the offending
key (heat_paths), in the nested file when the error is there, and marked W1005 where a Heat error may come
from a value nfvcat invented (heat_values)."""

from __future__ import annotations

import os
import re
from typing import Any

from nfvcat.core import confine
from nfvcat.core.problems import NOT_REGULAR, OUTSIDE, TOO_LARGE
from nfvcat.validation.emitted import ENGINE_FAILURE, HEAT_BUNDLE, HEAT_ENVIRONMENT, HEAT_VALIDATION, INVENTED_VALUE
from nfvcat.validation.engines import heat_paths, heat_state, heat_values
from nfvcat.validation.engines.heat_cloud_errors import cloud_cause
from nfvcat.validation.engines.heat_state import ENGINE, STATE
from nfvcat.validation.engines.worker import finding


def bundle_finding(path: str, exc: Exception, environments: list[str], what: str = "template") -> dict[str, Any]:
    """E1002 at the key naming the file that could not be read (get_file, a template resource type, an
    environment's resource_registry entry), in the template or in the environment that names it; with the
    file of that directory its name most likely misspells."""
    from heat.common import template_format

    from nfvcat.core import spelling

    missing = getattr(exc, "filename", None) or next(iter(re.findall(r"'(/[^']+)'", str(exc))), None)
    message = f"cannot bundle the {what}: {exc}"
    rule = HEAT_BUNDLE.id
    if isinstance(exc, confine.Refused):  # named, never read: the message says which file and why, no more
        rule = {confine.Outside: OUTSIDE.id, confine.NotRegular: NOT_REGULAR.id}.get(type(exc), TOO_LARGE.id)
        message = f"{exc.filename}: {exc.why}"
    elif missing:  # a file of the project that is not there: the one its name most likely misspells
        try:
            near = spelling.closest(os.path.basename(str(missing)), os.listdir(os.path.dirname(str(missing))))
        except OSError:
            near = None
        if near:
            message += f"; did you mean '{near}'?"
    if not missing:
        return finding(rule, [], message, ENGINE)
    for source in [path, *environments]:
        try:
            data = template_format.yaml.load(heat_state.text(source), Loader=template_format.yaml_loader)
        except Exception:  # unreadable: the message names the file
            continue
        where = heat_paths.missing_file(data, os.path.dirname(os.path.abspath(source)), str(missing))
        if where:
            return finding(rule, where, message, ENGINE, None if source == path else os.path.abspath(source))
    return finding(rule, [], message, ENGINE)


def finish(found: dict[str, Any], tpl: Any, files: dict[str, Any], invented: dict[str, Any],
            given: frozenset[str]) -> dict[str, Any]:
    """The path of the offending key (in the nested file when it is there); a Heat error that may come
    from a value nfvcat invented is W1005, and says so."""
    if found["id"] not in (HEAT_VALIDATION.id, ENGINE_FAILURE.id):
        return found
    data, values, scope = tpl, invented, ""
    if found.get("file"):  # in a nested template: what was invented for its parameters
        from heat.common import template_format

        url = next((u for u in files if heat_state.path_of(u) == found["file"]), None)
        values, scope = STATE["nested_invented"].get(url or "", {}), url or ""
        try:
            data = template_format.parse(files[url]) if url else {}
        except Exception:
            data = {}
    found = {**found, "path": heat_paths.refine(data, found["path"], found["message"],
                                                given if data is tpl else frozenset())}
    involved = heat_paths.conflict(data, found["path"], found["message"])
    if involved:  # a conflict between properties: at the last of them, naming each
        props = heat_paths.at(data, [*found["path"][:2], "properties"])
        found = {**found, "path": [*found["path"][:2], "properties", involved[-1]],
                 "message": f"{found['message']} [{', '.join(f'{k}: {_short(repr(props[k]))}' for k in involved)}]"}
    if found["id"] != HEAT_VALIDATION.id:
        return found
    names = heat_values.depends_on(data, found["path"], found["message"], values)
    if not names:
        return found
    shown = ", ".join(f"{n}={_short(repr(values[n]))}" for n in names)
    return {**found, "id": INVENTED_VALUE.id, "heat_message": found["message"],
            "tried": {n: values[n] for n in names}, "scope": scope, "all_invented": _all_invented(),
            "fit": all((scope, n) not in STATE.get("unfit", ()) for n in names),
            "message": f"{found['message']} (with the value nfvcat invented for {shown}, which has none: give "
                       "one with -P/-e to validate this)"}


def _all_invented() -> list[Any]:
    """Every value this round invented, the top level's and nested stacks'."""
    return [v for values in STATE["invented_by_stack"].values() for v in values.values()]


_QUOTED = re.compile(r"'([^']*)'|\"([^\"]*)\"")


def _masked(message: str, values: list[Any]) -> str:
    """A message with each quoted text that is (part of) an invented value masked: what Heat says about the
    value, whatever the value (a string parameter indexed into an IP address fails on any character)."""
    texts = [str(v) for v in values]

    def mask(match: re.Match[str]) -> str:
        quoted = match.group(1) if match.group(1) is not None else match.group(2)
        return "'<invented>'" if quoted and any(quoted in t for t in texts) else match.group(0)

    return _QUOTED.sub(mask, message)


def key(f: dict[str, Any]) -> tuple[Any, ...]:
    """What makes two rounds' findings the same: file, path, message with the invented values masked."""
    return _key(f)


def _key(f: dict[str, Any]) -> tuple[Any, ...]:
    message = f.get("heat_message", f["message"])
    return f.get("file"), tuple(map(str, f["path"])), _masked(message, f.get("all_invented", []))


def settle(first: list[dict[str, Any]], rounds: list[list[dict[str, Any]]],
           values: list[dict[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """W1005 by evidence: a first round's finding that may depend on an invented value is an error (E1001,
    Heat's message) when every later round, each with other values (``values``: what each invented, by
    template: '' for the top level, a nested template's URL), finds the same, the values masked; W1005 naming
    the values tried when it changes or goes, when no other value could be tried, or when no value nfvcat can
    make satisfies the parameter's constraints and every property it feeds (a user's may: no evidence)."""
    agains = [{_key(f) for f in found} for found in rounds]
    out = []
    for f in first:
        tried = f.get("tried")
        if f["id"] != INVENTED_VALUE.id or not isinstance(tried, dict):
            out.append(f)
            continue
        laters = [v.get(f.get("scope", ""), {}) for v in values]
        other = {n: vs for n in tried if (vs := [later[n] for later in laters if n in later and later[n] != tried[n]])}
        stays = bool(agains) and all(_key(f) in again for again in agains)
        if other and f.get("fit") and stays:  # fit values, and others give the same: no value will do
            fed = ", ".join(f"{n} (invented {_short(repr(v))}, then {_then(other[n])})" for n, v in tried.items()
                            if n in other)
            out.append({**f, "id": HEAT_VALIDATION.id, "message": f"{f['heat_message']} [whatever the value of "
                        f"parameter {fed}]"})
            continue
        shown = ", ".join(f"{n}={_short(repr(v))}" + (f", then {_then(other[n])}" if n in other else "")
                          for n, v in tried.items())
        if f.get("fit") is False:
            why = (f"about the value nfvcat invented for a parameter without one ({shown}): no value it can make "
                   "satisfies the parameter's constraints and everything it feeds")
        elif other:
            why = f"Heat's verdict changes with the value nfvcat invents for a parameter without one: tried {shown}"
        else:
            why = f"about the only value nfvcat could invent for a parameter without one ({shown})"
        out.append({**f, "message": f"{f['heat_message']} ({why}; give it a value with -P/-e to validate this)"})
    return [{k: v for k, v in f.items() if k not in _WORKING} for f in out]


def _then(values: list[Any]) -> str:
    return ", ".join(_short(repr(v)) for v in dict.fromkeys(values))


_WORKING = ("heat_message", "tried", "scope", "all_invented", "fit")  # what settle reads, not sent


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def heat_api_verdict(tpl: Any, files: dict[str, Any], env: dict[str, Any]) -> list[dict[str, Any]]:
    """What Heat's template-validate API answers (``EngineService.validate_template``): lax
    ``Stack.validate(validate_res_tmpl_only=True)``, the first error only, no placeholders. A reference
    for comparing nfvcat with Heat on other people's templates (tests/corpus), with the same offline
    set-up as the strict validation."""
    from heat.common import exception
    from heat.engine import environment, stack, template

    try:
        tmpl = template.Template(tpl, files=files, env=environment.Environment(env))
        stk = stack.Stack(STATE["ctx"], "dummy", tmpl, strict_validate=False)
        stk.validate(validate_res_tmpl_only=True)
    except Exception as exc:  # the API answers {'Error': str(ex)} (or a 500 for other exceptions)
        rule = ENGINE_FAILURE.id if cloud_cause(exc) is not None else HEAT_VALIDATION.id
        message = str(exc) if isinstance(exc, exception.HeatException) else f"{type(exc).__name__}: {exc}"
        return [finding(rule, getattr(exc, "path", []) or [], message, ENGINE)]
    return []


def environment_findings(path: str, deps: dict[str, None] | None = None) -> list[dict[str, Any]]:
    """Heat's own environment parser and loader: sections, types, resource_registry entries; then every file
    the environment names read as `openstack stack create -e` reads it (heatclient's
    process_multiple_environments_and_files: resource_registry files relative to the environment), before
    Heat is called: one missing is E1002 at its entry."""
    from heat.common import environment_format
    from heat.engine import environment
    from heatclient.common import template_utils

    text = heat_state.text(path)
    try:
        env = environment_format.parse(text)
        environment.Environment(env)
    except ValueError as exc:
        message = str(exc)
    except Exception as exc:
        message = f"{type(exc).__name__}: {exc}"
    else:
        try:
            files, _ = template_utils.process_multiple_environments_and_files(env_paths=[path])
        except Exception as exc:  # a file the environment names that cannot be read
            return [bundle_finding(path, exc, [], "environment")]
        if deps is not None:
            deps.update(dict.fromkeys(heat_state.path_of(url) for url in files))
        return []
    try:  # the key the message names (a section, a registry entry)
        data = environment_format.yaml.load(text, Loader=environment_format.template_format.yaml_loader)
    except Exception:
        data = None
    return [finding(HEAT_ENVIRONMENT.id, heat_paths.refine(data, [], message), message, ENGINE)]


_NESTED = re.compile(r"^(?P<name>.*)<(?P<url>(?!nested_stack>)[^>]+)>$")


def _in_nested_file(path: list[Any]) -> tuple[str | None, list[Any]]:
    """Heat names a nested stack's resource ``name<file:///path/t.yaml>`` in an error path: point the
    finding into that file instead, at the path below it."""
    for i in range(len(path) - 1, -1, -1):
        match = _NESTED.match(str(path[i]))
        if match:
            return heat_state.path_of(match.group("url")), path[i + 1:]
    return None, path


def _offline(section: str, res: Any, exc: BaseException) -> dict[str, Any]:
    message = exc.error_message if hasattr(exc, "error_message") else str(exc)
    return finding(ENGINE_FAILURE.id, [section, res.name], f"cannot validate resource '{res.name}' ({res.type()}) "
                   f"offline: Heat reaches for a cloud ({type(exc).__name__}: {message})", ENGINE)


def _template_only(res: Any, section: str, findings: list[dict[str, Any]]) -> None:
    from heat.common import exception

    try:
        res.validate_template()
    except exception.StackValidationFailed as exc:
        findings.append(_resource_finding(section, res, exc))


def _resource_finding(section: str, res: Any, exc: Any) -> dict[str, Any]:
    from heat.common import exception

    if isinstance(exc, exception.StackValidationFailed):
        path = list(exc.path)
        message = exc.error_message
    else:  # PropertyUnspecifiedError, ResourcePropertyConflict...: Heat's message, the resource's path
        path, message = [], str(exc)
    if path[:1] != [section]:
        path = [section, res.name, *path]
    nested_file, path = _in_nested_file(path)
    return finding(HEAT_VALIDATION.id, path, message, ENGINE, nested_file)


def validate(stk: Any, findings: list[dict[str, Any]]) -> None:
    """Heat's ``Stack.validate()`` in strict mode, going on past the first bad resource.

    The stack-level checks stop at their first error as Heat's do; each resource and output is then
    validated on its own so that one run reports every broken resource. An exception a resource's
    ``validate()`` raises is a finding with Heat's message, unless it comes from a cloud look-up (a
    client or authentication error): the resource is then checked as far as Heat can without a cloud
    (``validate_template()``) and the rest is reported as not validated offline (E0009).
    Resources with an ``external_id`` are not validated, as Heat does not.
    """
    from heat.common import exception
    from heat.engine import function, parameter_groups

    stk.t.validate()
    stk.parameters.validate(context=stk.context, validate_value=True)
    parameter_groups.ParameterGroups(stk.t).validate()
    stk.t.conditions(stk).validate()
    resources = stk.resources
    dup = set(stk.parameters) & set(resources)
    if dup:
        raise exception.StackValidationFailed(message=f"Duplicate names {sorted(dup)}")
    stk._update_all_resource_data(for_resources=True, for_outputs=True)
    section = stk.t.get_section_name(stk.t.RESOURCES)
    for res in stk.dependencies:
        if res.external_id is not None:  # an existing resource adopted as is: Heat checks nothing
            continue
        try:
            result = res.validate()
            if result:
                findings.append(finding(HEAT_VALIDATION.id, [section, res.name], str(result), ENGINE))
        except AssertionError:
            raise
        except Exception as exc:
            if cloud_cause(exc) is not None:
                findings.append(_offline(section, res, exc))
                _template_only(res, section, findings)
            elif isinstance(exc, exception.HeatException):
                findings.append(_resource_finding(section, res, exc))
            else:  # what Heat's Stack.validate makes of any other exception
                findings.append(_resource_finding(section, res, exception.StackValidationFailed(
                    error=exc, resource=res)))
    out_section = stk.t.get_section_name(stk.t.OUTPUTS)
    for name, output in stk.outputs.items():
        try:
            output.validate()
            # Heat resolves outputs when the stack is created: a reference to no resource fails it.
            list(function.dependencies(output._value, f"{out_section}.{name}.value"))
        except exception.StackValidationFailed as exc:
            findings.append(finding(HEAT_VALIDATION.id, [out_section, name, *exc.path[1:]], exc.error_message, ENGINE))
        except (exception.InvalidTemplateReference, exception.InvalidTemplateAttribute) as exc:
            findings.append(finding(HEAT_VALIDATION.id, [out_section, name, "value"], str(exc), ENGINE))
