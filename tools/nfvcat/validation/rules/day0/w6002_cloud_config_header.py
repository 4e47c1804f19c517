"""W6002: cloud-config without its #cloud-config header."""

from __future__ import annotations

from collections.abc import Iterator

from nfvcat.core import cloudconfig
from nfvcat.core.documents import Document
from nfvcat.core.findings import RawFinding
from nfvcat.validation.rules.base import Context, Rule


class CloudConfigHeader(Rule):
    id = "W6002"
    shortdesc = "cloud-config without its #cloud-config header"
    description = ("cloud-init decides what user data is from its first line: without `#cloud-config` a "
                   "YAML body of runcmd/write_files/... is not treated as cloud-config and nothing runs.")
    source_url = "https://cloudinit.readthedocs.io/en/latest/explanation/format.html"
    kinds = ("cloud-config",)

    def check(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        if not cloudconfig.is_cloud_config(doc.text.lstrip("\ufeff")):
            yield self.finding((), "user data looks like cloud-config but does not start with '#cloud-config'")
