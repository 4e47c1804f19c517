"""E6001: cloud-config rejected by cloud-init's schema."""

from __future__ import annotations

from collections.abc import Iterator

from nfvcat.core import cloudconfig, jinja
from nfvcat.core.documents import Document
from nfvcat.core.findings import RawFinding
from nfvcat.validation.engines import cloudinit
from nfvcat.validation.rules.base import Context, Rule


class CloudConfigSchema(Rule):
    id = "E6001"
    shortdesc = "cloud-config rejected by cloud-init's schema"
    description = ("Day-0 user data in cloud-config form is checked against cloud-init's own JSON Schema "
                   "(schema-cloud-config-v1.json, as `cloud-init schema` does): cloud-config files, "
                   "OS::Heat::CloudConfig `cloud_config`, and literal `#cloud-config` text in a server's "
                   "user_data, an OS::Heat::SoftwareConfig's config or an OS::Heat::MultipartMime part (the finding "
                   "points at the line inside the block). A Jinja-templated cloud-config (`## template: jinja`) "
                   "is judged with its template syntax set aside: a Jinja syntax error is reported, a value "
                   "the template fills at boot is not judged. The text is read as cloud-init reads it (PyYAML's "
                   "safe loader: an unquoted date is a date, not a string), and a MIME multipart user data is "
                   "judged part by part, each cloud-config part a document of its own with its own lines (one "
                   "that is not YAML is dropped whole by cloud-init). Where cloud-init's modules (22.4.2) are "
                   "stricter than the schema, they are followed: a write_files content that does not decode as its "
                   "encoding (base64, gzip) fails cc_write_files at boot; an ntp_client cc_ntp has no "
                   "configuration for, without a full ntp.config, fails cc_ntp. cloud-init skips a module whose "
                   "config is invalid, so the VNF boots unconfigured.")
    source_url = "https://cloudinit.readthedocs.io/en/latest/reference/modules.html"
    engine = "cloud-init"
    kinds = ("cloud-config", "hot")

    def check(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        for cc in cloudconfig.cloud_configs(doc):
            if cc.template:
                continue  # values are placeholders str_replace fills at deploy time
            if cc.jinja is not None and cc.jinja.error is not None:
                where, line, column = cc.locate_line(cc.jinja.line)
                yield RawFinding(self.id, where, f"{cc.label}Jinja template syntax: {cc.jinja.error} (cloud-init "
                                 "cannot render it)", self.engine, line=line, column=column)
                continue
            if cc.error is not None:
                where, line, column = cc.locate_line(cc.error_line)
                yield RawFinding(self.id, where, f"{cc.label}not valid YAML: {cc.error} (cloud-init drops the "
                                 "whole cloud-config)", self.engine, line=line, column=column)
            elif cc.data is not None and not isinstance(cc.data, dict):
                yield self.finding(cc.where, f"{cc.label}cloud-config must be a mapping, not "
                                             f"{type(cc.data).__name__}")
            else:
                for path, message in cloudinit.check(cc.data) + cloudinit.module_errors(cc.data):
                    if cc.jinja is not None and jinja.PLACEHOLDER in message:
                        continue  # a value the template fills at boot
                    where, line, column = cc.locate(path)
                    yield RawFinding(self.id, where, f"{cc.label}{message}", self.engine, line=line,
                                     column=column)
