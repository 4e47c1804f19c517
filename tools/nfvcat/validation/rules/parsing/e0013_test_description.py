"""E0013: Test Description File does not match its schema."""

from __future__ import annotations

from collections.abc import Iterator

from nfvcat.core.documents import Document
from nfvcat.core.findings import RawFinding
from nfvcat.validation.rules.base import Context, Rule


class TestDescriptionInvalid(Rule):
    id = "E0013"
    shortdesc = "Test Description File does not match its schema"
    description = ("A Test Description File (kind: nfvcat/test-description), the campaign `nfvcat test` runs, is "
                   "checked against the JSON Schema shipped in the package (nfvcat/data/schemas/"
                   "test-description.schema.json): general settings (a cloud of clouds.yaml or the lab, external "
                   "network, availability zone, images, inventory, results) and tests (chain, environments, "
                   "flavors, provider networks and VLANs, placement checks, data-plane measurements and expected "
                   "figures); then test names are unique and every expectation compares with a test run before it.")
    source_url = "https://docs.opnfv.org/en/stable-hunter/testing/ecosystem/overview.html"
    kinds = ("test-description",)

    def check(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        from nfvcat.catalog import tdf

        for path, message in tdf.schema_errors(doc.data):
            yield self.finding(path, f"test description: {message}")
