"""Where a test campaign's data plane runs: a target is a plugin (the ``nfvcat.campaign_targets`` entry points,
``nfvcat.core.plugins``) that adds its steps to a test. nfvcat's runner does the control plane (validate, plan,
onboard, instantiate, check, terminate) against any cloud; the targets ``nfvcat-testbeds`` installs are the
namespace lab (``lab``: the lab's steps in place of the cloud's) and a data plane through the chain the dev cloud
deployed (``cloud``). A campaign that needs a target no installed distribution offers gets a step that cannot
run (exit 3), naming what to install."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from nfvcat.campaign.controlplane import CannotRun, CloudRun
from nfvcat.campaign.results import TestRecord
from nfvcat.catalog.tdf import Tdf, TestSpec
from nfvcat.core import plugins

Say = Callable[[str], None]


@dataclass
class Plan:
    """One step of a test, not yet run."""
    name: str
    label: str
    fn: Callable[[], str]
    cleanup_of: str | None = None  # runs whenever that step started, whatever happened after


@dataclass
class Context:
    """What a target's steps work on: the campaign, the test, its record and the tests done before it."""
    tdf: Tdf
    test: TestSpec
    index: int
    record: TestRecord
    done: dict[str, TestRecord]
    cloud: CloudRun | None
    keep: bool
    say: Say


class Steps(Protocol):
    plans: list[Plan]

    def close(self) -> None:
        """Whatever happened (interrupt included): remove what the steps made, unless ``keep``."""


@dataclass
class _Missing:
    """A target no installed distribution offers: one step that cannot run, and nothing to remove."""
    name: str
    label: str
    plans: list[Plan] = field(default_factory=list)

    def __post_init__(self) -> None:
        def cannot() -> str:
            raise CannotRun(f"campaign target '{self.name}' is not installed: it comes with nfvcat-testbeds "
                            "(tools/testbeds; tools/setup.sh installs it)")
        self.plans = [Plan(self.name, self.label, cannot)]

    def close(self) -> None:
        return None


def open_target(name: str, label: str, ctx: Context) -> Steps:
    """The steps target ``name`` adds to the test of ``ctx`` (``label``: what the step is called when the
    target is missing)."""
    factory: Any = plugins.load(plugins.CAMPAIGN_TARGETS, name)
    if factory is None:
        return _Missing(name, label)
    steps: Steps = factory(ctx)
    return steps
