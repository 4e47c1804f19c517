"""The catalog model: one entry loader (schema-checked), one flavor loader, one extra-spec stringifier,
the site profile, and one size parser per unit language."""

from __future__ import annotations

from pathlib import Path

import pytest

from nfvcat.catalog import entries, flavors, site, specs, units
from nfvcat.core.errors import UserError
from tests.conftest import ROOT


@pytest.mark.parametrize(("value", "unit", "expected"), [
    ("4 GB", "MiB", 3814),      # 4 x 10^9 B, truncated as tacker makes the flavor
    ("4 GiB", "MiB", 4096),
    ("4GiB", "MiB", 4096),
    ("512 MB", "MiB", 488),
    ("8 gib", "MiB", 8192),     # a unit in the wrong case is read as tosca-parser reads it
    ("20 GB", "GiB", 18),
    ("1.5 GiB", "MiB", 1536),
])
def test_tosca_sizes(value: str, unit: str, expected: int) -> None:
    assert units.tosca_size(value, unit) == expected


@pytest.mark.parametrize("value", ["4", "4 GQ", "GB", "", None, [], "four GB"])
def test_not_tosca_sizes(value: object) -> None:
    with pytest.raises(units.SizeError):
        units.tosca_size(value, "MiB")


@pytest.mark.parametrize(("value", "expected"), [
    ("2MB", 2048), ("2MiB", 2048), ("1GB", 1048576), ("4KB", 4), ("2048", 2048), ("large", "large"),
    ("small", "small"), ("any", "any")])
def test_nova_page_sizes(value: str, expected: object) -> None:
    assert units.page_size_kib(value) == expected


@pytest.mark.parametrize("value", ["2M", "1G", "3 MB", "huge"])
def test_what_nova_refuses_as_a_page_size(value: str) -> None:
    with pytest.raises(units.SizeError):  # oslo's string_to_bytes needs the B; Nova raises MemoryPageSizeInvalid
        units.page_size_kib(value)


@pytest.mark.parametrize(("value", "expected"), [
    ("2M", 2048), ("1G", 1048576), ("4K", 4), ("2m", 2048), ("1g", 1048576), ("2MiB", 2048), ("2Mb", 2048),
    ("2 M", 2048), (" 1GiB", 1048576), ("2048", 2048), (4, 4)])
def test_a_hosts_page_sizes(value: object, expected: int) -> None:
    """A host inventory's and a site profile's dialect: the unit's case free, B optional, never bits."""
    assert units.page_size_kib(value, host=True) == expected


@pytest.mark.parametrize("value", ["large", "2T", "2.5M", "2Mbit", "", "-2M"])
def test_what_a_host_page_size_is_not(value: str) -> None:
    with pytest.raises(units.SizeError, match=r"^invalid page size '"):
        units.page_size_kib(value, host=True)


def test_the_site_profile_reads_page_sizes_in_the_host_dialect(tmp_path: Path) -> None:
    profile = tmp_path / "site-profile.yaml"
    profile.write_text("physnets: {}\npage_sizes: [4K, 2m, 1GiB]\n")
    assert site.load(profile).page_sizes_kb == (4, 2048, 1048576)
    profile.write_text("physnets: {}\npage_sizes: [4K, 2Mbit]\n")
    with pytest.raises(UserError, match=r"page_sizes: invalid page size '2Mbit'"):
        site.load(profile)


def test_one_stringifier_for_extra_specs() -> None:
    assert specs.stringify({"hw:vif_multiqueue_enabled": True, "hw:numa_nodes": 2, "x": "y"}) == {
        "hw:vif_multiqueue_enabled": "true", "hw:numa_nodes": "2", "x": "y"}
    assert specs.sol001_specs('{"hw:cpu_policy": "dedicated"}') == {"hw:cpu_policy": "dedicated"}
    assert specs.sol001_specs("hw:cpu_policy: dedicated") == {"hw:cpu_policy": "dedicated"}
    assert specs.sol001_specs("[unclosed") is None and specs.sol001_specs("a string") is None


def test_every_catalog_entry_loads_with_its_schema() -> None:
    found = entries.entries(ROOT)
    kinds = {e.kind for e in found}
    assert kinds == {"heat", "tosca", "vnfd", "flavor", "hook", "image"}
    assert all(e.template.is_file() for e in found if e.kind != "image")  # an image entry is its recipe
    chain = entries.find(ROOT, "chain-vrouter", "heat")
    assert chain.example("sriov") == chain.dir / "examples" / "sriov.env.yaml"
    with pytest.raises(UserError, match="nope: no such file, nor a heat entry"):
        entries.find(ROOT, "nope", "heat")


def test_a_broken_entry_is_one_line_with_file_line_and_rule(tmp_path: Path) -> None:
    (tmp_path / "entry.yaml").write_text("name: x\nversion: one\nkind: heat\ndescription: d\n")
    with pytest.raises(UserError) as err:
        entries.load(tmp_path)
    text = str(err.value)
    assert "\n" not in text and f"{tmp_path / 'entry.yaml'}:2:" in text and "E0010" in text


def test_flavors_by_entry_nova_name_or_path() -> None:
    by_entry = flavors.find("nfv-qat-required")
    assert flavors.find("nfv.qat.required").path == by_entry.path
    assert flavors.find(str(by_entry.path)).name == "nfv.qat.required"
    assert by_entry.pci_aliases() and "qat-vf" in by_entry.pci_aliases()[0]
    with pytest.raises(UserError, match="no catalog flavor"):
        flavors.find("nfv-nope")


def test_site_profile() -> None:
    profile = site.of_catalog(ROOT)
    assert profile.physnet_type("physnet_sriov") == "sriov"
    assert profile.vlan_ranges("physnet_dpdk") == ["200:299"]
    with pytest.raises(UserError, match="no such file"):
        site.of_catalog(ROOT, "/nonexistent/site.yaml")
