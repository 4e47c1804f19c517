"""Nova engine: Nova's own extra-spec validators, then the cross-key checks Nova's API runs at boot.

Per flavor: every key goes through ``nova.api.validation.extra_specs.validators.validate`` (what the
API does at microversion 2.86+), unknown namespaces are reported (Nova lets them pass silently), then
``nova.compute.api.API._validate_flavor_image_numa_pci`` runs ``numa_get_constraints`` and the other
constraint getters exactly as Nova does when a server is created with the flavor, and
``nova.virt.hardware.get_best_cpu_topology`` as the libvirt driver does when it spawns the guest (a vCPU count
no topology within the hw:cpu_max_* limits can make fails there, after scheduling).
"""

from __future__ import annotations

from typing import Any

from nfvcat.catalog import units
from nfvcat.catalog.flavors import pci_aliases
from nfvcat.catalog.specs import sol001_specs, spec_str
from nfvcat.core.documents import Document
from nfvcat.validation.emitted import (
    EXTRA_SPEC_INVALID,
    HUGE_PAGES_WHOLE,
    NUMA_CONSTRAINTS,
    PAGE_SIZE_NOT_OFFERED,
    UNKNOWN_NAMESPACE,
)
from nfvcat.validation.engines import nova_neutron, nova_server
from nfvcat.validation.engines.jobs import EngineJob, JobContext
from nfvcat.validation.engines.worker import Job, Result, finding, serve

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
    "ImageVCPULimitsRangeImpossible": ("hw:cpu_max_sockets", "hw:cpu_max_cores", "hw:cpu_max_threads"),
    "ImageVCPUTopologyRangeExceeded": ("hw:cpu_sockets", "hw:cpu_cores", "hw:cpu_threads",
                                       "hw:cpu_max_sockets", "hw:cpu_max_cores", "hw:cpu_max_threads"),
    "FlavorImageConflict": ("hw:mem_encryption",),
}


def jobs(doc: Document, ctx: JobContext) -> list[EngineJob]:
    """A Nova flavor check for a catalog flavor, each OS::Nova::Flavor of a template, each Vdu of a VNFD."""
    if doc.kind == "flavor":
        data = doc.data
        specs = data.get("extra_specs")
        specs = specs if isinstance(specs, dict) else {}
        return [EngineJob(ENGINE, doc, {
            "name": str(data.get("name")), "vcpus": _positive(data.get("vcpus"), 1),
            "ram": _positive(data.get("ram"), 512), "disk": _positive(data.get("disk"), 0),
            "extra_specs": _string_specs(None, specs, {}), "pci_alias": pci_aliases(data),
            "page_sizes": list(ctx.rules.site.page_sizes_kb)}, ("extra_specs",))]
    if doc.kind == "hot":
        return _hot_flavors(doc, ctx) + nova_server.jobs(doc, ctx) + nova_neutron.jobs(doc, ctx)
    if doc.kind == "vnfd":
        out = []
        for where, _ in _vnfd_flavors(doc.data):
            compute = _dig(doc.data, where[:-2]) or {}
            cpu = _dig(compute, ("virtual_cpu", "num_virtual_cpu"))
            mem = _mib(_dig(compute, ("virtual_memory", "virtual_mem_size")))
            out.append(EngineJob(ENGINE, doc, {
                "name": str(where[2]) if len(where) > 2 else "vdu",
                "vcpus": _positive(cpu, 1), "ram": _positive(mem, 512),
                "extra_specs": _string_specs(None, sol001_specs(_dig(doc.data, where)) or {}, {}),
                "page_sizes": list(ctx.rules.site.page_sizes_kb)},
                where))
        return out
    return []


def _hot_flavors(doc: Document, ctx: JobContext) -> list[EngineJob]:
    from nfvcat.core import hot

    out = []
    for name, body in hot.resources(doc.data, "OS::Nova::Flavor"):
        p = hot.props(body)
        specs = p.get("extra_specs")
        specs = specs if isinstance(specs, dict) else {}
        vcpus = hot.resolve(doc.data, p.get("vcpus"), ctx.rules.parameters)
        ram = hot.resolve(doc.data, p.get("ram"), ctx.rules.parameters)
        out.append(EngineJob(ENGINE, doc, {
            "name": name, "vcpus": _positive(vcpus, 1), "ram": _positive(ram, 512),
            "extra_specs": _string_specs(doc.data, specs, ctx.rules.parameters),
            "page_sizes": list(ctx.rules.site.page_sizes_kb)},
            ("resources", name, "properties", "extra_specs")))
    return out


def _vnfd_flavors(data: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    """(path of nova_extra_specs, its virtual_compute properties) for every Vdu in a SOL001 VNFD."""
    found: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    if isinstance(data, dict):
        for key, value in data.items():
            if key == "nova_extra_specs" and sol001_specs(value) is not None and len(path) >= 2:
                found.append((path + (key,), {}))
            else:
                found.extend(_vnfd_flavors(value, path + (key,)))
    elif isinstance(data, list):
        for i, item in enumerate(data):
            found.extend(_vnfd_flavors(item, path + (i,)))
    return found


def _dig(data: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        if isinstance(data, dict):
            data = data.get(key)
        elif isinstance(data, list) and isinstance(key, int) and key < len(data):
            data = data[key]
        else:
            return None
    return data


def _mib(value: Any) -> int | None:
    """A VNFD memory size in MiB as tacker makes the flavor (a bad one is tosca-parser's finding)."""
    try:
        return units.tosca_size(value, "MiB")
    except units.SizeError:
        return None


def _positive(value: Any, default: int) -> int:
    """A size for Nova's objects; a bad one is reported by E2004, Nova gets the default."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2**31 else default


def _string_specs(data: Any, specs: dict[str, Any], params: dict[str, Any]) -> dict[str, str]:
    from nfvcat.core import hot

    out = {}
    for key, value in specs.items():
        value = hot.resolve(data, value, params)
        if value is not hot.UNRESOLVED and not isinstance(value, (dict, list)):
            out[str(key)] = spec_str(value)
    return out


def setup() -> None:
    from nova import config, objects
    from nova.api.validation.extra_specs import validators

    config.CONF([], project="nova", default_config_files=[])
    objects.register_all()
    validators.load_validators()
    _state["namespaces"] = {name.split(":", 1)[0] for name in validators.VALIDATORS if ":" in name}
    _state["namespaces"] |= set(validators.NAMESPACES)


def _involved(exc: Exception, specs: dict[str, str]) -> list[str]:
    """The extra specs a Nova exception is about, in the flavor's order: the finding is at the last one (the
    one added to a flavor that was fine before) and names them all."""
    names = _KEYS_OF.get(type(exc).__name__, ())
    return [k for k in specs if any(k == n or k.startswith(n + ".") for n in names)]


def _conflict(exc: Exception, specs: dict[str, str]) -> dict[str, Any]:
    involved = _involved(exc, specs)
    keys = f" [{', '.join(f'{k}={specs[k]}' for k in involved)}]" if len(involved) > 1 else ""
    return finding(NUMA_CONSTRAINTS.id, involved[-1:], f"{type(exc).__name__}: {exc}{keys}", ENGINE)


def check(job: Job) -> Result:
    import re

    from nova import exception, objects
    from nova.api.validation.extra_specs import validators
    from nova.compute import api as compute_api
    from nova.pci import request as pci_request
    from oslo_config import cfg

    if "server" in job:
        return nova_server.check(job)
    if "qos_policy" in job:
        return nova_neutron.check(job)
    if "server_group" in job:
        return nova_server.check_server_group(job)
    specs = {str(k): str(v) for k, v in (job.get("extra_specs") or {}).items()}
    findings: list[dict[str, Any]] = []
    for key, value in specs.items():
        try:
            validators.validate(key, value)
        except exception.ValidationError as exc:
            findings.append(finding(EXTRA_SPEC_INVALID.id, [key], str(exc), ENGINE))
            continue
        if ":" in key:
            ns = key.split(":", 1)[0]
            if not any(re.fullmatch(n, ns) for n in _state["namespaces"]):
                findings.append(finding(
                    UNKNOWN_NAMESPACE.id, [key], f"extra spec namespace '{ns}' is not one Nova knows: '{key}' is "
                    "ignored by Nova and by the scheduler unless a filter of the site's reads it", ENGINE))
    if findings and any(f["id"] == EXTRA_SPEC_INVALID.id for f in findings):
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
        # what the libvirt driver asks at spawn (_get_guest_cpu_config): a guest topology within the limits
        cpu_topology(flavor, objects.ImageMeta.from_dict(image))
    except (exception.Invalid, exception.NovaException, ValueError) as exc:
        findings.append(_conflict(exc, specs))
    else:
        findings.extend(_page_size(flavor, image, job.get("page_sizes")))
    finally:
        if aliases:
            cfg.CONF.clear_override("alias", "pci")
        pci_request.get_alias_from_config.cache_clear()
    return {"findings": findings, "deps": {}}


# Nova's topology search (hardware._get_possible_cpu_topologies) tries every sockets x cores x threads up to the
# vCPU count: cubic, measured 0.007 s at 64 vCPUs, 0.44 s at 256, 26 s at 1024 (a VNFD asking 4095 held the
# engine for half an hour). Above this count the same verdict comes from the divisors of the count.
SEARCHED_VCPUS = 64


def cpu_topology(flavor: Any, image_meta: Any) -> None:
    """Raise what ``hardware.get_best_cpu_topology`` raises for the flavor and image: Nova's own search up to
    SEARCHED_VCPUS vCPUs; above, Nova's constraints and whether any sockets x cores x threads within its limits
    make the count (ImageVCPULimitsRangeImpossible, with Nova's message, if none does)."""
    from nova import exception
    from nova.virt import hardware

    vcpus = int(flavor.vcpus)
    if vcpus <= SEARCHED_VCPUS:
        hardware.get_best_cpu_topology(flavor, image_meta)
        return
    _preferred, maximum = hardware.get_cpu_topology_constraints(flavor, image_meta)
    limits = (min(vcpus, maximum.sockets), min(vcpus, maximum.cores), min(vcpus, maximum.threads))
    if not splits(vcpus, *limits):
        raise exception.ImageVCPULimitsRangeImpossible(vcpus=vcpus, sockets=limits[0], cores=limits[1],
                                                       threads=limits[2])


def splits(vcpus: int, sockets: int, cores: int, threads: int) -> bool:
    """Whether some s <= sockets, c <= cores, t <= threads have s * c * t == vcpus."""
    divisors = [d for d in range(1, int(vcpus ** 0.5) + 1) if vcpus % d == 0]
    divisors = sorted({*divisors, *(vcpus // d for d in divisors)})
    return any(t <= threads and c <= cores and vcpus // (t * c) <= sockets
               for t in divisors for c in divisors if (vcpus // t) % c == 0)


def _page_size(flavor: Any, image: dict[str, Any], sizes: Any) -> list[dict[str, Any]]:
    """A page size (read as Nova reads it) that none of the site's hosts offers: no host fits."""
    from nova import objects
    from nova.virt import hardware

    if not isinstance(sizes, list) or not sizes:
        return []
    size = hardware._get_numa_pagesize_constraint(flavor, objects.ImageMeta.from_dict(image))
    if size is None:
        return []
    if size < 0 or int(size) in sizes:  # small/large/any, or a size the site offers
        return _whole_pages(flavor, image, sizes)
    request = flavor.extra_specs.get("hw:mem_page_size")
    offered = ", ".join(_kib_label(s) for s in sorted(sizes))
    return [finding(PAGE_SIZE_NOT_OFFERED.id, ["hw:mem_page_size"], f"hw:mem_page_size {request} asks for "
                    f"{_kib_label(int(size))} pages; the site's hosts offer {offered}: no host can boot this "
                    "flavor (the NUMA topology filter finds none)", ENGINE)]


def _whole_pages(flavor: Any, image: dict[str, Any], sizes: list[int]) -> list[dict[str, Any]]:
    """Each NUMA cell's memory against the page sizes it may take, by Nova's own test of a host cell
    (hardware._numa_cell_supports_pagesize_request, NUMACell.can_fit_pagesize): a cell whose memory is not a
    whole number of pages of any size it may take fits no host cell of the site, however large (NoValidHost)."""
    from nova import objects
    from nova.virt import hardware

    topology = hardware.numa_get_constraints(flavor, objects.ImageMeta.from_dict(image))
    if topology is None:
        return []
    host = objects.NUMACell(  # a host cell with every page size of the site and memory to spare
        id=0, cpuset=set(), pcpuset=set(), memory=2**30, cpu_usage=0, memory_usage=0, siblings=[],
        pinned_cpus=set(), network_metadata=objects.NetworkMetadata(physnets=set(), tunneled=False),
        mempages=[objects.NUMAPagesTopology(size_kb=s, total=2**40 // s, used=0, reserved=0) for s in sizes])
    out = []
    for cell in topology.cells:
        allowed = {hardware.MEMPAGES_LARGE: sorted(sizes)[1:], hardware.MEMPAGES_ANY: sizes}.get(
            cell.pagesize, [cell.pagesize])
        if not allowed or hardware._numa_cell_supports_pagesize_request(host, cell) is not None:
            continue  # no large page size at the site is not about whole pages
        request = flavor.extra_specs.get("hw:mem_page_size")
        cells = len(topology.cells)
        whose = f"NUMA cell {cell.id}'s memory ({cell.memory} MiB)" if cells > 1 else \
            f"the flavor's memory ({cell.memory} MiB)"
        keys = ["hw:mem_page_size"] + ([f"hw:numa_mem.{cell.id}"] if f"hw:numa_mem.{cell.id}" in
                                       flavor.extra_specs else [])
        out.append(finding(HUGE_PAGES_WHOLE.id, keys[-1:], f"{whose} is not a whole number of "
                           f"{' or '.join(_kib_label(s) for s in allowed)} pages (hw:mem_page_size {request}): Nova's "
                           "NUMA fitting (NUMACell.can_fit_pagesize) places it on no host, whatever the cloud "
                           "(No valid host)", ENGINE))
    return out


def _kib_label(kib: int) -> str:
    for unit, scale in (("GiB", 1048576), ("MiB", 1024)):
        if kib % scale == 0:
            return f"{kib // scale} {unit}"
    return f"{kib} KiB"


def main() -> None:
    serve(ENGINE, setup, check)


if __name__ == "__main__":
    main()
