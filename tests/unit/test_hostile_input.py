"""Hostile input, as a CI job on an untrusted pull request meets it: a template that reaches for the runner's
files (get_file of /etc/shadow, ``../..``, ``file:///proc/self/environ``, a symlink out of the project), and
inputs that are no regular file (a FIFO, /dev/zero, a socket, a huge file). Nothing outside the project is
read or echoed, in any output format, the result cache or the server's logs; nothing blocks or grows without
bound; the engine server answers the next request."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import nfvcat
from tests.unit.test_server import Server, server  # noqa: F401 (the engine server fixture, stopped after)

CANARY = "CANARY-FILE-5f0c2a"
ENV_CANARY = "CANARY-ENV-93be71"
HOT = "heat_template_version: 2021-04-16\nresources:\n"


def _config(name: str, ref: str) -> str:
    return f"  {name}:\n    type: OS::Heat::SoftwareConfig\n    properties:\n      config: {{get_file: {ref!r}}}\n"


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    """A project (a .git directory) beside a directory it must not reach, which holds the canary file."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{CANARY}\n")
    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    (proj / "hooks").mkdir()
    (proj / "hooks" / "boot.sh").write_text("#!/bin/sh\necho inside\n")
    yield proj


def _leaks(where: Path) -> list[str]:
    found = []
    for path in where.rglob("*"):
        if path.is_file() and not path.is_symlink():
            body = path.read_bytes()
            if CANARY.encode() in body or ENV_CANARY.encode() in body:
                found.append(str(path))
    return found


REFERENCES = {  # resource -> how it reaches outside
    "relative": "../outside/secret.txt",
    "absolute": "{outside}/secret.txt",
    "url": "file://{outside}/secret.txt",
    "environ": "file:///proc/self/environ",
    "climb": "../../../../../../../../proc/self/environ",
    "symlink": "hooks/link.txt",
}


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_a_get_file_outside_the_project_is_named_never_read(project: Path, tmp_path: Path, name: str) -> None:
    outside = tmp_path / "outside"
    (project / "hooks" / "link.txt").symlink_to(outside / "secret.txt")
    ref = REFERENCES[name].format(outside=outside)
    (project / "t.yaml").write_text(HOT + _config("inside", "hooks/boot.sh") + _config("cfg", ref))
    cache = tmp_path / "cache"
    env = {"NFVCAT_CACHE_DIR": str(cache), "NFVCAT_NO_SERVER": "1", "LEAK_ME": ENV_CANARY}
    for fmt in ("text", "json", "sarif"):
        proc = nfvcat("validate", "--format", fmt, "t.yaml", cwd=project, env=env, timeout=300)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        for stream in (proc.stdout, proc.stderr):
            assert CANARY not in stream and ENV_CANARY not in stream
    findings = json.loads(nfvcat("validate", "--format", "json", "t.yaml", cwd=project, env=env).stdout)["findings"]
    assert [(f["id"], f["line"]) for f in findings] == [("E0015", 10)], findings  # the get_file's line
    assert "not read" in findings[0]["message"]
    assert _leaks(cache) == []


def test_the_engine_server_and_its_logs_keep_the_same_rule(project: Path, tmp_path: Path,
                                                           server: Server) -> None:  # noqa: F811
    (project / "t.yaml").write_text(HOT + _config("cfg", "file:///proc/self/environ")
                                    + _config("two", "../outside/secret.txt"))
    env = {"LEAK_ME": ENV_CANARY}
    for fmt in ("text", "json", "sarif"):
        proc = nfvcat("validate", "--format", fmt, str(project / "t.yaml"), cwd=project, env={**server.env, **env},
                      timeout=300)
        assert proc.returncode == 2 and "E0015" in proc.stdout, proc.stdout + proc.stderr
        assert CANARY not in proc.stdout + proc.stderr and ENV_CANARY not in proc.stdout + proc.stderr
    assert server.status() is not None, "validated by the server"
    assert _leaks(server.cache) == []


def test_allow_root_and_the_project_file_widen_the_roots(project: Path, tmp_path: Path) -> None:
    (project / "t.yaml").write_text(HOT + _config("cfg", "../outside/secret.txt"))
    env = {"NFVCAT_CACHE_DIR": str(tmp_path / "cache"), "NFVCAT_NO_SERVER": "1"}
    code, found = _ids(nfvcat("validate", "--format", "json", "t.yaml", cwd=project, env=env))
    assert "E0015" in found
    code, found = _ids(nfvcat("validate", "--format", "json", "--allow-root", str(tmp_path / "outside"), "t.yaml",
                              cwd=project, env=env))
    assert (code, found) == (0, []), found
    (project / ".nfvcat.yaml").write_text("allow_roots: [../outside]\n")
    code, found = _ids(nfvcat("validate", "--format", "json", "t.yaml", cwd=project, env=env))
    assert (code, found) == (0, []), found


def _ids(proc: subprocess.CompletedProcess[str]) -> tuple[int, list[str]]:
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, [f["id"] for f in json.loads(proc.stdout)["findings"]]


def _hostile(tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    """(what, path, the finding it gives): made here, removed by tmp_path."""
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    yield "fifo", str(fifo), "E0016"
    yield "/dev/zero", "/dev/zero", "E0016"
    big = tmp_path / "big.yaml"
    with open(big, "wb") as f:  # 100 MB, sparse
        f.truncate(100 * 1000 * 1000)
    yield "100 MB", str(big), "E0004"
    yield "/proc/self/environ", "/proc/self/environ", "E0016"


@pytest.fixture
def hostile(tmp_path: Path) -> Iterator[list[tuple[str, str, str]]]:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock = tmp_path / "sock.yaml"
    listener.bind(str(sock))
    try:
        yield [*_hostile(tmp_path), ("socket", str(sock), "E0016")]
    finally:
        listener.close()


def test_inputs_that_are_no_regular_file_are_one_finding_each_and_the_server_goes_on(
        hostile: list[tuple[str, str, str]], tmp_path: Path, server: Server) -> None:  # noqa: F811
    good = tmp_path / "good.yaml"
    good.write_text(HOT + "  net:\n    type: OS::Neutron::Net\n")
    server.validate(str(good))  # started, engines loaded
    t0 = time.monotonic()
    server.validate(str(good))
    normal = time.monotonic() - t0
    for what, path, rule in hostile:
        for args in ((), ("--no-server",)):
            proc = server.run("validate", "--format", "json", *args, path)
            code, found = _ids(proc)
            assert (code, found) == (2, [rule]), (what, args, found)
        t0 = time.monotonic()
        code, found = server.validate(str(good))
        after = time.monotonic() - t0
        assert (code, found) == (0, []), what
        print(f"{what}: next validation {after:.2f} s (normal {normal:.2f} s)")
    assert server.status() is not None, "the same server answered throughout"


BAD = HOT + "  n: {type: OS::Neutron::Nett}\n"


@pytest.mark.parametrize("served", [False, True], ids=["in-process", "server"])
def test_standard_input_and_process_substitution_are_read_as_a_shell_user_expects(
        tmp_path: Path, served: bool, server: Server) -> None:  # noqa: F811
    """``-`` is standard input and ``<(cmd)`` a pipe the command itself reads (the server could not), bounded."""
    (tmp_path / "bad.yaml").write_text(BAD)
    env = {**server.env, "NFVCAT_NO_SERVER": "0" if served else "1", "NFVCAT": " ".join(_nfvcat_words())}
    script = '$NFVCAT validate --format json - <(cat bad.yaml) < bad.yaml'
    proc = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env})
    code, found = _ids(proc)
    assert (code, found) == (2, ["E1001", "E1001"]), proc.stdout
    files = sorted(f["file"] for f in json.loads(proc.stdout)["findings"])
    assert files[0] == "-" and files[1].startswith("/dev/fd/"), files
    big = subprocess.run(["bash", "-c", '$NFVCAT validate --max-file-size 1k <(head -c 5000 /dev/zero)'],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, env={**os.environ, **env})
    assert big.returncode == 1 and "larger than the 1024 byte limit" in big.stderr, big.stderr
    assert "Traceback" not in big.stderr


def _nfvcat_words() -> list[str]:
    from tests.conftest import NFVCAT

    return [str(w) for w in NFVCAT]


def test_a_long_request_holds_up_no_other_and_one_past_its_deadline_is_exit_3(tmp_path: Path,
                                                                            server: Server) -> None:  # noqa: F811
    """No lock is held across a request: while the whole catalog is validated (--no-cache: every engine job
    runs), a validation answered from the cache comes back first; a request past its deadline
    (NFVCAT_REQUEST_TIMEOUT) is exit 3 with a message, and the same server answers the next one."""
    good = tmp_path / "good.yaml"
    good.write_text(HOT + "  net:\n    type: OS::Neutron::Net\n")
    assert server.validate(str(good)) == (0, [])
    pid = server.status()["pid"]  # type: ignore[index]
    long = subprocess.Popen([*_nfvcat_words(), "validate", "--no-cache", "--format", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **server.env})
    try:
        time.sleep(1)  # the long one is in the server
        assert server.validate(str(good)) == (0, [])
        assert long.poll() is None, "the short request came back while the long one was still being worked on"
    finally:
        _out, err = long.communicate(timeout=600)
    assert long.returncode in (0, 2), err
    late = server.run("validate", "--no-cache", env={"NFVCAT_REQUEST_TIMEOUT": "0.5"})
    assert late.returncode == 3 and "deadline of 0.5 s" in late.stderr, late.stderr
    assert "Traceback" not in late.stderr
    assert server.validate(str(good)) == (0, [])
    assert server.status()["pid"] == pid  # type: ignore[index]
