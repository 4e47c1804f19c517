"""Day 2 on the dev cloud: deploy an earlier release of chain-vrouter, see it outdated in `nfvcat list`, preview
and run its upgrade with `check` passing, a major release refused without its mapping, and a mapped major upgrade
interrupted mid-update that the next run finishes. One stack throughout, to keep the tier short."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.conftest import CLOUD, NFVCAT, ROOT, glance_name, nfvcat

pytestmark = pytest.mark.usefixtures("onboarded")
STACK = "chain-vrouter"


def listed(env: dict[str, str] | None = None) -> dict[str, Any]:
    res = nfvcat("list", "--format", "json", env=env)
    assert res.returncode == 0, res.stderr
    return {r["name"]: r for r in json.loads(res.stdout)}


def versions_of(name: str) -> list[str]:
    from nfvcat.catalog import history

    return history.versions(ROOT, name, "heat")


def major_release(clone: Path) -> None:
    """chain-vrouter 2.0.0 in a clone of the repository: `flavor` renamed `vnf_flavor`, released and committed."""
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    d = clone / "templates" / "heat" / STACK
    tpl = d / "chain-vrouter.yaml"
    tpl.write_text(tpl.read_text().replace("  flavor:\n", "  vnf_flavor:\n")
                   .replace("{get_param: flavor}", "{get_param: vnf_flavor}"))
    for env in (d / "examples").glob("*.yaml"):
        env.write_text(env.read_text().replace("  flavor:", "  vnf_flavor:"))
    meta = yaml.safe_load((d / "entry.yaml").read_text())
    (d / "entry.yaml").write_text((d / "entry.yaml").read_text().replace(f"version: {meta['version']}",
                                                                           "version: 2.0.0", 1))
    log = d / "CHANGELOG.md"
    head, _, rest = log.read_text().partition("\n")
    log.write_text(f"{head}\n\n## 2.0.0\n\n- Upgrading to 2.0.0: `flavor` is now `vnf_flavor`.\n{rest}")
    env = {**os.environ, "NFVCAT_CATALOG_DIR": str(clone)}
    for cmd in (["docs"], ["release", "--no-tag"]):
        res = subprocess.run([*NFVCAT, *cmd], cwd=clone, env=env, capture_output=True, text=True, check=False)
        assert res.returncode == 0, f"{cmd}: {res.stdout[-1500:]}{res.stderr[-1500:]}"
    for git in (["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-qm", "2.0.0"]):
        subprocess.run(["git", *git], cwd=clone, check=True)


def wait_for_update(conn: Any) -> None:
    deadline = time.monotonic() + 120
    while conn.orchestration.get_stack(STACK).status != "UPDATE_IN_PROGRESS" and time.monotonic() < deadline:
        time.sleep(0.3)
    assert conn.orchestration.get_stack(STACK).status == "UPDATE_IN_PROGRESS"


def old_image(conn: Any, version: str) -> dict[str, Any]:
    """The Glance image chain-vrouter ``version``'s release names (its entry.yaml image reference)."""
    from nfvcat.catalog import history

    meta = history.resolve(ROOT, f"{STACK}@{version}", "heat").meta
    [ref] = [r for r in meta["images"] if r["image"] == "vrouter"]
    assert ref["name"] != glance_name("vrouter"), "the release names another image than the working tree"
    [image] = conn.image.get(f"/images?name={ref['name']}").json()["images"]
    assert image["status"] == "active"
    return dict(image)


def release_lock_sha256(version: str) -> str:
    """The sha256 of images/vrouter ``version``'s lock, as the release record's git tree holds it."""
    from nfvcat.catalog import history
    from nfvcat.packaging.images import recipe

    tree = history.checkout(ROOT, "vrouter", "image", version)
    lock = recipe.read_lock(recipe.load("vrouter", tree))
    assert lock is not None and lock.version == version
    return lock.sha256


def kill_heat_engine() -> None:
    """heat-engine dies (SIGKILL) and `nfvcat devcloud up` starts it again, as a host restart would."""
    from nfvcat_testbeds.devcloud import procs
    from nfvcat_testbeds.devcloud.state import State, default_dir

    state = State(default_dir())
    pid = procs.pid_of(state, "heat-engine")
    assert pid, "heat-engine is not running"
    os.killpg(pid, signal.SIGKILL)
    procs.stop(state, "heat-engine", grace=5)
    res = nfvcat("devcloud", "up", timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]


def test_deploy_an_earlier_release_list_upgrade_and_an_interrupted_major_upgrade(conn: Any, tmp_path: Path) -> None:
    assert nfvcat("terminate", STACK).returncode == 0
    released = versions_of(STACK)
    old, newest = released[-2], released[-1]
    t0 = time.monotonic()
    # no -P image=: the release's own image (its Glance name, not onboarded) is put on the cloud first, built from
    # that release's lock (a local rebuild when Debian's mirror moved on since), the user told which and whence
    res = nfvcat("instantiate", f"{STACK}@{old}", "-e", "ovs-dpdk", "--no-check", "--ready-timeout", "0",
                 timeout=3600)  # versions are the point here, not day-0 (the ready line: test_lifecycle)
    assert res.returncode == 0, res.stderr
    image = old_image(conn, old)
    assert f"image {image['name']}: images/vrouter {image['nfvcat_version']} from " in res.stderr, res.stderr
    assert image["nfvcat_lock_sha256"] == release_lock_sha256(image["nfvcat_version"]), image
    stack_image = conn.orchestration.get_stack(STACK).parameters.get("image")
    assert stack_image in (None, image["name"]), stack_image
    print(f"[integration] instantiate {STACK}@{old} with its own image: {time.monotonic() - t0:.0f} s")
    row = listed()[STACK]
    assert (row["entry"], row["version"], row["outdated"]) == (STACK, old, True) and row["newest"] >= newest
    assert conn.orchestration.get_stack(STACK).tags == [f"nfvcat:{STACK}@{old}"]

    res = nfvcat("upgrade", STACK, "--to", newest, "--dry-run", timeout=3600)  # the target's image first
    assert res.returncode == 0, res.stderr
    assert old_image(conn, newest)["nfvcat_lock_sha256"] == release_lock_sha256(newest)
    assert "Heat's update preview:" in res.stdout and "Servers that go down:" in res.stdout
    assert f"CHANGELOG {newest}:" in res.stdout and f"{old} -> {newest}" in res.stdout
    assert listed()[STACK]["version"] == old  # a dry run changes nothing

    # the upgrade killed mid-update together with heat-engine (SIGKILL both), heat-engine started again: the
    # next run finds the stack stalled in UPDATE_IN_PROGRESS and sends the update again
    proc = subprocess.Popen([*NFVCAT, "upgrade", STACK, "--to", newest, "--yes"], cwd=ROOT,
                            env={**os.environ, "OS_CLOUD": CLOUD}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_update(conn)
    proc.kill()
    proc.wait(timeout=30)
    kill_heat_engine()
    assert listed()[STACK]["status"] == "UPDATE_IN_PROGRESS"
    res = nfvcat("upgrade", STACK, "--to", newest, "--yes", "--format", "json", "--host-access", "devcloud",
                 "--stall", "20")
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert report["upgraded"] and report["status"] == "UPDATE_COMPLETE" and report["check"]["ok"]
    assert listed()[STACK]["version"] == newest
    assert conn.orchestration.get_stack(STACK).status == "UPDATE_COMPLETE"

    clone = tmp_path / "clone"
    major_release(clone)
    env = {"NFVCAT_CATALOG_DIR": str(clone)}
    res = nfvcat("upgrade", STACK, "--to", "2.0.0", "--yes", env=env)
    assert res.returncode == 1 and "--map flavor=NEW" in res.stderr, res.stderr
    assert listed(env)[STACK]["version"] == newest

    # the mapped major upgrade, interrupted (Ctrl-C) once Heat is updating: the next run finishes it
    proc = subprocess.Popen([*NFVCAT, "upgrade", STACK, "--to", "2.0.0", "--yes", "--map", "flavor=vnf_flavor"],
                            cwd=ROOT, env={**os.environ, "OS_CLOUD": CLOUD, **env}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    wait_for_update(conn)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) in (130, -signal.SIGINT), proc.stderr.read() if proc.stderr else ""
    assert listed(env)[STACK]["status"] in ("UPDATE_IN_PROGRESS", "UPDATE_COMPLETE")
    res = nfvcat("upgrade", STACK, "--to", "2.0.0", "--yes", "--map", "flavor=vnf_flavor", "--format", "json",
                 "--host-access", "devcloud", env=env)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["check"]["ok"]
    row = listed(env)[STACK]
    assert (row["version"], row["status"], row["outdated"]) == ("2.0.0", "UPDATE_COMPLETE", False)
    stack = conn.orchestration.get_stack(STACK)
    assert stack.parameters["vnf_flavor"] == "nfv.dpdk" and "flavor" not in stack.parameters
    assert len([s for s in conn.compute.servers(all_projects=True) if s.name == "chain-vrouter-1"]) == 1
    res = nfvcat("terminate", STACK, "--format", "json")
    assert res.returncode == 0 and json.loads(res.stdout)["left_behind"] == [], res.stderr
    print(f"[integration] day 2: {time.monotonic() - t0:.0f} s")
