"""The files tosca-parser reads for a job: a document's imports as the job's policy allows (nfvcat.core.confine:
under the call's roots, a regular file, bounded), a package's members where tosca-parser extracted it."""

from __future__ import annotations

import tempfile
from typing import Any

from nfvcat.core import confine


def read(path: str, state: dict[str, Any]) -> bytes:
    """An import's content; confine.Refused when the job's policy does not allow it (nothing read)."""
    policy = state.get("policy") or confine.Policy()
    if policy.roots:  # a package's members, where tosca-parser extracted them, are the package's
        policy = confine.Policy((*policy.roots, *state.get("extracted", ())), policy.max_bytes)
    return confine.read_bytes(path, policy=policy)


class Extracting:
    """``tempfile`` as tosca-parser's CSAR sees it: the name it extracts a package under is kept in the job's
    state (``extracted``), so that the package's own members may be read there."""

    def __init__(self, state: dict[str, Any]):
        self.state = state

    def __getattr__(self, name: str) -> Any:
        return getattr(tempfile, name)

    def NamedTemporaryFile(self, *args: Any, **kwargs: Any) -> Any:
        made = tempfile.NamedTemporaryFile(*args, **kwargs)  # noqa: SIM115 (tosca-parser takes its name only)
        self.state.setdefault("extracted", []).append(made.name)
        return made


def watch_extraction(state: dict[str, Any]) -> None:
    """tosca-parser's CSAR extracts through ``Extracting``."""
    from toscaparser.prereq import csar

    csar.tempfile = Extracting(state)
