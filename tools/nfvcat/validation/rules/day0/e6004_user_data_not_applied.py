"""E6004: User data that cloud-init drops or never applies."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from nfvcat.core import cloudconfig, hot
from nfvcat.core.documents import Document
from nfvcat.core.findings import RawFinding
from nfvcat.validation.rules.base import Context, Rule

# heat.common.config's default_user_data_format: what a server without user_data_format gets
HEAT_DEFAULT_FORMAT = "HEAT_CFNTOOLS"
# Types Heat's own part handler (heat/cloudinit/part_handler.py, attached to every server's user data but RAW's)
# and cloudbase-init take
HEAT_HANDLED = frozenset({"text/x-cfninitdata"})
# The config resources whose config Heat hands to a server as cloud-config text
_CLOUD_CONFIG_RESOURCES = ("OS::Heat::CloudConfig",)


class UserDataNotApplied(Rule):
    id = "E6004"
    shortdesc = "User data that cloud-init drops or never applies"
    description = ("cloud-init applies a part of the user data by its type, and drops a part of a type no handler "
                   "takes ('Unhandled unknown content-type'), so the VNF boots unconfigured without an error: "
                   "an OS::Heat::MultipartMime part without `subtype` gets the subtype Heat derives from its "
                   "`filename` (`setup.sh` makes text/setup, `userdata.yaml` text/userdata); a part of a MIME "
                   "user data whose Content-Type cloud-init has no handler for (unless the message brings a part "
                   "handler of its own); and `#cloud-config` user data (or "
                   "an OS::Heat::CloudConfig, a MultipartMime) on a server without `user_data_format`: Heat's "
                   "default, HEAT_CFNTOOLS, hands it over as heat-cfntools data (text/x-cfninitdata, run as a "
                   "script by Heat's loguserdata.py), never as cloud-config. The types are cloud-init 22.4.2's "
                   "(a text/plain part is typed by its first line, as cloud-init does).")
    source_url = "https://cloudinit.readthedocs.io/en/latest/explanation/format.html"
    engine = "cloud-init"
    kinds = ("hot",)
    follows_nesting = True

    def check(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        yield from self._default_format(doc, ctx)
        yield from self._multipart_parts(doc, ctx)
        yield from self._mime_user_data(doc, ctx)

    def _default_format(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        for name, server in hot.resources(doc.data, "OS::Nova::Server"):
            p = hot.props(server)
            what = self._cloud_config(doc, p.get("user_data"), ctx)
            if what is None:
                continue
            fmt = hot.resolve(doc.data, p.get("user_data_format"), ctx.parameters) \
                if "user_data_format" in p else HEAT_DEFAULT_FORMAT
            if fmt != "HEAT_CFNTOOLS":
                continue
            given = "user_data_format" in p
            yield self.finding(("resources", name, "properties", "user_data_format" if given else "user_data"),
                               f"server '{name}': {what} with user_data_format "
                               f"{'HEAT_CFNTOOLS' if given else 'unset (Heat default HEAT_CFNTOOLS)'}: Heat hands "
                               "it over as heat-cfntools data (text/x-cfninitdata), which cloud-init never applies "
                               "as cloud-config; set user_data_format: RAW (or SOFTWARE_CONFIG)")

    def _cloud_config(self, doc: Document, value: Any, ctx: Context) -> str | None:
        """What cloud-config the user data is, when it is one: literal #cloud-config text, a get_file of it, or
        a get_resource of a config resource Heat gives as cloud-config or MIME."""
        ref = hot.resource_ref(value)
        if ref:
            found = hot.find_resource(ref, doc.data)
            rtype = found[1].get("type") if found else None
            if rtype in _CLOUD_CONFIG_RESOURCES or rtype == "OS::Heat::MultipartMime":
                return f"user_data is {rtype} '{ref}'"
            if rtype == "OS::Heat::SoftwareConfig":
                value = hot.props(found[1]).get("config") if found else None
        if isinstance(value, dict) and len(value) == 1 and isinstance(value.get("get_file"), str):
            text = _read(doc, value["get_file"])
            return f"user_data ({value['get_file']}) is #cloud-config" if text is not None and \
                cloudconfig.is_cloud_config(text) else None
        text = value if isinstance(value, str) else hot.resolve(doc.data, value, ctx.parameters)
        if isinstance(text, str) and (cloudconfig.is_cloud_config(text) or cloudconfig.is_mime(text)):
            return "user_data is #cloud-config" if cloudconfig.is_cloud_config(text) else "user_data is MIME"
        return None

    def _multipart_parts(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        for name, body in hot.resources(doc.data, "OS::Heat::MultipartMime"):
            parts = hot.props(body).get("parts")
            if any(self._handler(doc, part, ctx) for part in (parts if isinstance(parts, list) else [])):
                continue  # a part handler of the author's own may take any type
            for i, part in enumerate(parts if isinstance(parts, list) else []):
                if not isinstance(part, dict) or hot.resolve(doc.data, part.get("type", "text"), ctx.parameters) \
                        != "text":
                    continue
                subtype = hot.resolve(doc.data, part.get("subtype"), ctx.parameters) if "subtype" in part else ""
                filename = hot.resolve(doc.data, part.get("filename"), ctx.parameters) if "filename" in part else ""
                if not isinstance(subtype, str) or not isinstance(filename, str):
                    continue  # known only at deploy time
                if subtype or not filename:
                    continue  # a subtype the author chose, or text/plain typed by its first line
                subtype = os.path.splitext(filename)[0]  # MultipartMime._append_part
                text = self._part_text(doc, part.get("config"), ctx)
                ctype = cloudconfig.cloud_init_type(f"text/{subtype}", text) if text is not None else f"text/{subtype}"
                if ctype in cloudconfig.HANDLED_TYPES or ctype in HEAT_HANDLED:
                    continue
                yield self.finding(("resources", name, "properties", "parts", i, "filename"),
                                   f"part {i} of '{name}' is {ctype} (without a subtype, Heat derives '{subtype}' "
                                   f"from filename '{filename}'): cloud-init has no handler for it and drops the "
                                   "part at boot (Unhandled unknown content-type); give the subtype cloud-init "
                                   "takes (cloud-config, x-shellscript, ...)")

    def _handler(self, doc: Document, part: Any, ctx: Context) -> bool:
        """A part that registers a part handler (text/part-handler): it may handle types of its own."""
        if not isinstance(part, dict):
            return False
        subtype = hot.resolve(doc.data, part.get("subtype"), ctx.parameters)
        text = self._part_text(doc, part.get("config"), ctx)
        return subtype == "part-handler" or (isinstance(text, str) and text.lower().startswith("#part-handler"))

    def _part_text(self, doc: Document, config: Any, ctx: Context) -> str | None:
        ref = hot.resource_ref(config)
        if ref:
            found = hot.find_resource(ref, doc.data)
            rtype = found[1].get("type") if found else None
            if rtype == "OS::Heat::CloudConfig":
                return "#cloud-config\n"  # Heat's CloudConfig.handle_create
            config = hot.props(found[1]).get("config") if found and rtype == "OS::Heat::SoftwareConfig" else None
        if isinstance(config, dict) and len(config) == 1 and isinstance(config.get("get_file"), str):
            return _read(doc, config["get_file"])
        value = hot.resolve(doc.data, config, ctx.parameters)
        return value if isinstance(value, str) else None

    def _mime_user_data(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        for rtype, prop in (("OS::Nova::Server", "user_data"), ("OS::Heat::SoftwareConfig", "config")):
            for name, body in hot.resources(doc.data, rtype):
                text = hot.props(body).get(prop)
                if not isinstance(text, str) or not cloudconfig.is_mime(text):
                    continue
                where = ("resources", name, "properties", prop)
                block = cloudconfig.block_of(doc, where)
                parts = cloudconfig.mime_parts(text)
                if any(part.content_type == "text/part-handler" for part in parts):
                    continue  # a part handler of the author's own may take any type
                for part in parts:
                    if part.content_type in cloudconfig.HANDLED_TYPES or part.content_type in HEAT_HANDLED:
                        continue
                    message = (f"{prop} MIME part {part.index + 1} is {part.content_type}: cloud-init has no handler "
                               "for it and drops the part at boot (Unhandled unknown content-type)")
                    if block is None:
                        yield self.finding(where, message)
                    else:
                        yield RawFinding(self.id, where, message, self.engine, line=block[0] + part.header_line,
                                         column=block[1] + 1)


def _read(doc: Document, name: str) -> str | None:
    """A get_file's text, a local file beside the template (Heat's client reads it so)."""
    if "://" in name:
        return None
    try:
        path = os.path.join(os.path.dirname(doc.abspath), name)
        if os.path.getsize(path) > 1 << 20:
            return None
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError):
        return None
