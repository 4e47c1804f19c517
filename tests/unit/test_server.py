"""The engine server: same findings as in-process, and its faults: a killed or hung worker, a killed server,
a stale socket, a changed nfvcat or site profile, another user, the idle exit.

Each test has its own cache directory, so its own server, and stops it (and any worker left) at the end.
Root is needed for the other-user test (it runs a client as uid 65534 with setpriv).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, nfvcat

RULES = ROOT / "tests" / "fixtures" / "rules"
TEMPLATE = """heat_template_version: 2021-04-16
parameters:
  vlan: {type: number, default: 150, constraints: [{range: {min: 100, max: 199}}]}
resources:
  net:
    type: OS::Neutron::ProviderNet
    properties:
      network_type: vlan
      physical_network: physnet_sriov
      segmentation_id: {get_param: vlan}
"""


class Server:
    def __init__(self, cache: Path):
        self.cache = cache
        self.env = {"NFVCAT_CACHE_DIR": str(cache), "NFVCAT_NO_SERVER": "0", "NFVCAT_SERVER_IDLE": "600"}

    @property
    def dir(self) -> Path:
        return self.cache / "server"

    def run(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return nfvcat(*args, env={**self.env, **(env or {})}, timeout=300)

    def validate(self, *paths: str, env: dict[str, str] | None = None) -> tuple[int, list[dict[str, Any]]]:
        proc = self.run("validate", "--format", "json", *paths, env=env)
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc.returncode, json.loads(proc.stdout)["findings"]

    def status(self) -> dict[str, Any] | None:
        proc = self.run("server", "status", "--format", "json")
        return json.loads(proc.stdout)["status"]

    def pids(self) -> list[int]:
        status = self.status()
        if not status:
            return []
        return [status["pid"], *(w["pid"] for w in status["workers"].values() if w["pid"])]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()[0] if Path(
        f"/proc/{pid}/stat").exists() else "X"
    return state not in ("Z", "X")


def _wait_gone(pids: list[int], timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(_alive(p) for p in pids):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def server() -> Iterator[Server]:
    cache = Path(tempfile.mkdtemp(prefix="nfvcat-server-test-", dir="/tmp"))
    os.chmod(cache, 0o711)  # the other-user test needs to reach the server directory to be refused there
    srv = Server(cache)
    seen: set[int] = set()
    try:
        yield srv
    finally:
        seen.update(srv.pids())
        srv.run("server", "stop")
        if not _wait_gone(list(seen), 20):
            for pid in seen:
                if _alive(pid):
                    os.kill(pid, signal.SIGKILL)
        subprocess.run(["rm", "-rf", str(cache)], check=False)


def test_findings_are_the_same_with_and_without_the_server(server: Server) -> None:
    fixtures = sorted(str(p.relative_to(ROOT)) for p in RULES.rglob("*") if p.is_file())
    for args in ([], fixtures):  # the whole catalog, then every rule fixture
        alone = server.run("validate", "--format", "json", "--no-cache", "--no-server", *args)
        served = server.run("validate", "--format", "json", "--no-cache", *args)
        assert server.status() is not None, "the first validate starts the server"
        assert (served.returncode, served.stdout) == (alone.returncode, alone.stdout)
        assert json.loads(served.stdout)["findings"] or not args, "the fixtures have findings to compare"


def test_unsaved_content_gives_the_same_findings_with_and_without_the_server(server: Server) -> None:
    """--stdin-filename (an editor's buffer) over the protocol: each rule fixture's content validated as
    the other fixture of its rule (fail as pass.yaml, pass as fail.yaml), where the file on disk differs."""
    rules = ("E0001", "E0006", "E1001", "E1003", "E1004", "W1005", "E2001", "E3001", "W3004", "E4001", "E6001")
    pairs = [(RULES / r / "fail.yaml", RULES / r / "pass.yaml") for r in rules]
    compared = 0
    for fail, good in pairs:
        for content, shown in ((fail, good), (good, fail)):
            args = ("validate", "--format", "json", "--no-cache", "--stdin-filename", str(shown.relative_to(ROOT)))
            text = content.read_text(errors="surrogateescape")
            alone = nfvcat(*args, "--no-server", env=server.env, stdin=text, timeout=300)
            served = nfvcat(*args, env=server.env, stdin=text, timeout=300)
            assert "Traceback" not in served.stderr, served.stderr
            assert (served.returncode, served.stdout) == (alone.returncode, alone.stdout), shown
            compared += bool(json.loads(served.stdout)["findings"])
    assert server.status() is not None and compared >= len(pairs), "the fail contents have findings"


def test_every_output_and_a_user_error_are_the_same_with_and_without_the_server(server: Server,
                                                                             tmp_path: Path) -> None:
    """The server prints a command line's call itself (text, SARIF, suppressed findings, --strict's exit
    code, a missing environment file's one-line error): byte for byte what the command prints in-process."""
    fixtures = [str(RULES / r / "fail.yaml") for r in ("E1001", "W1005", "E2001", "E6001")]
    calls = [("--format", "text", "--show-suppressed", *fixtures), ("--format", "sarif", *fixtures),
             ("--strict", str(RULES / "W1005" / "fail.yaml")), ("-e", str(tmp_path / "missing.yaml"), fixtures[0])]
    for args in calls:
        alone = server.run("validate", "--no-server", *args)
        served = server.run("validate", *args)
        assert server.status() is not None
        assert (served.returncode, served.stdout, served.stderr) == (alone.returncode, alone.stdout, alone.stderr)
        assert alone.returncode in (1, 2), (args, alone.returncode, alone.stderr)
    assert served.stderr.startswith("nfvcat: error: environment file ") and served.stderr.count("\n") == 1


def test_a_warm_call_imports_no_engine_rule_or_catalog_code(server: Server, tmp_path: Path) -> None:
    """What a warm ``nfvcat validate`` imports is its start-up time: the server reads, validates and prints."""
    tpl = tmp_path / "t.yaml"
    tpl.write_text(TEMPLATE)
    assert server.validate(str(tpl)) == (0, [])
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "nfvcat", "validate", str(tpl)], cwd=ROOT,
                          capture_output=True, text=True, env={**os.environ, **server.env}, timeout=120)
    assert proc.returncode == 0 and "0 error(s)" in proc.stdout, proc.stderr[-2000:]
    imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "nfvcat.validation.wire" in imported, "the call went through the server's client"
    heavy = sorted(m for m in imported if m.split(".")[0] in ("yaml", "heat", "nova", "toscaparser", "dataclasses")
                   or m.startswith(("nfvcat.validation.rules", "nfvcat.validation.engines", "nfvcat.catalog",
                                    "nfvcat.core.documents", "nfvcat.validation.pipeline", "nfvcat.validation.model",
                                    "nfvcat.validation.project")))
    assert heavy == [], heavy
    # the server parses the command line with the command's own parser: the client builds none
    parsing = sorted(m for m in imported if m in ("argparse", "pathlib", "typing", "hashlib", "nfvcat.validation.cache")
                     or m.startswith("nfvcat.commands"))
    assert parsing == [], parsing
    # the wire is the C modules under json and socket: json brings re and enum, socket enum and selectors
    assert sorted(m for m in imported if m in ("json", "socket", "re", "enum", "selectors")) == []


def test_what_the_server_leaves_to_the_command_is_printed_as_the_command_prints_it(server: Server,
                                                                                tmp_path: Path) -> None:
    """--help, a usage error, an unknown option and --no-server, with a server running: the server leaves
    them to the command (which parses the words itself): the same output and exit code as with no server."""
    tpl = tmp_path / "t.yaml"
    tpl.write_text(TEMPLATE)
    assert server.validate(str(tpl)) == (0, [])
    before = server.status()
    assert before is not None
    for args in (["--help"], ["--format", "yaml", str(tpl)], ["--no-such-option", str(tpl)], ["--no-server", str(tpl)],
                 ["--no-s", "--format", "json", str(tpl)], ["--stdin", str(tpl), "--format", "json"]):
        served = nfvcat("validate", *args, env=server.env, stdin=TEMPLATE, timeout=300)
        alone = nfvcat("validate", *args, env={**server.env, "NFVCAT_NO_SERVER": "1"}, stdin=TEMPLATE, timeout=300)
        assert (served.returncode, served.stdout, served.stderr) == (alone.returncode, alone.stdout, alone.stderr), args
        assert "Traceback" not in served.stderr
    after = server.status()
    assert after is not None and after["pid"] == before["pid"], "the server went on running"


def test_stop_leaves_no_socket_pid_file_or_worker(server: Server, tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(TEMPLATE)
    assert server.validate(str(tmp_path / "t.yaml")) == (0, [])
    status = server.status()
    assert status is not None and status["workers"]["heat"]["pid"]
    assert (server.dir / "server.sock").is_socket() and (server.dir / "server.pid").exists()
    assert oct(server.dir.stat().st_mode & 0o777) == "0o700"
    again = server.run("server", "run")  # the server itself, in the foreground: not a second one
    assert again.returncode == 0 and again.stdout.strip() == f"an engine server already runs (pid {status['pid']})"
    pids = server.pids()
    assert "stopped" in server.run("server", "stop").stdout
    assert _wait_gone(pids)
    assert not (server.dir / "server.sock").exists() and not (server.dir / "server.pid").exists()
    assert server.status() is None and server.run("server", "status").returncode == 3


def test_a_killed_worker_is_restarted_and_a_dead_one_mid_request_is_E0009(server: Server, tmp_path: Path) -> None:
    tpl = tmp_path / "t.yaml"
    tpl.write_text(TEMPLATE)
    assert server.validate(str(tpl)) == (0, [])
    heat = server.status()["workers"]["heat"]["pid"]  # type: ignore[index]
    os.kill(heat, signal.SIGKILL)  # between requests: the next one restarts it, nothing lost
    assert _wait_gone([heat])
    tpl.write_text(TEMPLATE.replace("150", "160"))
    assert server.validate(str(tpl)) == (0, [])
    status = server.status()
    assert status is not None and status["workers"]["heat"]["restarts"] == 1

    heat = status["workers"]["heat"]["pid"]
    os.kill(heat, signal.SIGSTOP)  # holds the next request ...
    tpl.write_text(TEMPLATE.replace("150", "170"))
    client = subprocess.Popen([sys.executable, "-m", "nfvcat", "validate", "--format", "json", str(tpl)],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, **server.env})
    try:
        deadline = time.monotonic() + 120
        while True:
            worker = ((server.status() or {}).get("workers") or {}).get("heat") or {}
            if worker.get("busy"):
                break
            assert time.monotonic() < deadline and client.poll() is None, "the request never reached the worker"
            time.sleep(0.05)
        assert worker["pid"] == heat, worker
        os.kill(heat, signal.SIGKILL)  # ... and dies with it
        out, err = client.communicate(timeout=120)
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
    assert client.returncode == 3, err
    [finding] = json.loads(out)["findings"]
    assert finding["id"] == "E0009" and "heat engine did not run: worker exited" in finding["message"]
    assert server.validate(str(tpl)) == (0, []), "the next request gets a new worker"


def test_a_hung_worker_times_out_as_E0009(server: Server, tmp_path: Path) -> None:
    tpl = tmp_path / "t.yaml"
    tpl.write_text(TEMPLATE)
    env = {"NFVCAT_ENGINE_TIMEOUT": "30"}  # the first request also waits for Heat to load
    assert server.validate(str(tpl), env=env) == (0, [])
    heat = server.status()["workers"]["heat"]["pid"]  # type: ignore[index]
    os.kill(heat, signal.SIGSTOP)
    tpl.write_text(TEMPLATE.replace("150", "160"))
    started = time.monotonic()
    code, findings = server.validate(str(tpl), env=env)
    assert code == 3 and [f["id"] for f in findings] == ["E0009"] and "timed out" in findings[0]["message"]
    assert time.monotonic() - started < 120
    assert not _alive(heat), "the hung worker is killed"
    assert server.validate(str(tpl), env=env) == (0, [])


def test_a_killed_server_and_its_stale_socket_do_not_break_the_next_call(server: Server, tmp_path: Path) -> None:
    tpl = tmp_path / "t.yaml"
    tpl.write_text(TEMPLATE)
    assert server.validate(str(tpl)) == (0, [])
    pids = server.pids()
    os.kill(pids[0], signal.SIGKILL)
    assert _wait_gone(pids), "workers end with their server (their input closes)"
    assert (server.dir / "server.sock").exists(), "a killed server leaves its socket behind"
    tpl.write_text(TEMPLATE.replace("150", "160"))
    assert server.validate(str(tpl)) == (0, [])
    status = server.status()
    assert status is not None and status["pid"] != pids[0]


def test_a_stale_socket_and_pid_file_from_elsewhere(server: Server, tmp_path: Path) -> None:
    server.dir.mkdir(mode=0o700)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(server.dir / "server.sock"))
    stale.close()  # a socket file nobody listens on
    (server.dir / "server.pid").write_text("999999999\nold\n")
    tpl = tmp_path / "t.yaml"
    tpl.write_text(TEMPLATE)
    assert server.validate(str(tpl)) == (0, [])
    status = server.status()
    assert status is not None and (server.dir / "server.pid").read_text().split()[0] == str(status["pid"])


def test_a_changed_nfvcat_or_site_profile_restarts_the_server(server: Server, tmp_path: Path) -> None:
    tpl = tmp_path / "t.yaml"
    tpl.write_text(TEMPLATE)
    site = tmp_path / "site.yaml"
    site.write_text("physnets:\n  physnet_sriov: {type: sriov}\n")
    assert server.validate("--site", str(site), str(tpl)) == (0, [])
    first = server.status()
    assert first is not None
    site.write_text("physnets:\n  physnet_sriov: {type: ovs-dpdk}\n")
    code, findings = server.validate("--site", str(site), str(tpl))
    second = server.status()
    assert second is not None and second["pid"] != first["pid"], "a new site profile, a new server"
    alone = server.run("validate", "--format", "json", "--no-server", "--site", str(site), str(tpl))
    assert (code, findings) == (alone.returncode, json.loads(alone.stdout)["findings"])

    module = ROOT / "tools" / "nfvcat" / "core" / "findings.py"  # nfvcat's code changes (as after an upgrade)
    before = module.stat()
    try:
        os.utime(module, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
        assert server.validate("--site", str(site), str(tpl)) == (code, findings)
        third = server.status()
    finally:
        os.utime(module, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert third is not None and third["pid"] != second["pid"]
    assert third["fingerprint"] != second["fingerprint"]


CLIENT = """
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(sys.argv[1])
except OSError as exc:
    print(json.dumps({"connect": exc.errno})); sys.exit()
try:
    s.sendall(b'{"op": "status"}\\n')
except OSError:
    pass  # the server may answer (and close) before reading anything from a stranger
print(s.makefile().readline().strip() or '{"closed": true}')
"""


def _as_nobody(sock: Path) -> dict[str, Any]:
    assert os.getuid() == 0, "this test runs a client as another user: it needs root"
    proc = subprocess.run(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
                           "/usr/bin/python3", "-c", CLIENT, str(sock)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def test_another_user_is_refused(server: Server) -> None:
    assert server.run("server", "start").returncode == 0
    sock = server.dir / "server.sock"
    assert _as_nobody(sock) == {"connect": 13}, "the 0700 directory keeps other users out (EACCES)"
    os.chmod(server.dir, 0o711)  # even when they reach the socket, the server checks who is calling
    os.chmod(sock, 0o666)
    try:
        reply = _as_nobody(sock)
    finally:
        os.chmod(server.dir, 0o700)
        os.chmod(sock, 0o600)
    assert set(reply) == {"refused"}, reply
    assert server.status() is not None, "and it goes on serving its own user"


def test_an_idle_server_exits_and_cleans_up(server: Server) -> None:
    assert server.run("server", "start", "--idle", "1").returncode == 0
    pid = server.status()["pid"]  # type: ignore[index]
    assert _wait_gone([pid], 30)
    assert not (server.dir / "server.sock").exists() and not (server.dir / "server.pid").exists()


def test_the_code_watch_sees_every_kind_of_change_and_is_quiet_otherwise(tmp_path: Path) -> None:
    from nfvcat.validation.server import CodeWatch

    tree = tmp_path / "pkg"
    (tree / "sub").mkdir(parents=True)
    (tree / "a.py").write_text("x = 1\n")

    def dirs() -> list[str]:
        return [d for d, _, _ in os.walk(tree)]

    watch = CodeWatch.start(dirs)
    assert watch is not None, "inotify is available on Linux"
    try:
        assert not watch.changed()
        steps = [lambda: (tree / "a.py").write_text("x = 2\n"),
                 lambda: os.utime(tree / "a.py", ns=(1, 1)),
                 lambda: (tree / "sub" / "b.py").write_text(""),
                 lambda: (tree / "sub" / "b.py").rename(tree / "b.py"),
                 lambda: (tree / "b.py").unlink(),
                 lambda: (tree / "new").mkdir(),
                 lambda: (tree / "new" / "c.py").write_text("")]  # a new directory is watched after its event
        for n, step in enumerate(steps):
            step()
            assert watch.changed(), f"step {n} not seen"
            assert not watch.changed(), f"step {n}: seen twice"
    finally:
        watch.close()
