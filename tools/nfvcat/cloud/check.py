"""``nfvcat check`` of a stack: placement per server (:mod:`placement_check`), the running guests where host access
reaches them (:mod:`guest_check`), the service function chains (:mod:`sfc_check`) and redundancy per server group
(:mod:`redundancy_check`)."""

from __future__ import annotations

from typing import Any

from nfvcat.catalog import inventory as inventory_mod
from nfvcat.cloud import guest_check, redundancy_check, sfc_check
from nfvcat.cloud.hostaccess import HostAccess
from nfvcat.cloud.placement_check import Checker
from nfvcat.cloud.stacks import servers_of
from nfvcat.cloud.verdicts import Verdict


def check_stack(conn: Any, stack_name: str, inv: inventory_mod.Inventory | None,
                access: HostAccess | None = None) -> list[Verdict]:
    checker = Checker(conn, inv, access)
    for vnf, sid in servers_of(conn, stack_name):
        checker.server(vnf, sid)
    return (checker.verdicts + guest_check.check(conn, stack_name, access) + sfc_check.check(conn, stack_name, access)
            + redundancy_check.check(conn, stack_name))
