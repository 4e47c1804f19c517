"""What the Heat engine keeps in its worker process, and the job's files as the engine reads them.

``STATE`` holds, once per process: ``ctx`` (the request context Heat's stacks need) and ``cloud_errors``
(heat_cloud_errors.cloud_error_types); per job: ``overlay`` (unsaved content by absolute path, read before
the disk), ``handed_over`` (texts the job hands over parsed), ``looked_for`` (every file looked for: the
job's dependencies), ``aliases`` (a file name Heat is given -> its path), ``invented_by_stack`` and
``nested_invented`` (the values invented for parameters without one, per stack and per nested template).
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import unquote, urlparse

from nfvcat.core import confine

ENGINE = "heat"  # the engine's name, as its jobs and findings carry it
STATE: dict[str, Any] = {}


def read(path: str) -> bytes:
    """A file the job reads: its unsaved content, else the disk as the job's ``confine`` policy allows (under
    the call's roots, a regular file, at most the size cap; confine.Refused otherwise, nothing read)."""
    text = STATE.get("overlay", {}).get(os.path.abspath(path))
    if text is not None:
        return str(text).encode("utf-8", "surrogatepass")
    return confine.read_bytes(path, policy=STATE.get("policy") or confine.Policy())


def text(path: str) -> str:
    """``read`` as text, newlines as ``open(path, encoding="utf-8")`` gives them."""
    return read(path).decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def path_of(url: str) -> str:
    if url in STATE.get("aliases", {}):
        return str(STATE["aliases"][url])
    return unquote(urlparse(url).path) if url.startswith("file:") else url
