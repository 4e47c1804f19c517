"""Fuzzing what users (and other processes of theirs) can send besides templates: the language server's
JSON-RPC messages, the engine server's wire protocol, and a Test Description File.

As in test_fuzz.py, NFVCAT_FUZZ_INPUTS sets the batch (short mode in the unit tier, 10,000 in ``tox -e fuzz``)
and the seed is printed (NFVCAT_FUZZ_SEED replays it). Whatever is sent: no crash, no hang (every wait has a
deadline), and the process answers a well-formed request afterwards; no file outside the project is echoed.
"""

from __future__ import annotations

import json
import os
import queue
import random
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nfvcat.catalog import tdf
from nfvcat.core.errors import UserError
from nfvcat.validation import wire
from tests.conftest import NFVCAT, ROOT
from tests.unit.test_fuzz import mutate
from tests.unit.test_server import Server, server  # noqa: F401 (the engine server fixture, stopped after)

CANARY = "CANARY-LSP-0b7d1e"
BAD = "heat_template_version: 2021-04-16\nresources:\n  n: {type: OS::Neutron::Nett}\n"
JUNK = [None, True, 0, -1, 2**63, 1e309, "", "x" * 10_000, [], {}, [[[[[]]]]], {"a": {"b": {"c": None}}},
        "file:///proc/self/environ", "file:///dev/zero", "../../../../etc/passwd", "\x00", "é", "\ud800"]


def _count(default: int) -> int:
    return max(1, int(os.environ.get("NFVCAT_FUZZ_INPUTS", str(default * 2))) // 2)


def _seed() -> int:
    seed = int(os.environ.get("NFVCAT_FUZZ_SEED", str(int(time.time()))))
    print(f"NFVCAT_FUZZ_SEED={seed}")
    return seed


def _mangle(value: Any, rng: random.Random) -> Any:
    """``value`` with one part replaced by junk, dropped or retyped."""
    if isinstance(value, dict) and value and rng.random() < 0.7:
        key = rng.choice(sorted(value))
        out = dict(value)
        choice = rng.randrange(3)
        if choice == 0:
            del out[key]
        elif choice == 1:
            out[key] = rng.choice(JUNK)
        else:
            out[key] = _mangle(value[key], rng)
        return out
    if isinstance(value, list) and value and rng.random() < 0.7:
        i = rng.randrange(len(value))
        return [*value[:i], _mangle(value[i], rng), *value[i + 1:]]
    return rng.choice(JUNK)


# -- a Test Description File ---------------------------------------------------------------------------------
TDF_SEEDS = sorted((ROOT / "tests" / "tdf").glob("*.yaml"))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=0, max_value=len(TDF_SEEDS) - 1), st.randoms(use_true_random=False))
def test_a_mutated_test_description_is_loaded_or_a_one_line_error(index: int, rng: random.Random) -> None:
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"nfvcat-fuzz-tdf-{os.getpid()}.yaml"
    tmp.write_text(mutate(TDF_SEEDS[index].read_text(), rng), encoding="utf-8", errors="replace")
    try:
        tdf.load(tmp)
    except UserError as exc:
        assert "\n" not in str(exc).strip(), str(exc)
    finally:
        tmp.unlink(missing_ok=True)


# -- the engine server's wire --------------------------------------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(), kids, max_size=4),
                    max_leaves=20))
def test_the_wire_writes_what_json_reads_and_reads_it_back(value: Any) -> None:
    assert json.loads(wire.dumps(value)) == value
    assert wire.loads(json.dumps(value)) == value


def _raw(path: str, data: bytes, timeout: float = 30) -> bytes:
    """Send ``data`` on a fresh connection, close the sending side, and read what comes back."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := sock.recv(1 << 16):
            out += chunk
        return out
    except OSError:
        return b""  # the server closed on us: what it does with garbage
    finally:
        sock.close()


def _requests(rng: random.Random, cwd: str, hostile: list[str], caller: dict[str, Any]) -> bytes:
    good = {"op": "run", "cwd": cwd, "args": {"paths": [rng.choice(hostile)], "format": "json"}, "caller": caller}
    kind = rng.randrange(6)
    if kind == 0:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300)))  # bytes
    if kind == 1:
        return wire.dumps(good)[: rng.randrange(1, 40)].encode()  # a line cut short
    if kind == 2:  # a request with a wrong part (its caller kept: another caller's settings restart the server)
        mangled = _mangle({k: v for k, v in good.items() if k != "caller"}, rng)
        return (wire.dumps({**mangled, "caller": caller} if isinstance(mangled, dict) else mangled) + "\n").encode()
    if kind == 3:
        return (json.dumps(rng.choice(JUNK)) + "\n").encode("utf-8", "surrogatepass")  # not an object
    if kind == 4:
        return (wire.dumps({"op": rng.choice(["status", "nope", "", "validate", "run"]),
                            "cwd": rng.choice(JUNK)}) + "\n").encode()
    return (wire.dumps(good) + "\n").encode()  # a well-formed request for a hostile path


def test_the_engine_server_survives_its_wire_being_fuzzed(tmp_path: Path, server: Server) -> None:  # noqa: F811
    rng = random.Random(_seed())
    good = tmp_path / "good.yaml"
    good.write_text("heat_template_version: 2021-04-16\nresources:\n  net: {type: OS::Neutron::Net}\n")
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    hostile = [str(fifo), "/dev/zero", "/proc/self/environ", str(good), "-", "/dev/fd/0"]
    assert server.validate(str(good)) == (0, [])
    pid = server.status()["pid"]  # type: ignore[index]
    caller = json.loads(subprocess.run(  # as the server's own clients are: their settings are the server's
        [NFVCAT[0], "-c", "import json; from nfvcat.validation import wire; print(json.dumps(wire.caller()))"],
        env={**os.environ, **server.env}, capture_output=True, text=True, check=True, timeout=60).stdout)
    path = str(server.dir / "server.sock")
    count = _count(40)
    started = time.monotonic()
    answered = restarts = 0
    for _ in range(count):
        sent = _requests(rng, str(tmp_path), hostile, caller)
        reply = _raw(path, sent)
        answered += bool(reply)
        assert b"Traceback" not in reply, (sent[:300], reply[:300])
        if b'"restart"' in reply:  # a request whose settings are not the server's: it stops, as designed
            restarts += 1
            assert server.validate(str(good)) == (0, [])  # a new one is started
    print(f"wire fuzz: {count} messages, {answered} answered, {restarts} restarts, "
          f"{time.monotonic() - started:.1f} s")
    assert server.validate(str(good)) == (0, []), "the server answers a well-formed request afterwards"
    assert restarts or server.status()["pid"] == pid, "the same server"  # type: ignore[index]


# -- the language server's JSON-RPC --------------------------------------------------------------------------
class Lsp:
    """``nfvcat lsp`` over stdio, spoken to in raw frames (a thread reads its messages into a queue)."""

    def __init__(self, cwd: Path, env: dict[str, str]):
        self.log = open(cwd.parent / "lsp.log", "wb")  # noqa: SIM115 (closed by stop) pygls logs every bad message
        self.proc = subprocess.Popen([*NFVCAT, "lsp"], cwd=cwd, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log)
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen: list[bytes] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            body = out.read(length or 0)
            self.seen.append(body)
            try:
                self.messages.put(json.loads(body))
            except ValueError:
                continue

    def send(self, body: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def message(self, **fields: Any) -> None:
        self.send(json.dumps({"jsonrpc": "2.0", **fields}).encode())

    def wait_for(self, match: Any, timeout: float = 300) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            assert left > 0, "no such message in time"
            try:
                msg = self.messages.get(timeout=left)
            except queue.Empty:
                continue
            if match(msg):
                return msg

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        self.log.close()


def _lsp_junk(rng: random.Random, uri: str) -> bytes:
    opened = {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri, "languageId": "yaml", "version": 1, "text": BAD}}}
    kind = rng.randrange(5)
    if kind == 0:
        return bytes(rng.randrange(32, 127) for _ in range(rng.randrange(1, 200)))  # not JSON
    if kind == 1:
        return json.dumps(_mangle(opened, rng)).encode("utf-8", "surrogatepass")
    if kind == 2:
        return json.dumps({"jsonrpc": "2.0", "id": rng.randrange(10**6, 10**7),
                           "method": rng.choice(["textDocument/hover", "nope/nope", "workspace/symbol", ""]),
                           "params": rng.choice(JUNK)}).encode("utf-8", "surrogatepass")
    if kind == 3:
        hostile = rng.choice(["file:///proc/self/environ", "file:///dev/zero", "file:///etc/shadow", uri + "x"])
        return json.dumps({**opened, "params": {"textDocument": {**opened["params"]["textDocument"],  # type: ignore
                                                                 "uri": hostile}}}).encode()
    return json.dumps({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
        "textDocument": {"uri": uri, "version": rng.randrange(100)},
        "contentChanges": [{"text": mutate(BAD, rng)}]}}).encode("utf-8", "replace")


@pytest.fixture
def lsp_project(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(CANARY)
    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    return proj


def test_the_language_server_survives_its_json_rpc_being_fuzzed(lsp_project: Path, tmp_path: Path) -> None:
    rng = random.Random(_seed())
    leak = lsp_project / "leak.yaml"
    leak.write_text("heat_template_version: 2021-04-16\nresources:\n  c:\n    type: OS::Heat::SoftwareConfig\n"
                    "    properties: {config: {get_file: ../outside/secret.txt}}\n")
    uri = (lsp_project / "t.yaml").as_uri()
    env = {**os.environ, "NFVCAT_NO_SERVER": "0", "NFVCAT_CACHE_DIR": str(tmp_path / "cache"),
           "NFVCAT_LSP_DEBOUNCE": "0"}  # through an engine server of its own, stopped at the end
    lsp = Lsp(lsp_project, env)
    try:
        lsp.message(id=1, method="initialize", params={"capabilities": {}, "rootUri": lsp_project.as_uri()})
        lsp.wait_for(lambda m: m.get("id") == 1)
        lsp.message(method="initialized", params={})
        count = _count(60)
        for _ in range(count):
            lsp.send(_lsp_junk(rng, uri))
        # afterwards: the template that reaches outside gets E0015, and nothing it names is echoed
        lsp.message(method="textDocument/didOpen", params={"textDocument": {
            "uri": leak.as_uri(), "languageId": "yaml", "version": 1, "text": leak.read_text()}})
        found = lsp.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                             and m["params"]["uri"] == leak.as_uri() and m["params"]["diagnostics"])
        assert [d["code"] for d in found["params"]["diagnostics"]] == ["E0015"], found
        lsp.message(id=2, method="shutdown", params=None)
        assert lsp.wait_for(lambda m: m.get("id") == 2).get("error") is None
        lsp.message(method="exit", params=None)
        assert lsp.proc.wait(60) == 0
        print(f"lsp fuzz: {count} messages, {len(lsp.seen)} sent back")
        assert not [m for m in lsp.seen if CANARY.encode() in m]
    finally:
        lsp.stop()
        subprocess.run([*NFVCAT, "server", "stop"], env=env, capture_output=True, timeout=60)
