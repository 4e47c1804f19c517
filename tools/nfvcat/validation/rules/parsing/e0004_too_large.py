from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from nfvcat.core.findings import RawFinding
from nfvcat.validation.rules.base import Context, Rule

if TYPE_CHECKING:  # documents reports E0004 too: no import cycle
    from nfvcat.core.documents import Document

HEAT_MAX_TEMPLATE_SIZE = 524288  # heat.conf [DEFAULT] max_template_size default


class TooLarge(Rule):
    id = "E0004"
    shortdesc = "File or archive too large"
    description = ("A document over the size limit, a Heat template (HOT or CloudFormation format) over Heat's "
                   "max_template_size (524288 bytes by default), or a CSAR whose members expand beyond the limit.")
    source_url = "https://docs.openstack.org/heat/latest/configuration/config-options.html"
    kinds = ("hot", "cfn")
    blocks_engines = True

    def check(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        if len(doc.raw) > HEAT_MAX_TEMPLATE_SIZE:
            yield self.finding((), f"template is {len(doc.raw)} bytes; Heat's max_template_size is "
                               f"{HEAT_MAX_TEMPLATE_SIZE}")
