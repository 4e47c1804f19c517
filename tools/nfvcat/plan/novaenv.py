"""Nova, imported on first use (never at nfvcat import time) and configured for planning.

Nova and Heat cannot share a process (oslo.config DuplicateOptError), so only the plan command imports this.
"""

from __future__ import annotations

import json
import logging
import warnings
from types import SimpleNamespace
from typing import Any

_nova: SimpleNamespace | None = None


def nova() -> SimpleNamespace:
    """The Nova modules planning uses; ``objects.register_all()`` done."""
    global _nova
    if _nova is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from nova import conf, exception, objects, weights
            from nova.network import model as network_model
            from nova.objects import fields, pci_device_pool
            from nova.pci import request as pci_request
            from nova.pci import stats as pci_stats
            from nova.pci import whitelist
            from nova.scheduler import utils as scheduler_utils
            from nova.scheduler import weights as scheduler_weights
            from nova.scheduler.filters import extra_specs_ops
            from nova.scheduler.filters.aggregate_instance_extra_specs import AggregateInstanceExtraSpecsFilter
            from nova.scheduler.filters.numa_topology_filter import NUMATopologyFilter
            from nova.virt import hardware
            from oslo_utils import units, uuidutils
        objects.register_all()
        logging.getLogger("nova").setLevel(logging.ERROR)  # the scheduler's debug/warning chatter
        _nova = SimpleNamespace(
            CONF=conf.CONF, exception=exception, objects=objects, fields=fields, hardware=hardware,
            pci_request=pci_request, pci_stats=pci_stats, whitelist=whitelist, network_model=network_model,
            extra_specs_ops=extra_specs_ops, pci_device_pool=pci_device_pool,
            NUMATopologyFilter=NUMATopologyFilter, uuidutils=uuidutils,
            AggregateInstanceExtraSpecsFilter=AggregateInstanceExtraSpecsFilter,
            units=units, weights=weights, scheduler_weights=scheduler_weights,
            scheduler_utils=scheduler_utils)
    return _nova


def configure(pci_alias: list[dict[str, Any]], pci_in_placement: bool = False) -> None:
    """``[pci] alias`` as the API and scheduler would have it (get_pci_requests_from_flavor reads it), and
    ``[filter_scheduler] pci_in_placement`` (RequestSpec's PCI request groups read it)."""
    n = nova()
    n.CONF.set_override("pci_in_placement", pci_in_placement, group="filter_scheduler")
    n.CONF.set_override("alias", [json.dumps(a, sort_keys=True) for a in pci_alias], group="pci")
    n.pci_request.get_alias_from_config.cache_clear()  # functools.cache: the first planner's aliases otherwise


def nova_message(exc: Exception) -> str:
    """Nova's own text for one of its exceptions, with the class name."""
    text = str(exc).strip().rstrip(".")
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
