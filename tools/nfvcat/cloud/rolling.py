"""A rolling upgrade of a redundant group (``upgrade --rolling``): the members of a server group (the vRouter HA
pair) are upgraded one at a time, and the group stays up.

The rules, for each member in turn (the VRRP backups first, the master last):

1. Before the member is touched, another member holds the VRRP master role. When the member itself is the master,
   it hands the role over first (``handover``: on a cloud, Nova stops its server, a clean shutdown, so keepalived
   announces priority 0 and the backup takes over at once) and the other member must be seen as master before it
   goes on.
2. The member is upgraded (``upgrade``: on a cloud, its Heat pre-update hook is cleared and its update waited for).
3. It must rejoin: its role announced again since its upgrade (``rejoined``).
4. The group's placement holds (``placement``: on a cloud, the anti-affinity verdicts of ``check``: the members
   in their server group, on different hosts).

The roles come from the members' consoles: the vRouter hook's keepalived prints ``NFVCAT-VRRP state=STATE`` at
each change (``role``). A member whose console shows none since its last boot has an unknown role: the rolling
upgrade refuses to start (unless told to accept unknown roles, as on a hypervisor that runs no guest), never takes
an unknown for a master. Any rule that fails stops the upgrade (``Stopped``) with the members upgraded so far
named; nothing is touched after it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

from nfvcat.core.errors import EXIT_FINDINGS, UserError
from nfvcat.core.waiting import within

ROLE = re.compile(r"NFVCAT-VRRP state=(?P<state>[A-Z]+)")
BOOT = re.compile(r"Linux version \d")  # the kernel's first line: a new boot of the guest
MASTER, BACKUP = "MASTER", "BACKUP"


def role(console: str | None) -> str | None:
    """The VRRP role a console log last announced since the guest's last boot; None when none was."""
    if not console:
        return None
    boots = list(BOOT.finditer(console))
    since = console[boots[-1].start():] if boots else console
    found = ROLE.findall(since)
    return found[-1] if found else None


class Members(Protocol):
    """The members of a redundant group, and what the rolling upgrade does to each."""

    names: list[str]

    def roles(self) -> dict[str, str | None]:
        """Each member's VRRP role (None: unknown)."""

    def handover(self, name: str) -> None:
        """The member gives the master role up cleanly."""

    def upgrade(self, name: str) -> None:
        """The member is upgraded; returns when the upgrade of it is done."""

    def rejoined(self, name: str) -> bool:
        """The member announced a role since its upgrade."""

    def placement(self) -> list[str]:
        """What is wrong with the group's placement (empty: it holds)."""


@dataclass
class Step:
    member: str
    roles_before: dict[str, str | None]
    handover: bool = False
    started: float = 0.0
    upgraded_s: float = 0.0  # the upgrade of the member
    rejoined_s: float = 0.0  # from the end of its upgrade until it announced a role again
    roles_after: dict[str, str | None] = field(default_factory=dict)
    placement: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"member": self.member, "roles_before": self.roles_before, "handover": self.handover,
                "upgraded_s": round(self.upgraded_s, 1), "rejoined_s": round(self.rejoined_s, 1),
                "roles_after": self.roles_after, "placement": self.placement or "holds"}


class Stopped(UserError):
    """A rule failed: the rolling upgrade stopped before touching anything else."""

    def __init__(self, message: str, steps: list[Step]) -> None:
        done = ", ".join(s.member for s in steps if s.upgraded_s) or "none"
        super().__init__(f"rolling upgrade stopped: {message} (members upgraded: {done})", EXIT_FINDINGS)
        self.steps = steps


def order(names: list[str], roles: dict[str, str | None]) -> list[str]:
    """The backups first, the master last (members of unknown role in between, in their order)."""
    rank = {BACKUP: 0, None: 1, MASTER: 2}
    return sorted(names, key=lambda n: rank.get(roles.get(n), 1))


def unknown_roles(roles: dict[str, str | None]) -> list[str]:
    return [n for n, r in roles.items() if r not in (MASTER, BACKUP)]


def roll(members: Members, say: Callable[[str], None], *, timeout: float, accept_unknown: bool = False,
         clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> list[Step]:
    """Upgrade every member, one at a time, by the rules above; the steps, each with its figures."""
    roles = members.roles()
    unknown = unknown_roles(roles)
    if unknown and not accept_unknown:
        raise Stopped(f"the VRRP role of {', '.join(unknown)} is unknown (no NFVCAT-VRRP line on its console since "
                      "its last boot); --accept-unknown-roles goes ahead without the role rules", [])
    steps: list[Step] = []
    for name in order(members.names, roles):
        roles = members.roles()
        step = Step(name, dict(roles), started=clock())
        others = [n for n in members.names if n != name]
        if not any(roles.get(o) == MASTER for o in others):
            if roles.get(name) == MASTER and any(roles.get(o) == BACKUP for o in others):
                say(f"{name}: hands the VRRP master role over")
                members.handover(name)
                step.handover = True
                if not within(partial(_has_master, members, others), timeout, 1.0, clock, sleep):
                    raise Stopped(f"{name} handed the master role over, but no other member took it in "
                                  f"{timeout:g} s ({members.roles()})", steps)
            elif not accept_unknown:
                raise Stopped(f"before {name} is touched, no other member holds the VRRP master role ({roles})",
                              steps)
        say(f"{name}: upgrading (roles {members.roles()})")
        t0 = clock()
        members.upgrade(name)
        step.upgraded_s = clock() - t0
        t1 = clock()
        known = not accept_unknown or roles.get(name) in (MASTER, BACKUP)
        if known and not within(partial(members.rejoined, name), timeout, 1.0, clock, sleep):
            steps.append(step)
            raise Stopped(f"{name} announced no VRRP role in {timeout:g} s after its upgrade", steps)
        step.rejoined_s = clock() - t1
        step.roles_after = members.roles()
        step.placement = members.placement()
        steps.append(step)
        if step.placement:
            raise Stopped(f"after {name}: " + "; ".join(step.placement), steps)
        say(f"{name}: upgraded in {step.upgraded_s:.0f} s, rejoined in {step.rejoined_s:.0f} s; placement holds")
    return steps


def _has_master(members: Members, names: list[str]) -> bool:
    roles = members.roles()
    return any(roles.get(n) == MASTER for n in names)

