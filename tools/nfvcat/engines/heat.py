"""Heat engine: openstack-heat's own template and resource validation, in-process and offline.

The cloud look-ups are neutralised (service availability, client-backed custom constraints such as
nova.flavor or glance.image, name-to-id resolution, and OS::Nova::Server's image/flavor and microversion
checks); whatever else needs a cloud falls back to template-level validation. Everything else is Heat's
code in strict mode, nested stacks included, which checks value types, allowed values and references.
Parameters without a value get a placeholder that satisfies their type and constraints, as a user's real
value would.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any
from urllib.parse import unquote, urlparse

from nfvcat.documents import Document
from nfvcat.engines.jobs import EngineJob, JobContext
from nfvcat.engines.worker import Job, Result, finding, serve
from nfvcat.rules.hot.e1001_heat_validation import HeatValidation
from nfvcat.rules.hot.e1002_heat_bundle import HeatBundle
from nfvcat.rules.hot.e1004_environment import HeatEnvironment
from nfvcat.rules.parsing.e0001_invalid_yaml import InvalidYaml

ENGINE = "heat"
_PLACEHOLDER_STRINGS = ["placeholder", "a", "0", "1", "a1", "192.0.2.1", "192.0.2.0/24",
                        "fa:16:3e:00:00:01", "example.org", "2026-01-01T00:00:00Z"]
_CONSTRAINT_PLACEHOLDERS = {
    "ip_addr": "192.0.2.1", "net_cidr": "192.0.2.0/24", "ip_or_cidr": "192.0.2.0/24",
    "mac_addr": "fa:16:3e:00:00:01", "iso_8601": "2026-01-01T00:00:00Z", "cron_expression": "0 * * * *",
    "dns_name": "vnf.example.org", "dns_domain": "example.org.", "rel_dns_name": "vnf",
    "expiration": "2099-01-01T00:00:00Z", "json_string": "{}", "timezone": "UTC",
}

_state: dict[str, Any] = {}


def jobs(doc: Document, ctx: JobContext) -> list[EngineJob]:
    """A template once per example environment of its entry (or with the -e files), an environment alone."""
    if doc.kind == "hot":
        env_sets = [[ex] for ex in ctx.examples] or [[os.path.abspath(e) for e in ctx.environments]]
        return [EngineJob(ENGINE, doc, {"file": doc.abspath, "environments": envs, "parameters": ctx.parameters})
                for envs in env_sets]
    if doc.kind == "environment":
        return [EngineJob(ENGINE, doc, {"file": doc.abspath, "kind": "environment"})]
    return []


def offline_context() -> Any:
    """Heat set up offline in this process (once), and the request context its stacks need: for the
    commands that use Heat's engine in-process (day0 resolves user data with it)."""
    if "ctx" not in _state:
        setup()
    return _state["ctx"]


def placeholder(schema: Any) -> Any:
    """A value that satisfies a Heat parameter schema's type and constraints, as a user's real one would."""
    return _placeholder(schema)


def setup() -> None:
    from heat.common import config, context
    from heat.engine import constraints, resource, resources, translation
    from heat.engine.clients import client_plugin
    from heat.engine.resources import stack_resource
    from heat.engine.resources.openstack.nova import server
    from heatclient.common import template_utils, utils

    config.cfg.CONF([], project="heat", default_config_files=[])
    resources.initialise()

    def _no_service_check(cls: Any, *args: Any, **kwargs: Any) -> None:
        return None

    resource.Resource._validate_service_availability = classmethod(_no_service_check)
    constraints.BaseCustomConstraint.validate = _offline_lookup
    translation.resolve_and_find = lambda value, *a, **k: value
    # Two more look-ups that OS::Nova::Server.validate makes, also inside nested stacks (which Heat
    # validates fully, not template-only): does the image/flavor exist, which microversions does Nova have.
    server.Server._validate_image_flavor = lambda self, image, flavor: None
    client_plugin.ClientPlugin.is_version_supported = lambda self, version: True
    stack_resource.StackResource.validate_nested_stack = _validate_nested_strictly

    def _local_only(url: str) -> bytes:
        if urlparse(url).scheme != "file":
            raise ValueError(f"not fetched offline: {url}")
        with open(unquote(urlparse(url).path), "rb") as f:
            return f.read()

    utils.read_url_content = _local_only
    template_utils.utils.read_url_content = _local_only
    _state["ctx"] = context.get_admin_context()


def _values_of_uncreated(res: Any) -> set[str]:
    """Properties of a template resource whose value depends on resources not created yet (Heat's own
    test, Properties._find_deps_any_in_init): Heat skips validating such values at the top level."""
    from heat.engine import function

    data = getattr(res.properties, "data", {}) or {}
    return {name for name, value in data.items()
            if any(dep.action == dep.INIT for dep in function.dependencies(value))}


def _validate_nested_strictly(self: Any) -> None:
    """Heat's StackResource.validate_nested_stack, but strict like the top level: Heat validates nested
    stacks lax, so a wrong value in a nested template would only fail at create time. Values that come
    from parent resources not yet created are given placeholders, as the top level skips them."""
    from heat.common import exception
    from heat.engine import template

    try:
        params = self.child_params()
        unknown = _values_of_uncreated(self)
        if unknown:  # '' until the parent's resources exist: give the child what a real value would be
            child = template.Template(self.child_template(), files=self.stack.t.files)
            schemata = child.param_schemata()
            for name in unknown & set(schemata):
                params[name] = _placeholder(schemata[name], _json_paths(self.child_template(), name))
        nested = self._parse_nested_stack(f"{self.stack.name}-{self.name}", self.child_template(), params)
        nested.strict_validate = True
        nested.validate()
    except AssertionError:
        raise
    except Exception as ex:
        raise exception.StackValidationFailed(
            error=ex, path=[self.stack.t.RESOURCES, f"{self.name}<{self.template_url}>"]) from None


def _offline_lookup(self: Any, value: Any, context: Any, template: Any = None) -> bool:
    """A client-backed constraint (nova.flavor, neutron.network...) without the cloud: the name may exist.

    One answer is known offline: Heat turns a string property whose value is null (an ``if`` whose false
    branch is null, say) into '', and Neutron's find-by-name-or-id never finds '', so the stack fails
    ("Unable to find policy with name or id ''", seen on the dev cloud). Other clients answer '' with a
    list and pass, so only Neutron's constraints are failed here."""
    from heat.engine.clients.os.neutron import neutron_constraints

    if value in ("", None) and isinstance(self, neutron_constraints.NeutronConstraint):
        self._error_message = f"Neutron finds no {getattr(self, 'resource_name', 'resource')} with name or id ''"
        return False
    return True


def _json_paths(tpl: Any, name: str) -> list[list[str]]:
    """The paths the template reads from a json parameter (``get_param: [nfv, CP, CP_WAN, network]``)."""
    found: list[list[str]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("get_param") if len(node) == 1 else None
            if (isinstance(ref, list) and len(ref) > 1 and ref[0] == name
                    and all(isinstance(k, str) for k in ref[1:])):
                found.append(list(ref[1:]))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(tpl)
    return found


def _placeholder(schema: Any, json_paths: list[list[str]] | None = None) -> Any:
    from heat.engine import constraints

    kinds = {type(c).__name__: c for c in schema.constraints}
    for c in schema.constraints:
        if isinstance(c, constraints.CustomConstraint) and c.name in _CONSTRAINT_PLACEHOLDERS:
            return _CONSTRAINT_PLACEHOLDERS[c.name]
    if "AllowedValues" in kinds and kinds["AllowedValues"].allowed:
        return kinds["AllowedValues"].allowed[0]
    kind = {"number": "Number", "boolean": "Boolean", "json": "Json",
            "comma_delimited_list": "CommaDelimitedList"}.get(schema.type, schema.type)
    if kind == "Number":
        rng = kinds.get("Range")
        if rng is not None:
            return rng.min if rng.min is not None else rng.max
        return 1
    if kind == "Boolean":
        return "false"
    if kind == "Json":  # every path the template reads holds a value, as a real one would
        tree: dict[str, Any] = {}
        for path in json_paths or []:
            node = tree
            for key in path[:-1]:
                child = node.setdefault(key, {})
                if not isinstance(child, dict):
                    break
                node = child
            else:
                node.setdefault(path[-1], "placeholder")
        return json.dumps(tree)
    length = kinds.get("Length")
    low = max(1, length.min or 1) if length is not None else 1
    high = length.max if length is not None and length.max is not None else None
    if kind == "CommaDelimitedList":
        return ",".join(["a"] * low)
    pattern = kinds.get("AllowedPattern")
    for candidate in _PLACEHOLDER_STRINGS:
        value = candidate if len(candidate) >= low else (candidate * low)[:low]
        if high is not None and len(value) > high:
            continue
        if pattern is None or re.match(pattern.pattern + r"\Z", value):
            return value
    return "x" * low


def _path_of(url: str) -> str:
    return unquote(urlparse(url).path) if url.startswith("file:") else url


def check(job: Job) -> Result:
    from heat.common import exception, template_format
    from heat.engine import environment, stack, template
    from heatclient.common import template_utils

    path = job["file"]
    deps: dict[str, None] = {}
    if job.get("kind") == "environment":
        return {"findings": _environment(path), "deps": deps}
    try:
        files, tpl = template_utils.get_template_contents(template_file=path)
        env_files, env = template_utils.process_multiple_environments_and_files(
            env_paths=job.get("environments") or None)
    except Exception as exc:  # a nested template or get_file that cannot be read
        return {"findings": [finding(HeatBundle.id, [], f"cannot bundle the template: {exc}", ENGINE)], "deps": deps}
    files.update(env_files)
    # heatclient sends these as JSON, which turns its bytes into strings; Heat only ever sees strings.
    files = {url: body.decode("utf-8") if isinstance(body, bytes) else body for url, body in files.items()}
    for url in files:
        deps[_path_of(url)] = None
    for env_path in job.get("environments") or []:
        deps[os.path.abspath(env_path)] = None

    params = dict(env.get("parameters") or {})
    params.update(job.get("parameters") or {})
    env["parameters"] = params
    findings: list[dict[str, Any]] = []
    try:
        tmpl = template.Template(tpl, files=files, env=environment.Environment(env))
        for name, schema in tmpl.param_schemata().items():
            if name not in params and schema.default is None and name not in (env.get("parameter_defaults") or {}):
                params[name] = _placeholder(schema, _json_paths(tpl, name))
        tmpl = template.Template(tpl, files=files, env=environment.Environment(env))
        stk = stack.Stack(_state["ctx"], "nfvcat-validate", tmpl, strict_validate=True)
        _validate(stk, findings)
    except exception.StackValidationFailed as exc:
        findings.append(finding(HeatValidation.id, exc.path, exc.error_message, ENGINE))
    except exception.HeatException as exc:
        findings.append(finding(HeatValidation.id, getattr(exc, "path", []) or [], str(exc), ENGINE))
    except template_format.yaml.YAMLError as exc:
        findings.append(finding(InvalidYaml.id, [], f"invalid YAML: {exc}", ENGINE))
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        if os.environ.get("NFVCAT_DEBUG"):
            raise
        findings.append(finding(HeatValidation.id, [], f"{type(exc).__name__}: {exc}", ENGINE))
    return {"findings": findings, "deps": deps}


def _environment(path: str) -> list[dict[str, Any]]:
    """Heat's own environment parser and loader: sections, types, resource_registry entries."""
    from heat.common import environment_format
    from heat.engine import environment

    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        env = environment_format.parse(text)
        environment.Environment(env)
    except ValueError as exc:
        return [finding(HeatEnvironment.id, [], str(exc), ENGINE)]
    except Exception as exc:
        return [finding(HeatEnvironment.id, [], f"{type(exc).__name__}: {exc}", ENGINE)]
    return []


_NESTED = re.compile(r"^(?P<name>.*)<(?P<url>file://[^>]+)>$")


def _in_nested_file(path: list[Any]) -> tuple[str | None, list[Any]]:
    """Heat names a nested stack's resource ``name<file:///path/t.yaml>`` in an error path: point the
    finding into that file instead, at the path below it."""
    for i in range(len(path) - 1, -1, -1):
        match = _NESTED.match(str(path[i]))
        if match:
            return _path_of(match.group("url")), path[i + 1:]
    return None, path


_NEEDS_CLOUD = {"AuthorizationFailure", "MissingCredentialError", "EndpointNotFound"}


def _template_only(res: Any, section: str, findings: list[dict[str, Any]]) -> None:
    from heat.common import exception

    try:
        res.validate_template()
    except exception.StackValidationFailed as exc:
        findings.append(finding(HeatValidation.id, [section, res.name, *exc.path], exc.error_message, ENGINE))


def _validate(stk: Any, findings: list[dict[str, Any]]) -> None:
    """Heat's ``Stack.validate(validate_res_tmpl_only=True)``, going on past the first bad resource.

    The stack-level checks stop at their first error as Heat's do; each resource and output is then
    validated on its own so that one run reports every broken resource. Resources whose full
    ``validate()`` needs a cloud fall back to ``validate_template()``, as Heat's own template
    validation does.
    """
    from heat.common import exception
    from heat.engine import parameter_groups

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
        try:
            try:
                result = res.validate()
            except exception.StackValidationFailed:
                raise
            except Exception:  # needs a cloud (Nova, Keystone...): template-level validation only
                result = res.validate_template()
            if result:
                findings.append(finding(HeatValidation.id, [section, res.name], str(result), ENGINE))
        except exception.StackValidationFailed as exc:
            if exc.error in _NEEDS_CLOUD:  # deep in a nested stack: what Heat checks without a cloud
                _template_only(res, section, findings)
                continue
            path = list(exc.path)
            if path[:1] != [section]:
                path = [section, res.name, *path]
            nested_file, path = _in_nested_file(path)
            findings.append(finding(HeatValidation.id, path, exc.error_message, ENGINE, nested_file))
        except exception.HeatException as exc:
            findings.append(finding(HeatValidation.id, [section, res.name], str(exc), ENGINE))
    out_section = stk.t.get_section_name(stk.t.OUTPUTS)
    for name, output in stk.outputs.items():
        try:
            output.validate()
        except exception.StackValidationFailed as exc:
            findings.append(finding(HeatValidation.id, [out_section, name, *exc.path[1:]], exc.error_message, ENGINE))


def main() -> None:
    serve(ENGINE, setup, check)


if __name__ == "__main__":
    main()
