"""Signed VNF packages, as ETSI GS NFV-SOL 004 allows: the manifest is signed with CMS (detached, SHA-256),
the signature appended to the manifest in PEM between ``-----BEGIN CMS-----`` and ``-----END CMS-----``, and
the signing certificate in the package, named by ``ETSI-Entry-Certificate`` in TOSCA.meta (and inside the
CMS). The manifest holds the sha256 of every other file, so the signature covers the whole package.

Signing uses the ``cryptography`` package; verification uses ``openssl cms -verify`` (Debian's openssl),
because ``cryptography`` signs PKCS#7/CMS but does not verify it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nfvcat.core.errors import EXIT_ENGINE, EXIT_USAGE, UserError

BEGIN, END = "-----BEGIN CMS-----", "-----END CMS-----"
CERT_MEMBER = "Files/Certificates/signing.crt"


def _spki(public_key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return bytes(public_key.public_bytes(serialization.Encoding.DER,
                                         serialization.PublicFormat.SubjectPublicKeyInfo))


def load_signer(key_path: Path, cert_path: Path) -> tuple[Any, Any]:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    try:
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise UserError(f"--sign-key {key_path}: not an unencrypted PEM private key ({exc})", EXIT_USAGE) from None
    try:
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    except (OSError, ValueError) as exc:
        raise UserError(f"--sign-cert {cert_path}: not a PEM certificate ({exc})", EXIT_USAGE) from None
    if _spki(cert.public_key()) != _spki(key.public_key()):
        raise UserError(f"--sign-cert {cert_path} is not the certificate of --sign-key {key_path}", EXIT_USAGE)
    return key, cert


def sign_manifest(manifest: bytes, key: Any, cert: Any) -> bytes:
    """The manifest with its CMS signature appended (SOL004: PEM, at the end of the manifest, as a block of its
    own after a blank line, so a manifest reader that splits artifact blocks on blank lines skips it). The
    signed content is the manifest up to the signature, that blank line included."""
    manifest = manifest.rstrip(b"\n") + b"\n\n"
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.serialization import pkcs7

    der = (pkcs7.PKCS7SignatureBuilder().set_data(manifest)
           .add_signer(cert, key, hashes.SHA256())
           .sign(serialization.Encoding.DER, [pkcs7.PKCS7Options.DetachedSignature, pkcs7.PKCS7Options.Binary]))
    import base64

    body = base64.encodebytes(der).decode().replace("\n", "")
    lines = [body[i:i + 64] for i in range(0, len(body), 64)]
    return manifest + ("\n".join([BEGIN, *lines, END]) + "\n").encode()


def cert_pem(cert: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return bytes(cert.public_bytes(serialization.Encoding.PEM))


@dataclass
class Verdict:
    status: str  # unsigned, valid, invalid
    message: str


def split(manifest: bytes) -> tuple[bytes, bytes | None]:
    """The signed content and the PEM CMS block (None when the manifest is not signed)."""
    text = manifest.decode("utf-8", "replace")
    m = re.search(rf"(?m)^{re.escape(BEGIN)}\n", text)
    if m is None:
        return manifest, None
    content = manifest[:len(text[:m.start()].encode("utf-8"))]
    return content, manifest[len(content):]


def verify(manifest: bytes, certificate: bytes | None, trust_ca: Path | None = None) -> Verdict:
    """Check a signed manifest: the CMS signature over the manifest, made by the package's certificate (and,
    with ``trust_ca``, that certificate chaining to it)."""
    content, block = split(manifest)
    if block is None:
        return Verdict("unsigned", "the manifest carries no CMS signature")
    if certificate is None:
        return Verdict("invalid", f"signed manifest but no signing certificate in the package ({CERT_MEMBER}, "
                                  "named by ETSI-Entry-Certificate in TOSCA.meta)")
    if shutil.which("openssl") is None:
        raise UserError("openssl is not installed: signatures cannot be verified", EXIT_ENGINE)
    pem = block.decode("ascii", "replace").replace(BEGIN, "-----BEGIN PKCS7-----").replace(END, "-----END PKCS7-----")
    with tempfile.TemporaryDirectory(prefix="nfvcat-cms-") as tmp:
        d = Path(tmp)
        (d / "sig.pem").write_text(pem)
        (d / "content").write_bytes(content)
        (d / "cert.pem").write_bytes(certificate)
        cmd = ["openssl", "cms", "-verify", "-binary", "-inform", "PEM", "-in", str(d / "sig.pem"),
               "-content", str(d / "content"), "-out", "/dev/null", "-signer", str(d / "signer.pem"),
               "-certfile", str(d / "cert.pem"), "-purpose", "any"]
        cmd += ["-CAfile", str(trust_ca)] if trust_ca else ["-noverify"]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            why = [ln for ln in proc.stderr.splitlines() if ln.strip()]
            parts = why[-1].split(":") if why else []
            reason = parts[5] if len(parts) > 5 else (why[-1] if why else "openssl failed")  # openssl 3 layout
            return Verdict("invalid", f"CMS signature does not verify ({reason})")
        signer = (d / "signer.pem").read_bytes() if (d / "signer.pem").is_file() else b""
    if _der(signer) != _der(certificate):
        return Verdict("invalid", "the manifest is signed by another certificate than the package's")
    trust = f"chains to {trust_ca}" if trust_ca else "signer not checked against a trust anchor (no CA given)"
    return Verdict("valid", f"signature valid; {trust}")


def _der(pem: bytes) -> bytes:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    try:
        return x509.load_pem_x509_certificate(pem).public_bytes(serialization.Encoding.DER)
    except ValueError:
        return b""
