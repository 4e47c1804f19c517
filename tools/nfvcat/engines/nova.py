"""Nova engine: Nova's own extra-spec validators, then the cross-key checks Nova's API runs at boot.

Per flavor: every key goes through ``nova.api.validation.extra_specs.validators.validate`` (what the
API does at microversion 2.86+), unknown namespaces are reported (Nova lets them pass silently), then
``nova.compute.api.API._validate_flavor_image_numa_pci`` runs ``numa_get_constraints`` and the other
constraint getters exactly as Nova does when a server is created with the flavor.
"""

from __future__ import annotations

from typing import Any

from nfvcat.engines.worker import Job, Result, finding, serve
from nfvcat.rules.flavors.e2001_extra_spec import ExtraSpecInvalid
from nfvcat.rules.flavors.e2002_numa_constraints import NumaConstraints
from nfvcat.rules.flavors.e2005_page_size import PageSizeNotOffered
from nfvcat.rules.flavors.w2003_unknown_namespace import UnknownNamespace

ENGINE = "nova"
_state: dict[str, Any] = {}

# Nova exception -> the extra specs the problem is about, by name or name prefix (``hw:numa_cpus``
# covers ``hw:numa_cpus.0``). A conflict between two keys points at the later one in the flavor: the
# one that was added to a flavor that was fine before.
_KEYS_OF: dict[str, tuple[str, ...]] = {
    "CPUThreadPolicyConfigurationInvalid": ("hw:cpu_thread_policy", "hw:cpu_policy"),
    "RealtimeConfigurationInvalid": ("hw:cpu_realtime", "hw:cpu_policy"),
    "RealtimeMaskNotFoundOrInvalid": ("hw:cpu_realtime_mask", "hw:cpu_realtime"),
    "BadRequirementEmulatorThreadsPolicy": ("hw:emulator_threads_policy", "hw:cpu_policy"),
    "InvalidEmulatorThreadsPolicy": ("hw:emulator_threads_policy",),
    "InvalidCPUThreadAllocationPolicy": ("hw:cpu_thread_policy",),
    "InvalidCPUAllocationPolicy": ("hw:cpu_policy",),
    "InvalidNUMANodesNumber": ("hw:numa_nodes",),
    "ImageNUMATopologyIncomplete": ("hw:numa_nodes", "hw:numa_cpus", "hw:numa_mem"),
    "ImageNUMATopologyAsymmetric": ("hw:numa_nodes",),
    "ImageNUMATopologyCPUOutOfRange": ("hw:numa_cpus",),
    "ImageNUMATopologyCPUDuplicates": ("hw:numa_cpus",),
    "ImageNUMATopologyCPUsUnassigned": ("hw:numa_cpus",),
    "ImageNUMATopologyMemoryOutOfRange": ("hw:numa_mem",),
    "MemoryPageSizeInvalid": ("hw:mem_page_size",),
    "InvalidPCINUMAAffinity": ("hw:pci_numa_affinity_policy",),
    "PciRequestAliasNotDefined": ("pci_passthrough:alias",),
    "PciInvalidAlias": ("pci_passthrough:alias",),
    "RequiredMixedInstancePolicy": ("hw:cpu_dedicated_mask", "hw:cpu_policy"),
    "RequiredMixedOrRealtimeCPUMask": ("hw:cpu_policy", "hw:cpu_dedicated_mask", "hw:cpu_realtime_mask"),
    "InvalidMixedInstanceDedicatedMask": ("hw:cpu_dedicated_mask",),
    "MixedInstanceNotSupportByComputeService": ("hw:cpu_policy",),
    "ImageVCPULimitsRangeExceeded": ("hw:cpu_max_sockets", "hw:cpu_max_cores", "hw:cpu_max_threads"),
    "ImageVCPUTopologyRangeExceeded": ("hw:cpu_sockets", "hw:cpu_cores", "hw:cpu_threads",
                                       "hw:cpu_max_sockets", "hw:cpu_max_cores", "hw:cpu_max_threads"),
    "FlavorImageConflict": ("hw:mem_encryption",),
}


def setup() -> None:
    from nova import config, objects
    from nova.api.validation.extra_specs import validators

    config.CONF([], project="nova", default_config_files=[])
    objects.register_all()
    validators.load_validators()
    _state["namespaces"] = {name.split(":", 1)[0] for name in validators.VALIDATORS if ":" in name}
    _state["namespaces"] |= set(validators.NAMESPACES)


def _key_for(exc: Exception, specs: dict[str, str]) -> list[str]:
    """The extra spec a Nova exception is about: of the keys it involves, the last one in the flavor."""
    names = _KEYS_OF.get(type(exc).__name__, ())
    involved = [k for k in specs if any(k == n or k.startswith(n + ".") for n in names)]
    return involved[-1:]


def check(job: Job) -> Result:
    import re

    from nova import exception, objects
    from nova.api.validation.extra_specs import validators
    from nova.compute import api as compute_api
    from nova.pci import request as pci_request
    from oslo_config import cfg

    specs = {str(k): str(v) for k, v in (job.get("extra_specs") or {}).items()}
    findings: list[dict[str, Any]] = []
    for key, value in specs.items():
        try:
            validators.validate(key, value)
        except exception.ValidationError as exc:
            findings.append(finding(ExtraSpecInvalid.id, [key], str(exc), ENGINE))
            continue
        if ":" in key:
            ns = key.split(":", 1)[0]
            if not any(re.fullmatch(n, ns) for n in _state["namespaces"]):
                findings.append(finding(
                    UnknownNamespace.id, [key], f"extra spec namespace '{ns}' is not one Nova knows: '{key}' is "
                    "ignored by Nova and by the scheduler unless a filter of the site's reads it", ENGINE))
    if findings and any(f["id"] == ExtraSpecInvalid.id for f in findings):
        return {"findings": findings, "deps": {}}

    flavor = objects.Flavor(
        name=str(job.get("name") or "flavor"), flavorid="nfvcat", vcpus=int(job.get("vcpus") or 1),
        memory_mb=int(job.get("ram") or 512), root_gb=int(job.get("disk") or 0), ephemeral_gb=0, swap=0,
        extra_specs=specs)
    image = {"properties": dict(job.get("image_properties") or {})}
    aliases = job.get("pci_alias")
    if aliases:
        cfg.CONF.set_override("alias", list(aliases), "pci")
    pci_request.get_alias_from_config.cache_clear()  # Nova caches the parsed aliases of the first flavor
    try:
        compute_api.API._validate_flavor_image_numa_pci(image, flavor, validate_numa=True,
                                                        validate_pci=bool(aliases))
    except (exception.Invalid, exception.NovaException, ValueError) as exc:
        findings.append(finding(NumaConstraints.id, _key_for(exc, specs), f"{type(exc).__name__}: {exc}", ENGINE))
    else:
        findings.extend(_page_size(flavor, image, job.get("page_sizes")))
    finally:
        if aliases:
            cfg.CONF.clear_override("alias", "pci")
        pci_request.get_alias_from_config.cache_clear()
    return {"findings": findings, "deps": {}}


def _page_size(flavor: Any, image: dict[str, Any], sizes: Any) -> list[dict[str, Any]]:
    """A page size (read as Nova reads it) that none of the site's hosts offers: no host fits."""
    from nova import objects
    from nova.virt import hardware

    if not isinstance(sizes, list) or not sizes:
        return []
    size = hardware._get_numa_pagesize_constraint(flavor, objects.ImageMeta.from_dict(image))
    if size is None or size < 0 or int(size) in sizes:  # none asked, or small/large/any
        return []
    request = flavor.extra_specs.get("hw:mem_page_size")
    offered = ", ".join(_kib_label(s) for s in sorted(sizes))
    return [finding(PageSizeNotOffered.id, ["hw:mem_page_size"], f"hw:mem_page_size {request} asks for "
                    f"{_kib_label(int(size))} pages; the site's hosts offer {offered}: no host can boot this "
                    "flavor (the NUMA topology filter finds none)", ENGINE)]


def _kib_label(kib: int) -> str:
    for unit, scale in (("GiB", 1048576), ("MiB", 1024)):
        if kib % scale == 0:
            return f"{kib // scale} {unit}"
    return f"{kib} KiB"


def main() -> None:
    serve(ENGINE, setup, check)


if __name__ == "__main__":
    main()
