"""One grammar for every command that takes a catalog entry (issue #42, item 2): ``NAME``, ``NAME@VERSION`` for
every version the release record's history holds, and a path, through one resolver
(``nfvcat.catalog.history.template`` / ``resolve`` / ``locate``). A released version builds and validates as it
was released: its entry.yaml against the schema of its day, the rules of its day, its release date from git's
history of the record when the record of its day held none."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from nfvcat.catalog import entries, history
from nfvcat.core.errors import UserError
from tests.conftest import ROOT, nfvcat


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The command line in this process (``nfvcat.cli.main``, as the script calls it): each version's call
    costs no interpreter start; the subprocess tests above run the real script."""
    from nfvcat import cli

    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def released(prefix: str) -> list[str]:
    """``NAME@VERSION`` of every released version of the entries under ``prefix`` (templates/heat, vnfd, ...)."""
    return sorted(f"{path.rsplit('/', 1)[-1]}@{v}" for path, by in history.released(ROOT).items()
                  if path.startswith(prefix + "/") for v in by)


HEAT = released("templates/heat")
CHAINS = [s for s in HEAT if not s.startswith("net-provider@")]  # net-provider places no server
TOSCA = released("templates/tosca")
VNFD = released("vnfd")
EVERY = sorted(f"{path}@{v}" for path, by in history.released(ROOT).items() for v in by)


def test_the_record_history_has_the_releases_this_file_tests() -> None:
    assert len(EVERY) >= 40 and len(VNFD) == 6 and len(TOSCA) == 3, EVERY
    assert "vnf-vrouter@1.1.1" in VNFD and "chain-vrouter@1.0.0" in HEAT


def test_validate_by_name_by_path_and_every_released_version() -> None:
    by_name = nfvcat("validate", "chain-vrouter")
    by_path = nfvcat("validate", "templates/heat/chain-vrouter", "templates/tosca/chain-vrouter")  # both kinds
    assert by_name.returncode == by_path.returncode == 0, by_name.stdout + by_name.stderr
    assert by_name.stdout.splitlines()[-1] == by_path.stdout.splitlines()[-1]
    both = nfvcat("validate", "vnf-vrouter")  # a heat entry and a vnfd entry share the name: both are validated
    assert both.returncode == 0 and " in 8 file(s)" in both.stdout, both.stdout
    every = nfvcat("validate", *EVERY)  # old entry.yaml files against the schema and rules of their day
    assert every.returncode == 0, every.stdout[-3000:] + every.stderr
    missing = nfvcat("validate", "no-such-entry")
    assert missing.returncode == 1 and "no such file, nor a catalog entry called no-such-entry" in missing.stderr


def test_validate_keeps_e0002_for_a_missing_file() -> None:
    proc = nfvcat("validate", "no-such-file.yaml")
    assert proc.returncode == 2 and "E0002" in proc.stdout


def test_plan_every_released_version(capsys: pytest.CaptureFixture[str]) -> None:
    for spec in CHAINS:
        code, out, err = run(capsys, "plan", spec)
        assert code == 0 and "instance(s) placed" in out, f"{spec}: {err}"


def test_plan_by_name_and_path_agree() -> None:
    by_name = nfvcat("plan", "chain-sfc")
    by_path = nfvcat("plan", "templates/heat/chain-sfc")
    assert by_name.returncode == by_path.returncode == 0, by_name.stderr
    assert by_name.stdout.splitlines()[1:] == by_path.stdout.splitlines()[1:]


def test_translate(capsys: pytest.CaptureFixture[str]) -> None:
    for spec in [*TOSCA, "chain-vrouter", "templates/tosca/chain-vrouter"]:
        code, out, err = run(capsys, "translate", spec)
        assert code == 0 and "OS::Nova::Server" in out, f"{spec}: {err}"


def test_package_every_released_version_by_name_and_path(tmp_path: Path) -> None:
    for spec in VNFD:  # 1.1.1's basehot.yaml predates 'resources': nested byte for byte, as it was packaged
        proc = nfvcat("package", spec, "-o", str(tmp_path))
        assert proc.returncode == 0, f"{spec}: {proc.stderr}"
        name, version = spec.split("@")
        with zipfile.ZipFile(tmp_path / f"{name}-{version}.zip") as z:
            manifest = z.read(f"{name}.mf").decode()
        day = history.release_day(ROOT, spec, "vnfd")
        assert day and f"vnf_release_date_time: {day}T00:00:00+00:00" in manifest
        assert f"vnf_package_version: {version}" in manifest
    zips = sorted(str(p) for p in tmp_path.glob("*.zip"))
    assert len(zips) == len(VNFD)
    checked = nfvcat("validate", *zips)
    assert checked.returncode == 0, checked.stdout
    for arg in ("vnf-vrouter", "vnfd/vnf-vrouter", "vrouter"):
        proc = nfvcat("package", arg, "-o", str(tmp_path / arg.replace("/", "_")))
        assert proc.returncode == 0, f"{arg}: {proc.stderr}"


def test_an_old_release_date_comes_from_the_record_history() -> None:
    """Release 1's record held no dates: the day is the first commit whose record held the version."""
    old = history.released(ROOT)["vnfd/vnf-vrouter"]["1.1.1"]
    assert "released" not in old.record
    assert history.release_day(ROOT, "vnf-vrouter@1.1.1", "vnfd") == "2026-11-23"  # commit 2314b88's day
    assert history.release_day(ROOT, "vnf-vrouter", "vnfd") is None


def test_instantiate_resolves_before_it_asks_the_cloud(capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Each version's files are read and bundled as Heat would get them; then the cloud, which does not exist."""
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", "/dev/null")
    for spec in [*HEAT, "chain-vrouter", "templates/heat/chain-vrouter"]:
        code, _, err = run(capsys, "instantiate", spec, "--os-cloud", "h42-no-such-cloud")
        assert code == 1 and "cloud h42-no-such-cloud" in err and "no such file" not in err, f"{spec}: {err}"
    for spec in VNFD:
        code, _, err = run(capsys, "instantiate", "--via", "tacker", spec, "--os-cloud", "h42-no-such-cloud")
        assert code == 1 and "cloud h42-no-such-cloud" in err, f"{spec}: {err}"
    code, _, err = run(capsys, "instantiate", "chain-vrouter@0.0.1", "--os-cloud", "h42-no-such-cloud")
    assert code == 1 and "never released" in err


def test_day0_every_released_version() -> None:
    """A process per call: Heat's engine, once set up for one version's hook, keeps that process's state."""
    vnf = "templates/heat/vnf-vrouter"
    for spec in [s for s in HEAT if s.startswith("vnf-vrouter@")] + ["vrouter", vnf]:
        proc = nfvcat("day0", "render", spec, "-P", "mgmt_port.fixed_ips.0.ip_address=192.0.2.10")
        assert proc.returncode == 0 and "#cloud-config" in proc.stdout, f"{spec}: {proc.stderr}"


def test_the_one_resolver_names_a_release_a_name_and_a_path() -> None:
    old = history.template("chain-vrouter@1.0.0", root=ROOT)
    assert old.entry_dir is not None and old.entry_dir.is_relative_to(entries.releases_cache().resolve())
    assert entries.schema_of(old.entry_dir) is not None  # release 1 kept its schema in tools/nfvcat/schemas/
    assert entries.release_rules(old.path) is not None and "E0014" not in (entries.release_rules(old.path) or ())
    now = history.template("chain-vrouter", root=ROOT)
    assert now.entry_dir == ROOT / "templates" / "heat" / "chain-vrouter"
    assert entries.schema_of(now.path) is None and entries.release_rules(now.path) is None
    assert history.template("ipsec-gw@1.1.0", root=ROOT).entry_dir.name == "vnf-ipsec-gw"  # type: ignore[union-attr]
    assert [d.parent.name for d in history.locate(ROOT, "vnf-vrouter@1.1.1")] == ["heat", "vnfd"]
    assert [d.parent.name for d in history.locate(ROOT, "vnfd/vnf-vrouter@1.1.1")] == ["vnfd"]
    with pytest.raises(UserError, match="never released"):
        history.template("chain-vrouter@0.9.0", root=ROOT)


def test_upgrade_to_takes_a_version_or_the_entry_as_every_command_names_it() -> None:
    newest = history.newest(ROOT, "chain-vrouter", "heat")
    assert history.target_version(ROOT, "chain-vrouter", "heat", None) == newest
    assert history.target_version(ROOT, "chain-vrouter", "heat", "1.1.0") == "1.1.0"
    assert history.target_version(ROOT, "chain-vrouter", "heat", "chain-vrouter@1.0.0") == "1.0.0"
    here = entries.find(ROOT, "chain-vrouter", "heat").version
    assert history.target_version(ROOT, "chain-vrouter", "heat", "chain-vrouter") == here
    assert history.target_version(ROOT, "chain-vrouter", "heat", str(ROOT / "templates/heat/chain-vrouter")) == here
    with pytest.raises(UserError, match="names templates/heat/chain-sfc, but the deployed stack is"):
        history.target_version(ROOT, "chain-vrouter", "heat", "chain-sfc@1.0.0")
    assert history.target_version(ROOT, "vnf-vrouter", "vnfd", "vnf-vrouter@2.0.0") == "2.0.0"
