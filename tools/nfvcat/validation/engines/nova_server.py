"""The server request Heat sends Nova for an OS::Nova::Server, checked against Nova's own API schema.

Planned in-process (``jobs``): per server, the properties that can be read without the cloud (name, metadata,
availability_zone, key_name, user_data and user_data_format). Checked in the Nova worker (``check``): the user
data is wrapped as Heat's ``NovaClientPlugin.build_userdata`` wraps it for the format (HEAT_CFNTOOLS, Heat's
``default_user_data_format``, when none is given; SOFTWARE_CONFIG; RAW as is), base64-encoded as novaclient's
``transform_userdata`` sends it, and the request body is validated with Nova's validator and the schema of
``POST /servers`` at the newest microversion (user_data at most 65,535 characters of base64, names and
metadata at most 255). Nova answers such a request 400 when the stack is created, after Heat validated it.

Heat's wrapping is reproduced here, with Heat's own boot files read from its package: the Nova worker cannot
import Heat's client plugins beside Nova (both register an option ``host`` on one configuration).
tests/unit/test_nova_server.py compares the result with Heat's build_userdata, byte for byte.
"""

from __future__ import annotations

import base64
import email
import json
import string
from email.mime import multipart, text
from importlib import util
from pathlib import Path
from typing import Any
from urllib import parse

from nfvcat.core import confine, hot
from nfvcat.core.documents import Document
from nfvcat.validation.emitted import SERVER_REQUEST
from nfvcat.validation.engines.jobs import EngineJob, JobContext
from nfvcat.validation.engines.worker import Job, Result, finding

ENGINE = "nova"
HEAT_DEFAULT_FORMAT = "HEAT_CFNTOOLS"  # heat.common.config's default_user_data_format (a test compares)
# The shortest metadata server URL Heat's get_cfn_metadata_server_url can return (an http URL, '/v1/' added):
# the site's own is at least as long, so the size found is a lower bound.
SHORTEST_CFN_URL = "http://h/v1/"
_PROPS = ("name", "metadata", "availability_zone", "key_name")


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
        if request:
            out.append(EngineJob(ENGINE, doc, {"server": request}, ("resources", name, "properties")))
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
    schema = servers.create_v294
    findings = []
    for error in validators._SchemaValidator(schema).validator.iter_errors({"server": body}):
        path = list(error.path)[1:]
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
