"""How a catalog VNF says its day-0 is done: each hook (hooks/*/user-data.yaml) prints one line on the console
at its end, ``NFVCAT-<VNF>-READY`` followed by details (the vRouter: its interfaces and ACL datapath). A hook may
also print cloud-init's own verdict once cloud-init is over (after cloud-final: ``cloud-init status --wait``
cannot run inside cloud-init's last stage), ``NFVCAT-CLOUD-INIT status: <status> datasource: <where from>``;
its user data then holds :data:`CLOUD_INIT`.

cloud-init's own last line (its default ``final_message``) names the datasource it ran from; ``DataSourceNone``
means it found none (no config drive, no answer from the metadata service), so no user data, no hook and no ready
line will ever come."""

from __future__ import annotations

import re

READY = {"vnf-vrouter": "NFVCAT-VROUTER-READY", "vnf-ipsec-gw": "NFVCAT-IPSEC-GW-READY"}
LINE = re.compile(r"NFVCAT-[A-Z0-9-]+-READY[^\r\n]*")
CLOUD_INIT = "NFVCAT-CLOUD-INIT"
FINISHED = re.compile(r"Cloud-init v\. \S+ finished at [^\r\n]*? Datasource (?P<source>DataSource\w+)[^\r\n]*")
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


def without_datasource(console: str) -> str | None:
    """cloud-init's final line when the last boot's cloud-init finished with no datasource (``DataSourceNone``),
    else None."""
    found = list(FINISHED.finditer(console))
    return found[-1].group(0).strip() if found and found[-1]["source"] == "DataSourceNone" else None
