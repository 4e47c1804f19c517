"""How a catalog VNF says its day-0 is done: each hook (hooks/*/user-data.yaml) prints one line on the console
at its end, ``NFVCAT-<VNF>-READY`` followed by details (the vRouter: its interfaces and ACL datapath)."""

from __future__ import annotations

import re

READY = {"vnf-vrouter": "NFVCAT-VROUTER-READY", "vnf-ipsec-gw": "NFVCAT-IPSEC-GW-READY"}
LINE = re.compile(r"NFVCAT-[A-Z0-9-]+-READY[^\r\n]*")


def ready_line(console: str) -> str | None:
    """The last ready line of a console log, None when there is none."""
    found = LINE.findall(console)
    return found[-1].strip() if found else None
