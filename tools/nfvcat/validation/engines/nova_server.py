"""The server request Heat sends Nova for an OS::Nova::Server, checked against Nova's own API schema.

Planned in-process (``jobs``): per server, the properties that can be read without the cloud (name, metadata,
availability_zone, key_name, user_data and user_data_format, the ports of ``networks`` and the scheduler hints);
a resource of the template a property names (``get_resource``) stands for the UUID Neutron or Nova gives it, one
per resource. Per OS::Nova::ServerGroup, the body Heat sends. Checked in the Nova worker (``check``): the user
data is wrapped as Heat's ``NovaClientPlugin.build_userdata`` wraps it for the format (HEAT_CFNTOOLS, Heat's
``default_user_data_format``, when none is given; SOFTWARE_CONFIG; RAW as is), base64-encoded as novaclient's
``transform_userdata`` sends it, and the request body is validated with Nova's validator and the schema of
``POST /servers`` at the newest microversion (user_data at most 65,535 characters of base64, names and
metadata at most 255, a scheduler hint ``group`` a server group's UUID); the requested networks go through the
API's own ``ServersController._get_requested_networks`` (a port given twice). A server group's body is validated
with the schema of ``POST /os-server-groups`` at 2.64 (what Heat sends when it gives ``rules``) and the create
method's own check that only anti-affinity takes rules. Nova answers such a request 400 when the stack is
created, after Heat validated it.

Heat's wrapping is reproduced here, with Heat's own boot files read from its package: the Nova worker cannot
import Heat's client plugins beside Nova (both register an option ``host`` on one configuration).
tests/unit/test_nova_server.py compares the result with Heat's build_userdata, byte for byte.
"""

from __future__ import annotations

import base64
import email
import json
import string
import uuid
from email.mime import multipart, text
from importlib import util
from pathlib import Path
from typing import Any
from urllib import parse

from nfvcat.core import confine, hot
from nfvcat.core.documents import Document
from nfvcat.validation.emitted import SERVER_REQUEST
from nfvcat.validation.engines.jobs import EngineJob, JobContext
from nfvcat.validation.engines.worker import Job, Result, finding, load_frozen

ENGINE = "nova"
HEAT_DEFAULT_FORMAT = "HEAT_CFNTOOLS"  # heat.common.config's default_user_data_format (a test compares)
# The shortest metadata server URL Heat's get_cfn_metadata_server_url can return (an http URL, '/v1/' added):
# the site's own is at least as long, so the size found is a lower bound.
SHORTEST_CFN_URL = "http://h/v1/"
_PROPS = ("name", "metadata", "availability_zone", "key_name")
# A resource of the template named where Nova takes a UUID stands for the UUID it gets: the same for the same
# resource (a port named twice is the same port), distinct for distinct ones.
_STAND_IN = uuid.UUID("6f1c3b2e-8d5a-4c1e-9b7f-2a4d6e8f0c13")


def stand_in(resource: str) -> str:
    return str(uuid.uuid5(_STAND_IN, resource))


def jobs(doc: Document, ctx: JobContext) -> list[EngineJob]:
    out = []
    params = ctx.rules.parameters
    for name, body in hot.resources(doc.data, "OS::Nova::Server"):
        p = hot.props(body)
        request: dict[str, Any] = {}
        for key in _PROPS:
            value = hot.resolve(doc.data, p.get(key), params)
            if value is not hot.UNRESOLVED and value is not None and _literal(value):
                request[key] = value
        user_data = _text(doc, p.get("user_data"), params)
        fmt = hot.resolve(doc.data, p.get("user_data_format"), params)
        meta = body.get("metadata")
        if user_data is not None and fmt is not hot.UNRESOLVED:
            request["user_data"] = user_data
            request["user_data_format"] = fmt if isinstance(fmt, str) else HEAT_DEFAULT_FORMAT
            request["resource_metadata"] = meta if isinstance(meta, dict) and _literal(meta) else {}
        ports = _ports(doc, p.get("networks"), params)
        if ports:
            request["ports"] = ports
        hints = _hints(doc, p.get("scheduler_hints"), params)
        if hints:
            request["scheduler_hints"] = hints
        if request:
            out.append(EngineJob(ENGINE, doc, {"server": request}, ("resources", name, "properties")))
    for name, body in hot.resources(doc.data, "OS::Nova::ServerGroup"):
        p = hot.props(body)
        policies, rules = (hot.resolve(doc.data, p.get(k), params) for k in ("policies", "rules"))
        if isinstance(policies, list) and policies and isinstance(rules, dict) and rules and _literal(rules) \
                and _literal(policies):
            out.append(EngineJob(ENGINE, doc, {"server_group": {"policy": policies[0], "rules": rules}},
                                 ("resources", name, "properties")))
    return out


def _ports(doc: Document, networks: Any, params: dict[str, Any]) -> list[list[str] | None]:
    """The port of each ``networks`` item as Nova gets it, and how the template names it: a port the template
    creates (its stand-in UUID), a port given by id; None for an item without one (Heat makes a port of its own
    for it) or one not known offline."""
    out: list[list[str] | None] = []
    for item in networks if isinstance(networks, list) else []:
        port = item.get("port") if isinstance(item, dict) else None
        ref = hot.resource_ref(port)
        value = stand_in(ref) if ref else hot.resolve(doc.data, port, params)
        out.append([value, f"{{get_resource: {ref}}}" if ref else value] if isinstance(value, str) and value
                   else None)
    return out if sum(1 for p in out if p) > 1 else []


def _hints(doc: Document, hints: Any, params: dict[str, Any]) -> dict[str, Any]:
    """The scheduler hints Heat passes, those known offline: a hint naming a resource of the template
    (get_resource) is that resource's stand-in UUID."""
    out: dict[str, Any] = {}
    for key, raw in hints.items() if isinstance(hints, dict) else ():
        items = raw if isinstance(raw, list) else [raw]
        values = [stand_in(r) if (r := hot.resource_ref(v)) else hot.resolve(doc.data, v, params) for v in items]
        if all(v is not hot.UNRESOLVED and _literal(v) for v in values):
            out[str(key)] = values if isinstance(raw, list) else values[0]
    return out


def _literal(value: Any) -> bool:
    """No intrinsic function left anywhere in the value."""
    if isinstance(value, dict):
        return not (len(value) == 1 and next(iter(value)) in hot.FUNCTIONS) and all(map(_literal, value.values()))
    if isinstance(value, list):
        return all(map(_literal, value))
    return True


def _text(doc: Document, value: Any, params: dict[str, Any]) -> str | None:
    """The user data's text where the template alone gives it: a literal, a parameter's value, a local get_file,
    or a get_resource of an OS::Heat::SoftwareConfig whose config is one of those (Heat passes the config)."""
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) not in ("get_file", "get_resource"):
        value = hot.resolve(doc.data, value, params)
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        (fn, arg), = value.items()
        if fn == "get_file" and isinstance(arg, str) and not parse.urlparse(arg).scheme:
            try:  # as the call's policy allows (confine): under its roots, a regular file, bounded
                return confine.read_bytes(str(Path(doc.abspath).parent / arg)).decode("utf-8")
            except (OSError, UnicodeDecodeError):
                return None  # E1002's (E0015, E0016, E0004: confine.Refused)
        if fn == "get_resource" and isinstance(arg, str):
            resources = doc.data.get("resources") if isinstance(doc.data, dict) else None
            target = resources.get(arg) if isinstance(resources, dict) else None
            if isinstance(target, dict) and target.get("type") == "OS::Heat::SoftwareConfig":
                return _text(doc, hot.props(target).get("config"), params)
    return None


def heat_userdata(user_data: str, fmt: str, metadata: dict[str, Any], cfn_url: str = SHORTEST_CFN_URL) -> str | None:
    """What Heat's NovaClientPlugin.build_userdata returns for a server (instance_user None, as
    Server.handle_create calls it; the instance connection options at Heat's defaults); None for an Ignition
    config with metadata (Heat re-serialises it: its size is not known here)."""
    if fmt == "RAW":
        return user_data
    if fmt == "SOFTWARE_CONFIG" and _is_ignition(user_data):
        return None if metadata else user_data
    attachments: list[tuple[Any, ...]] = [
        (string.Template(_heat_file("config")).safe_substitute(add_custom_user=""), "cloud-config"),
        (string.Template(_heat_file("boothook.sh")).safe_substitute(add_custom_user=""), "boothook.sh",
         "cloud-boothook"),
        (_heat_file("part_handler.py"), "part-handler.py")]
    if fmt == "HEAT_CFNTOOLS":
        attachments.append((user_data, "cfn-userdata", "x-cfninitdata"))
    else:
        parts: Any = None
        try:
            parts = email.message_from_string(user_data)
        except Exception:  # Heat's own guard
            pass
        if parts and parts.is_multipart():
            attachments.extend((part.get_payload(), part.get_filename(), part.get_content_subtype())
                               for part in parts.get_payload())
        else:
            attachments.append((user_data, ""))
    if fmt == "HEAT_CFNTOOLS":
        attachments.append((_heat_file("loguserdata.py"), "loguserdata.py", "x-shellscript"))
    if metadata:
        attachments.append((json.dumps(metadata), "cfn-init-data", "x-cfninitdata"))
    if fmt == "HEAT_CFNTOOLS":
        attachments.append((cfn_url, "cfn-metadata-server", "x-cfninitdata"))
        boto = "\n".join(["[Boto]", "debug = 0", "is_secure = 0", "https_validate_certificates = 1",
                          "cfn_region_name = heat", f"cfn_region_endpoint = {parse.urlparse(cfn_url).hostname}"])
        attachments.append((boto, "cfn-boto-cfg", "x-cfninitdata"))
    return multipart.MIMEMultipart(_subparts=[_subpart(*a) for a in attachments]).as_string()


def _subpart(content: Any, filename: str, subtype: str | None = None) -> text.MIMEText:
    if subtype is None:
        subtype = Path(filename).stem if filename else ""
    content = "" if content is None else content
    try:
        content.encode("us-ascii")
        charset = "us-ascii"
    except UnicodeEncodeError:
        charset = "utf-8"
    msg = text.MIMEText(content, _subtype=subtype, _charset=charset) if subtype else \
        text.MIMEText(content, _charset=charset)
    msg.add_header("Content-Disposition", "attachment", filename=filename)
    return msg


def _is_ignition(user_data: str) -> bool:
    try:
        payload = json.loads(user_data)
        return bool(isinstance(payload, dict) and isinstance(payload.get("ignition"), dict)
                    and payload["ignition"].get("version"))
    except ValueError:
        return False


def _heat_file(name: str) -> str:
    """One of Heat's cloud-init boot files, from its installed package (not imported: see the module doc)."""
    spec = util.find_spec("heat")
    assert spec is not None and spec.submodule_search_locations
    return (Path(next(iter(spec.submodule_search_locations))) / "cloudinit" / name).read_text(encoding="utf-8")


def check(job: Job) -> Result:
    """Nova's verdict on the request body Heat would send (POST /servers, newest microversion)."""
    from nova.api.openstack.compute.schemas import servers
    from nova.api.validation import validators

    request = dict(job["server"])
    body: dict[str, Any] = {"name": "server", "flavorRef": "flavor"}  # placeholders: not what is checked here
    body.update({k: request[k] for k in _PROPS if k in request})
    if isinstance(body.get("metadata"), dict):  # Heat's NovaClientPlugin.meta_serialize
        body["metadata"] = {k: v if isinstance(v, str) else json.dumps(v) for k, v in body["metadata"].items()}
    fmt = str(request.get("user_data_format"))
    wrapped = None
    if "user_data" in request:
        wrapped = heat_userdata(str(request["user_data"]), fmt, dict(request.get("resource_metadata") or {}))
    if wrapped is not None:
        body["user_data"] = base64.b64encode(wrapped.encode("utf-8")).decode("utf-8")  # novaclient's
    full: dict[str, Any] = {"server": body}
    if request.get("scheduler_hints"):
        full["os:scheduler_hints"] = request["scheduler_hints"]
    schema = servers.create_v294
    findings = _networks(request.get("ports") or [])
    for error in validators._SchemaValidator(schema).validator.iter_errors(full):
        path = list(error.path)[1:]
        if error.path and error.path[0] == "os:scheduler_hints":
            hint = path[0] if path else ""
            shown = error.message if len(error.message) < 200 else error.message[:200] + "..."
            findings.append(finding(SERVER_REQUEST.id, ["scheduler_hints", *path[:1]],
                                    f"Nova's API refuses the server (HTTP 400): scheduler hint {hint}: {shown}"
                                    + (" (a server group's UUID, or get_resource of an OS::Nova::ServerGroup; "
                                       "not its name)" if hint == "group" else ""), ENGINE))
            continue
        if not path:
            continue  # about the placeholders or the body as a whole, not the template
        if path[0] == "user_data":
            how = "as written (RAW)" if fmt == "RAW" else (
                f"once Heat wraps it for user_data_format {fmt} in a MIME multipart with Heat's boot files"
                + (" (at least: with the shortest metadata server URL)" if fmt == "HEAT_CFNTOOLS" else ""))
            limit = schema["properties"]["server"]["properties"]["user_data"]["maxLength"]
            message = (f"user_data is {len(body['user_data'])} characters of base64 {how}, as novaclient sends it; "
                       f"Nova's API takes at most {limit}: the server is refused (HTTP 400) when the stack is "
                       "created")
        elif error.validator == "maxLength" and isinstance(error.instance, str):
            message = (f"Nova's API refuses the server (HTTP 400): {'.'.join(map(str, path))} is "
                       f"{len(error.instance)} characters as Heat sends it"
                       + (" (a value that is no string is sent as JSON)" if path[0] == "metadata" else "")
                       + f"; Nova takes at most {error.validator_value}")
        else:
            shown = error.message if len(error.message) < 200 else error.message[:200] + "..."
            message = f"Nova's API refuses the server (HTTP 400): {'.'.join(map(str, path))}: {shown}"
        findings.append(finding(SERVER_REQUEST.id, path[:2], message, ENGINE))
    return {"findings": findings, "deps": {}}


def _networks(ports: list[list[str] | None]) -> list[dict[str, Any]]:
    """Nova's API's own reading of the requested networks (ServersController._get_requested_networks): a port
    given twice is refused. An item without a known port stands for a port of its own (Heat makes one)."""
    servers, exc = load_frozen("nova.api.openstack.compute.servers", "webob.exc")
    requested = [{"port": p[0] if p else stand_in(f"heat-port-{i}")} for i, p in enumerate(ports)]
    controller = servers.ServersController.__new__(servers.ServersController)  # no set-up: a pure method
    for last in range(1, len(requested) + 1):  # the first item that makes the list refused
        try:
            controller._get_requested_networks(requested[:last])
        except exc.HTTPBadRequest as error:
            message = str(error.explanation)
            for p in ports:  # a stand-in UUID is named as the template names its port
                if p:
                    message = message.replace(p[0], p[1])
            return [finding(SERVER_REQUEST.id, ["networks", last - 1, "port"],
                            f"Nova's API refuses the server (HTTP 400): {message}", ENGINE)]
    return []


def check_server_group(job: Job) -> Result:
    """Nova's verdict on the server group Heat creates: the body at 2.64 (Heat sends policy and rules when it
    gives rules), then what ServerGroupController.create checks besides the schema."""
    from nova.api.openstack.compute.schemas import server_groups
    from nova.api.validation import validators

    group = dict(job["server_group"])
    body = {"server_group": {"name": "group", "policy": group["policy"], "rules": group["rules"]}}
    findings = []
    for error in validators._SchemaValidator(server_groups.create_v264).validator.iter_errors(body):
        path = list(error.path)[1:]
        if path[:1] in (["policy"], ["rules"]):
            key = "policies" if path[0] == "policy" else "rules"
            findings.append(finding(SERVER_REQUEST.id, [key, *path[1:2]], "Nova's API refuses the server group "
                                    f"(HTTP 400): {'.'.join(map(str, path))}: {error.message}", ENGINE))
    # ServerGroupController.create (nova/api/openstack/compute/server_groups.py), after the schema: its message
    if not findings and group["policy"] != "anti-affinity" and group["rules"]:
        findings.append(finding(SERVER_REQUEST.id, ["rules"], "Nova's API refuses the server group (HTTP 400): "
                                f"Only anti-affinity policy supports rules. (policy is {group['policy']})", ENGINE))
    return {"findings": findings, "deps": {}}
