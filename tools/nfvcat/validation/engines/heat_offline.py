"""Heat set up to validate offline in this process: the cloud look-ups neutralised (service availability,
client-backed custom constraints such as nova.flavor or glance.image, name-to-id resolution, and
OS::Nova::Server's image/flavor, microversion and absolute-limits checks), the files heatclient bundles read
from the disk only (a job's unsaved content first), and what a warm worker sees again and again kept.
"""

from __future__ import annotations

import binascii
import collections
import copy
import marshal
import os
import time
from typing import Any
from urllib.parse import unquote, urlparse

from nfvcat.core import confine
from nfvcat.validation.engines import heat_state, heat_values
from nfvcat.validation.engines.heat_cloud_errors import client_plugins, cloud_error_types
from nfvcat.validation.engines.heat_nested import validate_nested_strictly
from nfvcat.validation.engines.heat_state import STATE


def offline_context() -> Any:
    """Heat set up offline in this process (once), and the request context its stacks need: for the
    commands that use Heat's engine in-process (day0 resolves user data with it)."""
    if "ctx" not in STATE:
        setup()
    return STATE["ctx"]


def placeholder(name: str, schema: Any, tpl: Any, get_class: Any) -> Any:
    """A value for parameter ``name`` of ``tpl`` that satisfies its constraints and the properties it
    feeds, as a user's real one would (heat_values.invent)."""
    return heat_values.invent(name, schema, tpl, get_class, STATE.get("ctx"))


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
    STATE["cloud_errors"] = cloud_error_types()

    def _no_service_check(cls: Any, *args: Any, **kwargs: Any) -> None:
        return None

    resource.Resource._validate_service_availability = classmethod(_no_service_check)
    constraints.BaseCustomConstraint.validate = _offline_lookup
    translation.resolve_and_find = lambda value, *a, **k: value
    # Two more look-ups that OS::Nova::Server.validate makes, also inside nested stacks (which Heat
    # validates fully, not template-only): does the image/flavor exist, which microversions does Nova have.
    server.Server._validate_image_flavor = lambda self, image, flavor: None
    client_plugin.ClientPlugin.is_version_supported = lambda self, version: True
    for plugin in client_plugins():  # Nova's, Cinder's... own it (a server group's soft policies)
        if "is_version_supported" in vars(plugin):
            plugin.is_version_supported = lambda self, version: True
    # A server with metadata or personality files reads the project's absolute limits from Nova: offline
    # they are unknown, so they are taken as Nova's "unlimited" (-1) and not checked.
    nova.NovaClientPlugin.absolute_limits = lambda self: collections.defaultdict(lambda: -1)
    stack_resource.StackResource.validate_nested_stack = validate_nested_strictly

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
    STATE["ctx"] = context.RequestContext(is_admin=True, project_id="nfvcat-offline", user_id="nfvcat")


def _local_only(url: str) -> bytes:
    """A file heatclient bundles: local only, the job's unsaved content (``overlay``) before the disk."""
    if urlparse(url).scheme != "file":
        raise ValueError(f"not fetched offline: {url}")
    # Every file looked for is a dependency, found or not: adding a missing one changes the result. One outside
    # the call's roots is not even looked at (confine.Outside names it).
    path = unquote(urlparse(url).path)
    if os.path.abspath(path) not in (STATE.get("overlay") or {}):
        (STATE.get("policy") or confine.Policy()).check(path)
    STATE.setdefault("looked_for", {})[path] = None
    return heat_state.read(path)


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
        handed = STATE.get("handed_over") or {}
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


def tacker_base_hot(path: str) -> tuple[dict[str, Any], Any] | None:
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
            STATE["looked_for"][full] = None
            files[entry] = heat_state.text(full)
            STATE["aliases"][entry] = full
    STATE["looked_for"][os.path.abspath(path)] = None
    tpl = template_format.parse(heat_state.text(path))
    for body in (tpl.get("resources") or {}).values():  # a nested template added later changes the result
        kind = body.get("type") if isinstance(body, dict) else None
        if isinstance(kind, str) and kind.endswith((".yaml", ".yml")) and "/" not in kind:
            STATE["looked_for"][os.path.join(nested, kind)] = None
    return files, tpl
