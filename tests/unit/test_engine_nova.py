"""The nova engine as the runner uses it: a worker process, JSON jobs in, JSON results out."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import ROOT, findings_of, nfvcat


def _run(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    proc = subprocess.run([sys.executable, "-m", "nfvcat.validation.engines.nova"],
                          input=json.dumps({"jobs": jobs}) + "\n",
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    results: list[dict[str, Any]] = json.loads(proc.stdout)["results"]
    return results


def _flavor(alias: str, product: str) -> dict[str, Any]:
    return {"name": f"flavor-{alias}", "vcpus": 2, "ram": 1024,
            "extra_specs": {"pci_passthrough:alias": f"{alias}:1"},
            "pci_alias": [json.dumps({"name": alias, "vendor_id": "8086", "product_id": product,
                                      "device_type": "type-PF"})]}


def test_each_flavor_is_checked_with_its_own_pci_aliases_in_either_order() -> None:
    a, b = _flavor("nic-a", "1572"), _flavor("nic-b", "158b")
    missing = dict(_flavor("nic-c", "1593"), extra_specs={"pci_passthrough:alias": "nic-a:1"})
    for order in ([a, b, missing], [missing, b, a]):
        results = _run(order)
        by_name = {job["name"]: result["findings"] for job, result in zip(order, results, strict=True)}
        assert by_name["flavor-nic-a"] == [] and by_name["flavor-nic-b"] == [], by_name
        [finding] = by_name["flavor-nic-c"]  # asks for nic-a, but its own aliases only define nic-c
        assert finding["id"] == "E2002" and "PciRequestAliasNotDefined" in finding["message"]
        assert finding["path"] == ["pci_passthrough:alias"]


def test_a_conflict_between_two_keys_points_at_the_later_one() -> None:
    pairs = [("hw:cpu_policy", "shared"), ("hw:cpu_thread_policy", "isolate")]
    jobs = [{"name": "f", "vcpus": 2, "ram": 1024, "extra_specs": dict(order)} for order in (pairs, pairs[::-1])]
    results = _run(jobs)
    for order, result in zip((pairs, pairs[::-1]), results, strict=True):
        [finding] = result["findings"]
        assert "CPUThreadPolicyConfigurationInvalid" in finding["message"]
        assert finding["path"] == [order[-1][0]], (order, finding)


def test_a_page_size_no_host_offers_is_e2005() -> None:
    x86 = [4, 2048, 1048576]
    cases = {"3MB": (x86, ["E2005"]), "2MB": (x86, []), "1GB": ([4, 2048], ["E2005"]), "large": ([4], []),
             "2048": (x86, [])}
    jobs = [{"name": f"f{i}", "vcpus": 2, "ram": 1024, "extra_specs": {"hw:mem_page_size": size},
             "page_sizes": sizes} for i, (size, (sizes, _)) in enumerate(cases.items())]
    for (size, (_, expected)), result in zip(cases.items(), _run(jobs), strict=True):
        assert [f["id"] for f in result["findings"]] == expected, (size, result)
        for f in result["findings"]:
            assert f["path"] == ["hw:mem_page_size"] and size in f["message"]


def test_the_site_profile_says_which_page_sizes_its_hosts_offer(tmp_path: Path) -> None:
    flavor = tmp_path / "flavor.yaml"
    flavor.write_text("name: f\nvcpus: 2\nram: 2048\nextra_specs:\n  hw:mem_page_size: 1GB\n")
    site = tmp_path / "site.yaml"
    site.write_text("kind: nfvcat/site-profile\nphysnets: {}\npage_sizes: [4K, 2M]\n")
    code, found = findings_of(str(flavor))
    assert code == 0 and found == []  # x86_64 by default: 1 GiB pages exist
    code, found = findings_of("--site", str(site), str(flavor))
    assert code == 2 and [(f["id"], f["line"]) for f in found] == [("E2005", 5)]
    site.write_text("kind: nfvcat/site-profile\nphysnets: {}\npage_sizes: [2Q]\n")
    proc = nfvcat("validate", "--site", str(site), str(flavor))
    assert proc.returncode == 1 and "page_sizes" in proc.stderr and "Traceback" not in proc.stderr


def test_the_topology_verdict_above_the_searched_count_is_novas_own() -> None:
    # the divisor arithmetic that stands for Nova's cubic search above SEARCHED_VCPUS agrees with that search
    # wherever the search is cheap enough to run: every count up to 72, limits from 1 to 9 and unbounded
    from nova import config, exception, objects
    from nova.virt import hardware

    from nfvcat.validation.engines import nova

    config.CONF([], project="nova", default_config_files=[])
    objects.register_all()
    limits = [1, 2, 3, 4, 6, 9, 65536]
    for vcpus in range(1, 73):
        for s in limits:
            for c in limits:
                for t in limits:
                    top = objects.VirtCPUTopology(sockets=s, cores=c, threads=t)
                    try:
                        hardware._get_possible_cpu_topologies(vcpus, top, True)
                        possible = True
                    except exception.ImageVCPULimitsRangeImpossible:
                        possible = False
                    assert nova.splits(vcpus, min(vcpus, s), min(vcpus, c), min(vcpus, t)) is possible, (vcpus, s, c, t)


def test_a_huge_vcpu_count_is_judged_at_once(tmp_path: Path) -> None:
    # found by the fuzz batch: num_virtual_cpu 4095 held the nova engine in Nova's cubic search for ~30 min
    base = {"name": "big", "ram": 1024, "extra_specs": {"hw:cpu_policy": "dedicated"}}
    free, bound = _run([{**base, "vcpus": 4095},
                        {**base, "vcpus": 4093, "extra_specs": {"hw:cpu_max_sockets": "2", "hw:cpu_max_cores": "8",
                                                                "hw:cpu_max_threads": "2"}}])
    assert free["findings"] == []
    [finding] = bound["findings"]  # 4093 is prime: no split within 2 sockets, 8 cores, 2 threads
    assert finding["id"] == "E2002" and "ImageVCPULimitsRangeImpossible" in finding["message"], finding
