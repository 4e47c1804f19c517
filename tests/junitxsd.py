"""The Jenkins xUnit plugin's JUnit schema (tests/fixtures/junit/junit-10.xsd, see its README): a JUnit file
that Jenkins' xUnit plugin reads must validate against it."""

from __future__ import annotations

import functools
from pathlib import Path

from lxml import etree

XSD = Path(__file__).parent / "fixtures" / "junit" / "junit-10.xsd"


@functools.cache
def schema() -> etree.XMLSchema:
    return etree.XMLSchema(etree.parse(str(XSD)))


def problems(xml: bytes) -> list[str]:
    """Why ``xml`` is not a JUnit file of the schema (not XML at all, or not valid); empty when it is."""
    try:
        doc = etree.fromstring(xml)
    except etree.XMLSyntaxError as exc:
        return [f"not XML: {exc}"]
    xsd = schema()
    return [] if xsd.validate(doc) else [str(e) for e in xsd.error_log]
