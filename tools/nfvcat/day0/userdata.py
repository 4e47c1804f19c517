"""User data with more than the VNF's own cloud-config: a MIME multi-part (``multipart/mixed``, as Heat's
``OS::Heat::MultipartMime`` makes it) whose first part is the VNF's rendered cloud-config and whose other
parts are cloud-configs added by whoever deploys it (a site's own settings, a lab's test instrumentation).

cloud-init merges the parts in order. Its default merge replaces lists, so an added ``write_files`` would
drop the VNF's own files: every added part carries ``Merge-Type: list(append)+dict(no_replace,recurse_list)+str()``
(cloud-init's per-part merge header), which appends lists and never replaces a key the VNF set.
The boundary is derived from the content, so the same inputs give the same bytes.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import re
from pathlib import Path
from typing import Any

import yaml

from nfvcat.core.errors import EXIT_USAGE, UserError

MERGE_TYPE = "list(append)+dict(no_replace,recurse_list)+str()"
HEADER = "#cloud-config"


def read_cloud_config(path: Path) -> str:
    """An added cloud-config file's text, checked: ``#cloud-config`` first, a YAML mapping."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read ({exc.__class__.__name__}: {exc})", EXIT_USAGE) from None
    check_cloud_config(text, str(path))
    return text


def check_cloud_config(text: str, where: str) -> None:
    if text.split("\n", 1)[0].rstrip() != HEADER:
        raise UserError(f"{where}:1: an added cloud-config must start with '{HEADER}'", EXIT_USAGE)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        raise UserError(f"{where}{line}: not YAML ({getattr(exc, 'problem', None) or exc})", EXIT_USAGE) from None
    if not isinstance(data, dict):
        raise UserError(f"{where}:1: an added cloud-config must be a mapping", EXIT_USAGE)


def multipart(vnf_user_data: str, added: list[tuple[str, str]]) -> str:
    """The VNF's user data followed by the ``added`` cloud-configs (filename, text); unchanged without any."""
    if not added:
        return vnf_user_data
    if not vnf_user_data.startswith((HEADER, "#!")):
        raise UserError("the VNF's user data is neither a cloud-config nor a script: cloud-configs cannot be "
                        "added to it", EXIT_USAGE)
    parts = [("vnf-user-data", vnf_user_data, False)] + [(name, text, True) for name, text in added]
    digest = hashlib.sha256("\0".join(t for _, t, _ in parts).encode()).hexdigest()[:24]
    boundary = f"==nfvcat-{digest}=="
    out = [f'Content-Type: multipart/mixed; boundary="{boundary}"', "MIME-Version: 1.0", ""]
    for name, text, merged in parts:
        kind = "text/cloud-config" if text.startswith(HEADER) else "text/x-shellscript"
        out += [f"--{boundary}", f'Content-Type: {kind}; charset="utf-8"', "Content-Transfer-Encoding: 8bit",
                f'Content-Disposition: attachment; filename="{name}"']
        if merged:
            out.append(f"Merge-Type: {MERGE_TYPE}")
        out += ["", text.rstrip("\n")]
    out += [f"--{boundary}--", ""]
    return "\n".join(out)


GZ_B64 = ("gz+b64", "gz+base64", "gzip+b64", "gzip+base64")


def file_content(item: dict[str, Any]) -> bytes:
    """The bytes cloud-init's ``write_files`` writes for ``item``: its ``content`` decoded as its ``encoding``
    says (plain text, base64, gzip, or gzip then base64)."""
    content = item.get("content", "")
    data = content if isinstance(content, bytes) else str(content).encode()
    encoding = str(item.get("encoding") or "text/plain").lower()
    if encoding in GZ_B64:
        return gzip.decompress(base64.b64decode(data))
    if encoding in ("b64", "base64"):
        return base64.b64decode(data)
    if encoding in ("gz", "gzip"):
        return gzip.decompress(data)
    return data


def embed(user_data: Path, path: str, source: Path) -> bool:
    """Put ``source`` into the hook ``user_data`` as the ``write_files`` item of ``path``, gzip-compressed and
    base64-encoded (``encoding: gz+b64``): a file too large for Nova's 64 KiB of user data as text. The item
    must exist with that encoding; its other keys stay. Deterministic (no time stamp in the gzip header).
    Returns whether the file changed."""
    text = user_data.read_text()
    data = base64.b64encode(gzip.compress(source.read_bytes(), compresslevel=9, mtime=0)).decode()
    lines = "".join(f"      {data[i:i + 76]}\n" for i in range(0, len(data), 76))
    pattern = re.compile(rf"(  - path: {re.escape(path)}\n(?:    (?!content:).*\n)*    content: \|\n)(?:      .*\n)*")
    m = pattern.search(text)
    if not m or "encoding: gz+b64" not in m.group(1):
        raise UserError(f"{user_data}: no write_files item {path} with encoding: gz+b64", EXIT_USAGE)
    new = text[:m.start()] + m.group(1) + lines + text[m.end():]
    if new != text:
        user_data.write_text(new)
    return new != text
