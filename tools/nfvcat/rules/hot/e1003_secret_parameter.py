from __future__ import annotations

import re
from collections.abc import Iterator

from nfvcat.documents import Document
from nfvcat.findings import RawFinding
from nfvcat.rules.base import Context, Rule

SECRET_NAME = re.compile(r"(psk|password|passwd|passphrase|secret|private[_-]?key|pre[_-]?shared)", re.I)


class SecretParameter(Rule):
    id = "E1003"
    shortdesc = "A secret parameter is not hidden or has a default"
    description = ("A parameter named like a secret (psk, password, passphrase, secret, private key) must be "
                   "`hidden: true`, so Heat masks it in stack show and events, and must have no default, so "
                   "no shared secret ships in the catalog. `key_name` (a Nova keypair name) is not a secret.")
    source_url = "https://docs.openstack.org/heat/latest/template_guide/hot_spec.html#parameters-section"
    kinds = ("hot",)

    def check(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        params = doc.data.get("parameters")
        if not isinstance(params, dict):
            return
        for name, spec in params.items():
            if not SECRET_NAME.search(str(name)) or not isinstance(spec, dict):
                continue
            if spec.get("hidden") is not True:
                yield self.finding(("parameters", name),
                                   f"secret parameter '{name}' must be 'hidden: true'")
            if "default" in spec:
                yield self.finding(("parameters", name, "default"),
                                   f"secret parameter '{name}' must not have a default")
