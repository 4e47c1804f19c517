"""Signed VNF packages (SOL004 manifest signed with CMS), with a throwaway CA made in the test."""

from __future__ import annotations

import runpy
import zipfile
from pathlib import Path

import pytest

from nfvcat.cli import main
from nfvcat.core.errors import EXIT_USAGE
from nfvcat.packaging import signing
from nfvcat.packaging.csar import build
from tests.conftest import ROOT, findings_of

MAKE = runpy.run_path(str(ROOT / "tests" / "fixtures" / "rules" / "E4006" / "make.py"))
ENTRY = ROOT / "vnfd" / "vnf-vrouter"


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(package, ca.pem, another CA's pem)."""
    tmp = tmp_path_factory.mktemp("sign")
    (tmp / "a").mkdir()
    (tmp / "b").mkdir()
    ca, key, cert = MAKE["throwaway_ca"](tmp / "a")
    other_ca, _k, _c = MAKE["throwaway_ca"](tmp / "b")
    return build(ENTRY, tmp, signer=signing.load_signer(key, cert)), ca, other_ca


def _parts(package: Path) -> tuple[bytes, bytes]:
    with zipfile.ZipFile(package) as zf:
        return zf.read("vnf-vrouter.mf"), zf.read(signing.CERT_MEMBER)


def test_package_layout(signed: tuple[Path, Path, Path]) -> None:
    package, _, _ = signed
    with zipfile.ZipFile(package) as zf:
        meta = zf.read("TOSCA-Metadata/TOSCA.meta").decode()
        mf = zf.read("vnf-vrouter.mf").decode()
    assert f"ETSI-Entry-Certificate: {signing.CERT_MEMBER}\n" in meta
    assert f"Source: {signing.CERT_MEMBER}\nAlgorithm: SHA-256\n" in mf  # the certificate is hashed too
    assert mf.endswith(signing.END + "\n") and f"\n\n{signing.BEGIN}\n" in mf


def test_verify(signed: tuple[Path, Path, Path]) -> None:
    package, ca, other_ca = signed
    mf, cert = _parts(package)
    assert signing.verify(mf, cert).status == "valid"
    assert signing.verify(mf, cert, ca).message == f"signature valid; chains to {ca}"
    bad_chain = signing.verify(mf, cert, other_ca)
    assert bad_chain.status == "invalid" and "certificate verify error" in bad_chain.message
    tampered = mf.replace(b"vnf_package_version: ", b"vnf_package_version: 9")
    assert signing.verify(tampered, cert).message == "CMS signature does not verify (content verify error)"
    assert signing.verify(mf, None).status == "invalid"
    _, _, other_cert = MAKE["throwaway_ca"](other_ca.parent)
    assert signing.verify(mf, other_cert.read_bytes()).message == \
        "the manifest is signed by another certificate than the package's"
    unsigned, _ = signing.split(mf)
    assert signing.verify(unsigned, cert).status == "unsigned"


def test_validate_require_signed_and_trust_ca(signed: tuple[Path, Path, Path]) -> None:
    package, ca, other_ca = signed
    plain = build(ENTRY, package.parent / "plain")
    code, findings = findings_of("--require-signed", str(plain))
    assert [f["id"] for f in findings] == ["E4006"] and "(--require-signed)" in str(findings[0]["message"])
    code, findings = findings_of("--require-signed", "--trust-ca", str(ca), str(package))
    assert code == 0 and findings == []
    code, findings = findings_of("--trust-ca", str(other_ca), str(package))
    assert [f["id"] for f in findings] == ["E4006"]


def test_key_and_certificate_must_match(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _, key, _ = MAKE["throwaway_ca"](tmp_path / "a")
    _, _, cert = MAKE["throwaway_ca"](tmp_path / "b")
    assert main(["package", str(ENTRY), "-o", str(tmp_path), "--sign-key", str(key), "--sign-cert", str(cert)]) \
        == EXIT_USAGE
    assert "is not the certificate of --sign-key" in capsys.readouterr().err
    assert main(["package", str(ENTRY), "-o", str(tmp_path), "--sign-key", str(key)]) == EXIT_USAGE
