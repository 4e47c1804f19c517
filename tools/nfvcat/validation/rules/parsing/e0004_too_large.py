"""E0004: a file over its size limit; for templates, Heat's max_template_size too."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from nfvcat.core.findings import RawFinding
from nfvcat.core.problems import TOO_LARGE
from nfvcat.validation.rules.base import Context, Rule

if TYPE_CHECKING:
    from nfvcat.core.documents import Document

HEAT_MAX_TEMPLATE_SIZE = 524288  # heat.conf [DEFAULT] max_template_size default


class TooLarge(Rule):
    """The reader finds a file over its size limit (declared with it: ``nfvcat.core.problems``); this rule adds
    Heat's max_template_size for templates."""
    id = TOO_LARGE.id
    shortdesc = TOO_LARGE.shortdesc
    description = TOO_LARGE.description
    source_url = TOO_LARGE.source_url
    kinds = ("hot", "cfn")
    blocks_engines = True

    def check(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        if len(doc.raw) > HEAT_MAX_TEMPLATE_SIZE:
            yield self.finding((), f"template is {len(doc.raw)} bytes; Heat's max_template_size is "
                               f"{HEAT_MAX_TEMPLATE_SIZE}")
