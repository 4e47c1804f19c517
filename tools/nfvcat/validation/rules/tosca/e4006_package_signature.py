"""E4006: a VNF package whose manifest signature does not verify (or, with --require-signed, is missing)."""

from __future__ import annotations

import zipfile
from collections.abc import Iterator

import yaml

from nfvcat.core.documents import ZIP_ERRORS, Document
from nfvcat.core.findings import RawFinding
from nfvcat.packaging import signing
from nfvcat.validation.rules.base import Context, Rule


class PackageSignature(Rule):
    id = "E4006"
    shortdesc = "VNF package signature does not verify (or is missing with --require-signed)"
    description = ("ETSI GS NFV-SOL 004 lets a VNF package carry a CMS signature of its manifest (at the end "
                   "of the manifest, PEM) with the signing certificate in the package (ETSI-Entry-Certificate "
                   "in TOSCA.meta). The manifest holds the sha256 of every other file, so a valid signature "
                   "covers the package. A signature that does not verify over the manifest, one made with "
                   "another certificate than the package's, a signed manifest without its certificate, and "
                   "with --trust-ca a certificate that does not chain to that CA are errors; with "
                   "--require-signed an unsigned package is one too. Verified with `openssl cms -verify`.")
    source_url = "https://www.etsi.org/deliver/etsi_gs/NFV-SOL/001_099/004/"
    kinds = ("csar",)

    def check(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        try:
            with zipfile.ZipFile(doc.abspath) as zf:
                meta = yaml.safe_load(zf.read("TOSCA-Metadata/TOSCA.meta")) if "TOSCA-Metadata/TOSCA.meta" in \
                    zf.namelist() else {}
                meta = meta if isinstance(meta, dict) else {}
                mf = meta.get("ETSI-Entry-Manifest")
                manifest = zf.read(mf) if isinstance(mf, str) and mf in zf.namelist() else None
                cert_name = meta.get("ETSI-Entry-Certificate")
                cert = zf.read(cert_name) if isinstance(cert_name, str) and cert_name in zf.namelist() else None
        except (*ZIP_ERRORS, yaml.YAMLError):
            return  # E4002 and E4004 say what is wrong with the archive itself
        if manifest is None:
            if ctx.require_signed:
                yield self._at("no manifest (ETSI-Entry-Manifest), so no signature: --require-signed")
            return
        verdict = signing.verify(manifest, cert, ctx.trust_ca)
        if verdict.status == "invalid":
            yield self._at(f"{mf}: {verdict.message}")
        elif verdict.status == "unsigned" and ctx.require_signed:
            yield self._at(f"{mf}: {verdict.message} (--require-signed)")

    def _at(self, message: str) -> RawFinding:
        return RawFinding(self.id, (), message, self.engine, line=1, column=1)
