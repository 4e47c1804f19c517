"""What other distributions plug into nfvcat, through entry points (as openstackclient's plugins do): the
groups, and one way to list and load them. nfvcat itself names no plugin; ``nfvcat-testbeds`` (the dev cloud
and the labs, ``tools/testbeds``) is one.

- ``nfvcat.commands``: ``NAME = module:register``, a sub-command (``register(subparsers)``, as nfvcat's own).
- ``nfvcat.host_access``: ``NAME = module:factory``, a source ``check --host-access NAME`` opens (``factory()``
  returns a ``nfvcat.cloud.hostaccess.HostAccess``).
- ``nfvcat.campaign_targets``: ``NAME = module:steps``, where a test campaign's data plane runs
  (``nfvcat.campaign.targets``).
- ``nfvcat.traffic_flows``: ``NAME = module:factory``, the constant-rate flow of an outage measurement
  (``--traffic NAME``; ``factory(conn, stack, rate_pps, say)`` returns a ``nfvcat.cloud.outage.Flow``).
"""

from __future__ import annotations

from typing import Any

from nfvcat.core.errors import EXIT_ENGINE, UserError

COMMANDS = "nfvcat.commands"
HOST_ACCESS = "nfvcat.host_access"
CAMPAIGN_TARGETS = "nfvcat.campaign_targets"
TRAFFIC_FLOWS = "nfvcat.traffic_flows"


def names(group: str) -> list[str]:
    """The names installed in ``group``, sorted."""
    from importlib.metadata import entry_points

    return sorted({ep.name for ep in entry_points(group=group)})


def load(group: str, name: str) -> Any | None:
    """The object ``name`` of ``group`` points at; None when no installed distribution offers it. A plugin
    that is installed but cannot be imported is an error that names it (never a traceback)."""
    from importlib.metadata import entry_points

    for ep in entry_points(group=group, name=name):
        try:
            return ep.load()
        except ImportError as exc:
            dist = ep.dist.name if ep.dist else "its distribution"
            raise UserError(f"{group} {name} ({ep.value}, from {dist}) cannot be imported: {exc}",
                            EXIT_ENGINE) from None
    return None
