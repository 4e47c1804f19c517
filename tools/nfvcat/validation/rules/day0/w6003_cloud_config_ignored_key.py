"""W6003: cloud-config key cloud-init ignores (a misspelt module key)."""

from __future__ import annotations

from collections.abc import Iterator

from nfvcat.core import cloudconfig
from nfvcat.core.documents import Document
from nfvcat.core.findings import RawFinding
from nfvcat.validation.engines import cloudinit
from nfvcat.validation.rules.base import Context, Rule


class CloudConfigIgnoredKey(Rule):
    id = "W6003"
    shortdesc = "cloud-config key cloud-init ignores (a misspelt module key)"
    description = ("cloud-init's schema allows any top-level key and cloud-init ignores the ones no module "
                   "reads, so `run_cmd`, `write_file` or `package` run nothing and the VNF boots "
                   "unconfigured without an error. A top-level key that is not one cloud-init knows (its "
                   "schema's module keys, and the merge, datasource and legacy apt keys it reads besides) "
                   "but is one or two edits away from one is reported with the key it most likely meant.")
    source_url = "https://cloudinit.readthedocs.io/en/latest/reference/modules.html"
    engine = "cloud-init"
    kinds = ("cloud-config", "hot")

    def check(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        for cc in cloudconfig.cloud_configs(doc):
            for key, meant in cloudinit.unknown_keys(cc.data):
                where, line, column = cc.locate((key,))
                yield RawFinding(self.id, where, f"{cc.label}'{key}' is not a key cloud-init reads: it is "
                                 f"ignored; did you mean '{meant}'?", self.engine, line=line, column=column)
