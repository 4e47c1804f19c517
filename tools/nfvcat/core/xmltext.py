"""Text as XML 1.0 can hold it, for the JUnit files nfvcat writes (``nfvcat test``'s reports, ``nfvcat validate
--format junit``).

Text XML 1.0 cannot hold (C0 controls but tab and line ends, surrogates, U+FFFE/U+FFFF): one such character in
a step's output made the whole report unreadable. Terminal control sequences (a coloured tool's ESC [ ... m)
are dropped; any other such character is written as its Python escape (\\x1b, \\x00)."""

from __future__ import annotations

import re

_CSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    """``text`` as XML 1.0 can hold it (see above)."""
    return _NOT_XML.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), _CSI.sub("", text))
