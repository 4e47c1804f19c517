"""How a catalog VNF says its day-0 is done: each hook (hooks/*/user-data.yaml) prints one line on the console
at its end, ``NFVCAT-<VNF>-READY`` followed by details (the vRouter: its interfaces and ACL datapath). A hook may
also print cloud-init's own verdict once cloud-init is over (after cloud-final: ``cloud-init status --wait``
cannot run inside cloud-init's last stage), ``NFVCAT-CLOUD-INIT status: <status> datasource: <where from>``;
its user data then holds :data:`CLOUD_INIT`."""

from __future__ import annotations

import re

READY = {"vnf-vrouter": "NFVCAT-VROUTER-READY", "vnf-ipsec-gw": "NFVCAT-IPSEC-GW-READY"}
LINE = re.compile(r"NFVCAT-[A-Z0-9-]+-READY[^\r\n]*")
CLOUD_INIT = "NFVCAT-CLOUD-INIT"
STATUS_LINE = re.compile(CLOUD_INIT + r" status: (?P<status>\S+)(?: datasource: (?P<source>[^\r\n]*))?")


def ready_line(console: str) -> str | None:
    """The last ready line of a console log, None when there is none."""
    found = LINE.findall(console)
    return found[-1].strip() if found else None


def cloud_init_status(console: str) -> tuple[str, str, str] | None:
    """(status, datasource, line) of the last cloud-init status line of a console log, None when there is none."""
    found = list(STATUS_LINE.finditer(console))
    if not found:
        return None
    m = found[-1]
    return m["status"], (m["source"] or "").strip(), m.group(0).strip()


def prints_cloud_init_status(user_data: str) -> bool:
    """Whether a server's user data (a hook's rendering) prints the cloud-init status line."""
    return CLOUD_INIT + " status:" in user_data
