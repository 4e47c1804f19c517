"""E2004: flavor vcpus or ram not a positive integer."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from nfvcat.core import hot
from nfvcat.core.documents import Document
from nfvcat.core.findings import RawFinding
from nfvcat.validation.rules.base import Context, Rule


class FlavorSize(Rule):
    id = "E2004"
    shortdesc = "Flavor vcpus or ram not a positive integer"
    description = ("A flavor needs at least one vCPU and some RAM. Heat's OS::Nova::Flavor accepts `vcpus: 0` "
                   "and Nova refuses it only when the stack is created.")
    source_url = "https://docs.openstack.org/nova/latest/user/flavors.html"
    kinds = ("flavor", "hot")

    def _sizes(self, where: tuple[Any, ...], body: dict[str, Any], data: Any,
               ctx: Context) -> Iterator[RawFinding]:
        for key in ("vcpus", "ram"):
            value = hot.resolve(data, body.get(key), ctx.parameters) if key in body else None
            if value is None or value is hot.UNRESOLVED:
                continue
            if data is not None and not isinstance(value, int):
                continue  # a HOT value of the wrong type: Heat's own E1001 says so
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                yield self.finding(where + (key,), f"flavor {key} must be a positive integer, not {value!r}")

    def check(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        if doc.kind == "flavor":
            for key in ("vcpus", "ram"):
                if key not in doc.data:
                    yield self.finding((), f"flavor has no '{key}'")
            yield from self._sizes((), doc.data, None, ctx)
            return
        for name, body in hot.resources(doc.data, "OS::Nova::Flavor"):
            yield from self._sizes(("resources", name, "properties"), hot.props(body), doc.data, ctx)
