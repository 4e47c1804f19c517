"""Heat engine: openstack-heat's own template and resource validation, in-process and offline.

The cloud look-ups are neutralised (service availability, client-backed custom constraints such as
nova.flavor or glance.image, name-to-id resolution, and OS::Nova::Server's image/flavor, microversion and
absolute-limits checks). Everything else is Heat's code in strict mode, nested stacks included, which
checks value types, allowed values and references; an exception any resource raises is a finding, unless
it comes from a cloud client (the resource is then checked template-only and reported as not validated
offline, E0009). Parameters without a value get an invented value that satisfies their constraints and
the properties they feed (heat_values); findings are located on the offending key (heat_paths).
"""

from __future__ import annotations

import binascii
import collections
import copy
import marshal
import os
import re
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote, urlparse

from nfvcat.core import hot
from nfvcat.core.documents import Document
from nfvcat.core.problems import INVALID_YAML
from nfvcat.validation.emitted import ENGINE_FAILURE, HEAT_BUNDLE, HEAT_ENVIRONMENT, HEAT_VALIDATION, INVENTED_VALUE
from nfvcat.validation.engines import heat_paths, heat_values
from nfvcat.validation.engines.jobs import EngineJob, JobContext
from nfvcat.validation.engines.worker import Job, Result, finding, serve

ENGINE = "heat"
_state: dict[str, Any] = {}


def jobs(doc: Document, ctx: JobContext) -> list[EngineJob]:
    """A template (HOT or CloudFormation format) once per example environment of its entry (or with the -e
    files), an environment alone."""
    if doc.kind in ("hot", "cfn"):
        env_sets = [[ex] for ex in ctx.examples] or [[os.path.abspath(e) for e in ctx.environments]]
        return [EngineJob(ENGINE, doc, {"file": doc.abspath, "environments": envs, "parameters": ctx.parameters},
                          handover=lambda: _handover(doc, ctx.read))
                for envs in env_sets]
    if doc.kind == "environment":
        return [EngineJob(ENGINE, doc, {"file": doc.abspath, "kind": "environment"})]
    return []


def _handover(doc: Document, read: Callable[[str], Document] | None) -> dict[str, Any]:
    """The data of the template and of the templates it nests (as the run read them: an edited VNF template
    nested in a chain), where heatclient's parse makes the same (parsed_as_heatclient_parses)."""
    parsed: list[dict[str, str]] = []
    seen: set[str] = set()

    def add(one: Document, depth: int) -> None:
        if one.abspath in seen or depth > 5:
            return
        seen.add(one.abspath)
        given = parsed_as_heatclient_parses(one)
        if given:
            parsed.append(given)
        if read is not None and one.kind == "hot":
            for _, path, _ in hot.nested_templates(one.data, os.path.dirname(one.abspath)):
                add(read(path), depth + 1)

    add(doc, 0)
    return {"parsed": parsed} if parsed else {}


def parsed_as_heatclient_parses(doc: Document) -> dict[str, str] | None:
    """``_parsed_as_heatclient_parses``, once per document (a nested template is handed over with every
    template that nests it, and the engine server keeps an unchanged document between validations)."""
    if "heat.parsed" not in doc.derived:
        doc.derived["heat.parsed"] = _parsed_as_heatclient_parses(doc)
    return doc.derived["heat.parsed"]


def _parsed_as_heatclient_parses(doc: Document) -> dict[str, str] | None:
    """The template's data as read here, for the worker to take instead of parsing the text again (YAML is a
    sixth of a changed template's validation), where heatclient's parse makes the same data by construction:
    libyaml read it (heatclient's loader is libyaml's, with the same constructors: timestamps stay strings),
    it is a mapping, not JSON (heatclient gives a text that starts with '{' to json), and the text heatclient
    parses (stripped) reads as the whole text does: nothing before it, only line ends after it, and its last
    node is no string that ends in white space (a block scalar's line ends, which stripping removes) under
    a key that does. The worker takes it only for that exact text; None where the parses may differ."""
    text, data, pos = doc.text, doc.data, doc.positions
    stripped = text.strip()
    if not (pos.libyaml and isinstance(data, dict) and text.startswith(stripped)
            and not text[len(stripped):].strip("\n") and not stripped.startswith("{")):
        return None
    last = max(pos.marks, key=lambda path: (pos.marks[path], len(path)), default=())
    value: Any = data
    for step in last:  # the marks name a key by its text: a mapping with keys of other types is not followed
        if isinstance(value, dict) and not all(isinstance(key, str) for key in value):
            return None
        if not isinstance(value, (dict, list)) or (isinstance(value, list) and not isinstance(step, int)):
            return None
        try:
            value = value[step]
        except (KeyError, IndexError, TypeError):
            return None
    if any(isinstance(v, str) and v != v.rstrip() for v in (value, *last[-1:])):
        return None
    return {"text": stripped, "data": binascii.b2a_base64(marshal.dumps(data), newline=False).decode()}


def offline_context() -> Any:
    """Heat set up offline in this process (once), and the request context its stacks need: for the
    commands that use Heat's engine in-process (day0 resolves user data with it)."""
    if "ctx" not in _state:
        setup()
    return _state["ctx"]


def placeholder(name: str, schema: Any, tpl: Any, get_class: Any) -> Any:
    """A value for parameter ``name`` of ``tpl`` that satisfies its constraints and the properties it
    feeds, as a user's real one would (heat_values.invent)."""
    return heat_values.invent(name, schema, tpl, get_class, _state.get("ctx"))


def setup() -> None:
    from heat.common import config, context, messaging
    from heat.engine import constraints, environment, resource, resources, translation
    from heat.engine.clients import client_plugin
    from heat.engine.clients.os import nova
    from heat.engine.resources import stack_resource
    from heat.engine.resources.openstack.nova import server
    from heatclient.common import template_utils, utils
    from oslo_i18n import _message

    config.cfg.CONF([], project="heat", default_config_files=[])
    resources.initialise()
    _keep_global_lookups(environment.ResourceRegistry, resources.global_env().registry)
    _keep_translations(_message.Message)
    # What Heat's own unit tests give the engine: an in-memory transport, so that resources which build
    # an RPC client at validate time (scaling groups, ResourceGroup, nested stacks) find one.
    messaging.setup("fake://", optional=True)
    _state["cloud_errors"] = _cloud_error_types()

    def _no_service_check(cls: Any, *args: Any, **kwargs: Any) -> None:
        return None

    resource.Resource._validate_service_availability = classmethod(_no_service_check)
    constraints.BaseCustomConstraint.validate = _offline_lookup
    translation.resolve_and_find = lambda value, *a, **k: value
    # Two more look-ups that OS::Nova::Server.validate makes, also inside nested stacks (which Heat
    # validates fully, not template-only): does the image/flavor exist, which microversions does Nova have.
    server.Server._validate_image_flavor = lambda self, image, flavor: None
    client_plugin.ClientPlugin.is_version_supported = lambda self, version: True
    for plugin in _client_plugins():  # Nova's, Cinder's... own it (a server group's soft policies)
        if "is_version_supported" in vars(plugin):
            plugin.is_version_supported = lambda self, version: True
    # A server with metadata or personality files reads the project's absolute limits from Nova: offline
    # they are unknown, so they are taken as Nova's "unlimited" (-1) and not checked.
    nova.NovaClientPlugin.absolute_limits = lambda self: collections.defaultdict(lambda: -1)
    stack_resource.StackResource.validate_nested_stack = _validate_nested_strictly

    utils.read_url_content = _local_only
    template_utils.utils.read_url_content = _local_only
    template_utils.request = _LocalRequest()  # the template and environment files it opens itself
    template_utils.template_format.yaml = _HandedOver(template_utils.template_format.yaml,
                                                      template_utils.template_format.yaml_loader)
    template_utils.template_format.parse = _keeping_parsed(template_utils.template_format.parse)
    template_utils.environment_format.parse = _keeping_parsed(template_utils.environment_format.parse)
    template_utils.is_template = _keeping_verdicts(template_utils.is_template)
    from heat.engine import stack

    stack.time = _NoYield()
    # A project id as every real request has one (the AWS pseudo parameters of a group quote it).
    _state["ctx"] = context.RequestContext(is_admin=True, project_id="nfvcat-offline", user_id="nfvcat")


def _local_only(url: str) -> bytes:
    """A file heatclient bundles: local only, the job's unsaved content (``overlay``) before the disk."""
    if urlparse(url).scheme != "file":
        raise ValueError(f"not fetched offline: {url}")
    # Every file looked for is a dependency, found or not: adding a missing one changes the result.
    path = unquote(urlparse(url).path)
    _state.setdefault("looked_for", {})[path] = None
    return _read(path)


def _read(path: str) -> bytes:
    text = _state.get("overlay", {}).get(os.path.abspath(path))
    if text is not None:
        return str(text).encode("utf-8", "surrogatepass")
    with open(path, "rb") as f:
        return f.read()


def _text(path: str) -> str:
    """``_read`` as text, newlines as ``open(path, encoding="utf-8")`` gives them."""
    return _read(path).decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


class _LocalRequest:
    """``urllib.request`` as heatclient's template_utils sees it: what it opens is read by ``_local_only``."""

    def __getattr__(self, name: str) -> Any:
        import urllib.request

        return getattr(urllib.request, name)

    @staticmethod
    def urlopen(url: str, *args: Any, **kwargs: Any) -> Any:
        import io

        return io.BytesIO(_local_only(url))


class _NoYield:
    """``time`` as heat.engine.stack sees it, without the ``time.sleep(0)`` that Stack.validate makes after
    each resource to let Heat's other green threads run: a worker has none, and on a loaded machine each
    such yield costs a time slice (3-5 ms a resource)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)

    @staticmethod
    def sleep(seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


class _HandedOver:
    """The ``yaml`` module as heatclient's template parse sees it: a text a job hands over parsed (its
    ``parsed``: see parsed_as_heatclient_parses) is that data; anything else is PyYAML's. heatclient's own
    parse does the rest (stripping, JSON, its checks)."""

    def __init__(self, yaml: Any, loader: Any):
        self._yaml = yaml
        self._loader = loader

    def __getattr__(self, name: str) -> Any:
        return getattr(self._yaml, name)

    def load(self, stream: Any, Loader: Any) -> Any:
        handed = _state.get("handed_over") or {}
        if Loader is self._loader and isinstance(stream, str) and stream in handed:
            return marshal.loads(binascii.a2b_base64(handed[stream]))
        return self._yaml.load(stream, Loader=Loader)


def _keep_global_lookups(registry_class: Any, global_registry: Any) -> None:
    """Heat looks resource types up in its global registry several times per resource (195 look-ups for
    the 55 resources of the six catalog HOT entries), and each look-up walks all its entries (202) for
    globs (``OS::*``, of which it has none). The global registry is complete once Heat's plugins are
    loaded (set-up) and nothing changes it afterwards, so its answers are kept. Users' environments (their
    own registries) are looked up as Heat does. 6 % of the CPU a template's validation takes."""
    iterable_by = registry_class.iterable_by
    kept: dict[tuple[str, str | None], list[Any]] = {}

    def keeping(self: Any, resource_type: str, resource_name: str | None = None) -> Any:
        if self is not global_registry:
            return iterable_by(self, resource_type, resource_name)
        named = resource_name if resource_name in self._registry.get("resources", {}) else None
        key = (resource_type, named)  # a name matters only where the registry names it
        if key not in kept:
            kept[key] = list(iterable_by(self, resource_type, resource_name))
        return iter(kept[key])

    registry_class.iterable_by = keeping


def _keep_translations(message_class: Any) -> None:
    """Heat turns oslo.i18n's lazy messages on (for its API to answer in each request's language), and a
    lazy message looks its text's translation up when it is made: gettext searches the locale directories
    for catalogues each time, and Heat makes hundreds of messages while it validates a template, not only
    for errors. The translation depends on the text, its domain, the locale and the catalogues installed,
    none of which change in a worker's life: it is kept per text. The messages are what they were (lazy,
    their parameters copied as before); 4 % of the CPU a template's validation takes."""
    translate = message_class._translate_msgid
    kept: dict[tuple[Any, ...], str] = {}

    def keeping(msgid: Any, domain: str, desired_locale: str | None = None, has_contextual_form: bool = False,
                has_plural_form: bool = False) -> str:
        key = (msgid, domain, desired_locale, has_contextual_form, has_plural_form)
        if key not in kept:
            kept[key] = translate(msgid, domain, desired_locale, has_contextual_form, has_plural_form)
        return kept[key]

    message_class._translate_msgid = staticmethod(keeping)


def _keeping_parsed(parse: Any, size: int = 256) -> Any:
    """heatclient's ``parse`` (of templates, of environments) keeping the data of the last ``size`` texts it
    parsed and returning a copy (Heat may change what it is given): heatclient parses the template, its
    environment and every template it bundles on every job, and a warm worker sees the same texts again
    and again (a VNF template nested in every chain, an unchanged example environment). A text that does
    not parse raises each time, as before.

    The data is kept marshalled: un-marshalling is a new copy, built in C, shared references included, as
    ``copy.deepcopy`` (in Python) made it. Data marshal cannot write (none that YAML's safe loader or JSON
    make) is kept as is and deep-copied."""
    parsed: collections.OrderedDict[str, tuple[bool, Any]] = collections.OrderedDict()

    def keeping(text: str) -> Any:
        if text in parsed:
            parsed.move_to_end(text)
            marshalled, kept = parsed[text]
            return marshal.loads(kept) if marshalled else copy.deepcopy(kept)
        data = parse(text)
        try:
            parsed[text] = (True, marshal.dumps(data))
        except ValueError:  # an object marshal does not know
            parsed[text] = (False, copy.deepcopy(data))
        while len(parsed) > size:
            parsed.popitem(last=False)
        return data

    return keeping


def _keeping_verdicts(is_template: Any, size: int = 256) -> Any:
    """heatclient's ``is_template`` (does a bundled file parse as a template?) keeping its answer for the
    last ``size`` texts: its parse raises for every file that is not a template (the cloud-config user data
    a server reads with get_file), which no parse memo keeps, so each job parsed them all again."""
    verdicts: collections.OrderedDict[str | bytes, bool] = collections.OrderedDict()

    def keeping(content: str | bytes) -> bool:
        if content in verdicts:
            verdicts.move_to_end(content)
        else:
            verdicts[content] = is_template(content)
            while len(verdicts) > size:
                verdicts.popitem(last=False)
        return verdicts[content]

    return keeping


def _values_of_uncreated(res: Any) -> set[str]:
    """Properties of a template resource whose value depends on resources not created yet (Heat's own
    test, Properties._find_deps_any_in_init): Heat skips validating such values at the top level."""
    from heat.engine import function

    data = getattr(res.properties, "data", {}) or {}
    return {name for name, value in data.items()
            if any(dep.action == dep.INIT for dep in function.dependencies(value))}


def _values_of_invented(res: Any) -> set[str]:
    """Properties of a template resource whose value reads a parameter of its stack that nfvcat gave
    an invented value: the child's parameter has no real value either, so it is invented for the child
    (its own constraints and uses), and findings that depend on it say so."""
    invented = _state["invented_by_stack"].get(res.stack.name) or {}
    data = getattr(res.properties, "data", {}) or {}
    if not invented or not isinstance(data, dict):
        return set()
    return {name for name, value in data.items() if heat_values.get_params(value) & set(invented)}


def _validate_nested_strictly(self: Any) -> None:
    """Heat's StackResource.validate_nested_stack, but strict like the top level: Heat validates nested
    stacks lax, so a wrong value in a nested template would only fail at create time. Values that come
    from parent resources not yet created are given placeholders, as the top level skips them."""
    from heat.common import exception
    from heat.engine import template

    try:
        params = self.child_params()
        child_tpl = self.child_template()  # a dict for a template resource, a Template for a group
        unknown = _values_of_uncreated(self) | _values_of_invented(self)
        nested_name = f"{self.stack.name}-{self.name}"
        if unknown and isinstance(params, dict):  # '' until the parent's resources exist: a real value
            child = child_tpl if isinstance(child_tpl, template.Template) else template.Template(
                child_tpl, files=self.stack.t.files)
            schemata = child.param_schemata()
            invented = _state["invented_by_stack"].setdefault(nested_name, {})
            for name in unknown & set(schemata):
                invented[name] = params[name] = heat_values.invent(
                    name, schemata[name], child.t, self.stack.env.get_class, self.context)
                _state["nested_invented"].setdefault(str(self.template_url), {})[name] = params[name]
        nested = self._parse_nested_stack(nested_name, child_tpl, params)
        # A group builds its members' template from its own resolved properties: values from resources
        # not created yet are '' there and invented values are no user's, so such members are checked as
        # Heat checks nested stacks (lax: properties known and required, not their values).
        nested.strict_validate = self.stack.strict_validate and not (
            unknown and isinstance(child_tpl, template.Template))
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


def _tacker_base_hot(path: str) -> tuple[dict[str, Any], Any] | None:
    """A VNF package's ``BaseHOT/<flavour>/`` template with a ``nested/`` directory: Tacker sends each
    ``nested/*.yaml`` to Heat as a file named by its base name (``type: VDU1.yaml``), and nothing else."""
    from heat.common import template_format

    here = os.path.dirname(os.path.abspath(path))
    nested = os.path.join(here, "nested")
    if os.path.basename(os.path.dirname(here)) != "BaseHOT" or not os.path.isdir(nested):
        return None
    files: dict[str, Any] = {}
    for entry in sorted(os.listdir(nested)):
        if entry.endswith((".yaml", ".yml")):
            full = os.path.join(nested, entry)
            _state["looked_for"][full] = None
            files[entry] = _text(full)
            _state["aliases"][entry] = full
    _state["looked_for"][os.path.abspath(path)] = None
    tpl = template_format.parse(_text(path))
    for body in (tpl.get("resources") or {}).values():  # a nested template added later changes the result
        kind = body.get("type") if isinstance(body, dict) else None
        if isinstance(kind, str) and kind.endswith((".yaml", ".yml")) and "/" not in kind:
            _state["looked_for"][os.path.join(nested, kind)] = None
    return files, tpl


def _path_of(url: str) -> str:
    if url in _state.get("aliases", {}):
        return str(_state["aliases"][url])
    return unquote(urlparse(url).path) if url.startswith("file:") else url


def check(job: Job) -> Result:
    from heat.common import exception, template_format
    from heat.engine import environment, stack, template
    from heatclient.common import template_utils

    path = job["file"]
    _state["overlay"] = dict(job.get("overlay") or {})
    _state["handed_over"] = {one["text"]: one["data"] for one in job.get("parsed") or []}
    deps: dict[str, None] = {}
    _state["looked_for"] = deps
    for env_path in job.get("environments") or []:
        deps[os.path.abspath(env_path)] = None
    if job.get("kind") == "environment":
        return {"findings": _environment(path), "deps": deps}
    _state["aliases"] = {}
    try:
        tacker = _tacker_base_hot(path)
        if tacker is None:
            files, tpl = template_utils.get_template_contents(template_file=path)
        else:
            files, tpl = tacker
        env_files, env = template_utils.process_multiple_environments_and_files(
            env_paths=job.get("environments") or None)
    except Exception as exc:  # a nested template or get_file that cannot be read
        return {"findings": [_bundle_finding(path, exc, job.get("environments") or [])], "deps": deps}
    files.update(env_files)
    # heatclient sends these as JSON, which turns its bytes into strings; Heat only ever sees strings.
    files = {url: body.decode("utf-8") if isinstance(body, bytes) else body for url, body in files.items()}
    for url in files:
        deps[_path_of(url)] = None

    params = dict(env.get("parameters") or {})
    params.update(job.get("parameters") or {})
    env["parameters"] = params
    findings: list[dict[str, Any]] = []
    if job.get("mode") == "heat-api":
        return {"findings": _heat_api_verdict(tpl, files, env), "deps": deps}
    invented: dict[str, Any] = {}
    _state["nested_invented"] = {}
    _state["invented_by_stack"] = {"nfvcat-validate": invented}
    try:
        tmpl = template.Template(tpl, files=files, env=environment.Environment(env))
        for name, schema in tmpl.param_schemata().items():
            if name not in params and schema.default is None and name not in (env.get("parameter_defaults") or {}):
                invented[name] = params[name] = heat_values.invent(
                    name, schema, tpl, tmpl.env.get_class, _state["ctx"])
        tmpl = template.Template(tpl, files=files, env=environment.Environment(env))
        stk = stack.Stack(_state["ctx"], "nfvcat-validate", tmpl, strict_validate=True)
        _validate(stk, findings)
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
    given = frozenset(params) - set(invented)
    return {"findings": [_finish(f, tpl, files, invented, given) for f in findings], "deps": deps}


def _bundle_finding(path: str, exc: Exception, environments: list[str]) -> dict[str, Any]:
    """E1002 at the key naming the file that could not be read (get_file, a template resource type, an
    environment's resource_registry entry), in the template or in the environment that names it."""
    from heat.common import template_format

    missing = getattr(exc, "filename", None) or next(iter(re.findall(r"'(/[^']+)'", str(exc))), None)
    message = f"cannot bundle the template: {exc}"
    if not missing:
        return finding(HEAT_BUNDLE.id, [], message, ENGINE)
    for source in [path, *environments]:
        try:
            data = template_format.yaml.load(_text(source), Loader=template_format.yaml_loader)
        except Exception:  # unreadable: the message names the file
            continue
        where = heat_paths.missing_file(data, os.path.dirname(os.path.abspath(source)), str(missing))
        if where:
            return finding(HEAT_BUNDLE.id, where, message, ENGINE, None if source == path else os.path.abspath(source))
    return finding(HEAT_BUNDLE.id, [], message, ENGINE)


def _finish(found: dict[str, Any], tpl: Any, files: dict[str, Any], invented: dict[str, Any],
            given: frozenset[str]) -> dict[str, Any]:
    """The path of the offending key (in the nested file when it is there); a Heat error that may come
    from a value nfvcat invented is W1005, and says so."""
    if found["id"] not in (HEAT_VALIDATION.id, ENGINE_FAILURE.id):
        return found
    data, values = tpl, invented
    if found.get("file"):  # in a nested template: what was invented for its parameters
        from heat.common import template_format

        url = next((u for u in files if _path_of(u) == found["file"]), None)
        values = _state["nested_invented"].get(url or "", {})
        try:
            data = template_format.parse(files[url]) if url else {}
        except Exception:
            data = {}
    found = {**found, "path": heat_paths.refine(data, found["path"], found["message"],
                                                given if data is tpl else frozenset())}
    if found["id"] != HEAT_VALIDATION.id:
        return found
    names = heat_values.depends_on(data, found["path"], found["message"], values)
    if not names:
        return found
    shown = ", ".join(f"{n}={_short(repr(values[n]))}" for n in names)
    return {**found, "id": INVENTED_VALUE.id, "message": f"{found['message']} (with the value nfvcat invented for "
            f"{shown}, which has none: give one with -P/-e to validate this)"}


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _heat_api_verdict(tpl: Any, files: dict[str, Any], env: dict[str, Any]) -> list[dict[str, Any]]:
    """What Heat's template-validate API answers (``EngineService.validate_template``): lax
    ``Stack.validate(validate_res_tmpl_only=True)``, the first error only, no placeholders. A reference
    for comparing nfvcat with Heat on other people's templates (tests/corpus), with the same offline
    set-up as the strict validation."""
    from heat.common import exception
    from heat.engine import environment, stack, template

    try:
        tmpl = template.Template(tpl, files=files, env=environment.Environment(env))
        stk = stack.Stack(_state["ctx"], "dummy", tmpl, strict_validate=False)
        stk.validate(validate_res_tmpl_only=True)
    except Exception as exc:  # the API answers {'Error': str(ex)} (or a 500 for other exceptions)
        rule = ENGINE_FAILURE.id if _cloud_cause(exc) is not None else HEAT_VALIDATION.id
        message = str(exc) if isinstance(exc, exception.HeatException) else f"{type(exc).__name__}: {exc}"
        return [finding(rule, getattr(exc, "path", []) or [], message, ENGINE)]
    return []


def _environment(path: str) -> list[dict[str, Any]]:
    """Heat's own environment parser and loader: sections, types, resource_registry entries."""
    from heat.common import environment_format
    from heat.engine import environment

    text = _text(path)
    try:
        env = environment_format.parse(text)
        environment.Environment(env)
    except ValueError as exc:
        message = str(exc)
    except Exception as exc:
        message = f"{type(exc).__name__}: {exc}"
    else:
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
            return _path_of(match.group("url")), path[i + 1:]
    return None, path


# Heat's own exceptions that mean "the cloud said no" or "there is no cloud", as opposed to a template error.
_HEAT_CLOUD_ERRORS = ("AuthorizationFailure", "MissingCredentialError", "NotAuthenticated", "Forbidden",
                      "ClientNotAvailable", "KeystoneServiceNameConflict", "ResourceTypeUnavailable")


def _client_plugins() -> list[Any]:
    from heat.engine import clients

    mgr = clients._mgr
    return [mgr[name].plugin for name in mgr.names()] if mgr else []


def _cloud_error_types() -> tuple[type[BaseException], ...]:
    """The exceptions a cloud look-up raises: those of every client Heat's client plugins declare
    (novaclient, neutronclient, keystoneauth...), Heat's own authentication errors, connection errors
    and RPC failures. Nothing else is taken for "needs a cloud"."""
    import inspect

    import oslo_messaging
    import requests
    from heat.common import exception

    found: list[type[BaseException]] = [getattr(exception, name) for name in _HEAT_CLOUD_ERRORS]
    found += [requests.exceptions.ConnectionError, oslo_messaging.MessagingException, ConnectionError]
    for plugin in _client_plugins():
        modules = getattr(plugin, "exceptions_module", None)
        for module in modules if isinstance(modules, list) else [modules] if modules else []:
            if module is exception:  # Heat's own: template errors among them
                continue
            found += [c for c in vars(module).values()
                      if inspect.isclass(c) and issubclass(c, Exception) and not issubclass(c, exception.HeatException)]
    return tuple(dict.fromkeys(found))


def _cloud_cause(exc: BaseException) -> BaseException | None:
    """The cloud error behind ``exc``, if any: Heat wraps them (``StackValidationFailed`` naming the
    original type, or raised while handling it, as OS::Heat::Stack does for a remote region)."""
    errors = _state["cloud_errors"]
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, errors):
            return current
        wrapped = getattr(current, "error", None)
        if isinstance(wrapped, str) and wrapped in {t.__name__ for t in errors if t.__module__.startswith(
                ("heat.common.exception", "keystoneauth1"))}:
            return current
        current = current.__cause__ or current.__context__
    return None


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


def _validate(stk: Any, findings: list[dict[str, Any]]) -> None:
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
            if _cloud_cause(exc) is not None:
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


def main() -> None:
    serve(ENGINE, setup, check)


if __name__ == "__main__":
    main()
