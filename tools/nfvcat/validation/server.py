"""The engine server (as dmypy and eslint_d): one per user, in the background, keeping the engine workers
imported and warm so that a changed template is validated in a fraction of a second.

It listens on a Unix socket in a private (0700) directory under the cache directory, never on a network
port, and answers only processes of its own user (SO_PEERCRED). A request is one JSON line, the answer one
JSON line. The client sends what only it knows (its Python and nfvcat, its NFVCAT_* settings, its
directory); the server turns that and the site profile into a fingerprint and compares it with its own,
and checks, while it validates, that nfvcat's code and the installed packages (engine versions) are still
those it started with (computed again when inotify saw a change there, or every time without inotify). When
either differs, the server answers "restart" (never a result from the old code), to that request and every
later one, and exits, and the client starts a new one. A command line's call is run here whole (``run``: its
words in, parsed by the validate command's own parser, which ``nfvcat server run`` hands over; its output
out, rendered by the same code as in-process), so the client imports almost nothing; ``nfvcat plan`` is
run the same way, by the plan command's code in this process (Nova imported once). The server exits after
an idle time (``NFVCAT_SERVER_IDLE``, default 15 min), on ``nfvcat server stop``, SIGTERM or SIGINT, removing
its socket and pid file; a server killed outright leaves them behind, and the next one (which holds the
directory's lock) replaces them.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import hashlib
import os
import selectors
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nfvcat.validation import wire
from nfvcat.validation.codewatch import CodeWatch

IDLE_DEFAULT = 900.0
# another command the server runs (``nfvcat plan``): its parser (words to its call), its run of a call
Command = tuple[Callable[[list[str]], dict[str, Any]], Callable[[dict[str, Any]], tuple[int, str, str]]]


# -- where -------------------------------------------------------------------------------------------
def pid_path() -> Path:
    return wire.server_dir() / "server.pid"


def private_dir() -> Path:
    """The server's directory, created 0700; refused if another user owns it or others may enter it."""
    d = wire.server_dir()
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = d.lstat()
    if not d.is_dir() or d.is_symlink() or st.st_uid != os.getuid():
        raise PermissionError(f"{d} is not a directory of user {os.getuid()}")
    if st.st_mode & 0o077:
        os.chmod(d, 0o700)
    return d


def idle_timeout() -> float:
    try:
        return float(os.environ.get("NFVCAT_SERVER_IDLE", IDLE_DEFAULT))
    except ValueError:
        return IDLE_DEFAULT


# -- fingerprint -------------------------------------------------------------------------------------
def fingerprint(site: str | None, code: str | None = None) -> str:
    """What the server's answers depend on besides the documents: the caller's settings and the code."""
    code = code or code_fingerprint()
    return hashlib.sha256(f"{settings_fingerprint(site)}\n{code}".encode()).hexdigest()[:32]


def settings_fingerprint(site: str | None, caller: dict[str, Any] | None = None) -> str:
    """What only the caller knows (``wire.caller``: its Python and nfvcat, its NFVCAT_* settings and
    PYTHONPATH; this process's when not given) and the site profile's content."""
    who = caller if caller is not None else wire.caller()
    settings = who.get("settings") or {}
    h = hashlib.sha256(f"{who.get('python')}\n{who.get('nfvcat')}\n{who.get('pythonpath', '')}\n".encode())
    for key in sorted(k for k in settings if k not in wire.IGNORED_SETTINGS):
        h.update(f"{key}={settings[key]}\n".encode())
    if site:
        from nfvcat.core import confine

        with contextlib.suppress(OSError):  # confine.Refused too: a FIFO or a device is not read
            h.update(hashlib.sha256(confine.read_bytes(site, policy=confine.Policy())).digest())
    return h.hexdigest()[:32]


def _package_tree() -> list[tuple[str, list[str]]]:
    """nfvcat's package as the code fingerprint reads it: (directory, its files), byte code left out."""
    import nfvcat

    tree = []
    for directory, dirs, files in os.walk(Path(nfvcat.__file__).parent):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        tree.append((directory, sorted(f for f in files if not f.endswith((".pyc", ".pyo")))))
    return tree


def _site_dirs() -> list[str]:
    """The site-packages directories, whose dist-info names carry the engines' versions."""
    return [e for e in sys.path if e and os.path.isdir(e) and "site-packages" in e]


def code_fingerprint() -> str:
    """nfvcat's files, the installed packages (their dist-info names carry the versions of Heat, Nova,
    tosca-parser, tacker...) and the cloud-init schema. Stat, not read."""
    h = hashlib.sha256()
    for directory, files in _package_tree():
        for name in files:
            with contextlib.suppress(OSError):
                st = os.stat(os.path.join(directory, name))
                h.update(f"{directory}/{name}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    for entry in _site_dirs():
        with contextlib.suppress(OSError):
            h.update("\n".join(sorted(n for n in os.listdir(entry) if n.endswith(".dist-info"))).encode())
    from nfvcat.validation.engines import cloudinit

    h.update(f"cloud-init:{cloudinit.version()}\n".encode())
    return h.hexdigest()[:32]


def _watched() -> list[str]:
    """The directories ``code_fingerprint`` reads."""
    from nfvcat.validation.engines import cloudinit

    schema = cloudinit.schema_path()
    return [d for d, _ in _package_tree()] + _site_dirs() + ([str(schema.parent)] if schema is not None else [])


def site_for(site: str | None, catalog_root: Path | None = None) -> str | None:
    """The site profile a validation reads: --site, else the catalog's."""
    from nfvcat import catalog

    if site:
        return os.path.abspath(site)
    root = catalog_root or catalog.find_root()
    return str(root / catalog.SITE_PROFILE) if root else None


def own_working_directory() -> bool:
    """Give this thread a working directory of its own (Linux ``unshare(CLONE_FS)``: a chdir here moves no
    other thread), as Samba's thread pool does; False where that cannot be had."""
    if getattr(_THREAD, "own_cwd", False):
        return True
    import ctypes

    try:
        ok = ctypes.CDLL(None, use_errno=True).unshare(CLONE_FS) == 0
    except (OSError, AttributeError):
        ok = False
    _THREAD.own_cwd = ok
    return ok


CLONE_FS = 0x200
_THREAD = threading.local()


# -- wire ------------------------------------------------------------------------------------------
def peer_uid(conn: socket.socket) -> int:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return int(uid)


# -- the server --------------------------------------------------------------------------------------
class Server:
    def __init__(self, site: str | None, idle: float,
                 parse_command_line: Callable[[list[str]], dict[str, Any]] | None = None,
                 commands: dict[str, Command] | None = None):
        """``parse_command_line``: the validate command's own parser (its words to its call as plain data,
        SystemExit where it would print usage or help): with it the server runs a command line as it is.
        ``commands``: other commands it runs in its own process (``plan``: Nova stays imported), each as
        (its parser, its run of a call: exit code, stdout, stderr)."""
        from nfvcat.validation.doccache import DocumentCache
        from nfvcat.validation.engines.jobs import ENGINES
        from nfvcat.validation.executor import WorkerPool

        self.dir = private_dir()
        self.site = site
        self.idle = idle
        self.settings = settings_fingerprint(site)
        self.watch = CodeWatch.start(_watched)  # before the fingerprint: what changes after it is seen
        self.code = code_fingerprint()
        self.fingerprint = fingerprint(site, self.code)
        self.pool = WorkerPool(self.dir, ENGINES)
        self.documents = DocumentCache()
        # No lock is held across a request: each runs in a thread of its own with a working directory of its
        # own (own_working_directory), so a slow or hostile request never holds up the next one. Only what
        # cannot run twice at once is serialised, each for as long as it takes: parsing a command line
        # (argparse prints through sys.stdout, redirected), and ``plan`` (Nova's scheduler code keeps state).
        self.parsing = threading.Lock()
        self.planning = threading.Lock()
        self.shared_cwd = threading.Lock()  # only where a thread cannot have a directory of its own
        self.stopping = threading.Event()
        self.active = 0
        self.requests = 0
        self.last = time.monotonic()
        self.started = time.time()
        self.warmed = False
        self.counter = threading.Lock()
        self.parse_command_line = parse_command_line
        self.commands = dict(commands or {})

    def status(self) -> dict[str, Any]:
        return {"pid": os.getpid(), "fingerprint": self.fingerprint, "started": self.started,
                "idle_timeout": self.idle, "idle_for": round(time.monotonic() - self.last, 1),
                "requests": self.requests, "socket": wire.socket_path(), "site": self.site,
                "workers": {name: {"pid": w.pid(), "restarts": w.restarts, "busy": w.busy, "ready": w.ready}
                            for name, w in self.pool.workers.items()},
                "rss_kib": _rss_kib([os.getpid(), *(w.pid() for w in self.pool.workers.values())])}

    def handle(self, conn: socket.socket) -> None:
        with conn:
            try:
                if peer_uid(conn) != os.getuid():
                    wire.send(conn, {"refused": "the nfvcat engine server answers only its own user"})
                    return
                request = wire.receive(conn, 10)
                if request is None:
                    return
                wire.send(conn, self.within_deadline(request))
            except OSError:
                return  # the client went away
            finally:
                with self.counter:
                    self.active -= 1
                    self.last = time.monotonic()

    def within_deadline(self, request: dict[str, Any]) -> dict[str, Any]:
        """The answer to a request, run in a thread of its own; past the request deadline (``wire.deadline``)
        an exit-3 error saying so, while the request's thread finishes on its own and the server goes on."""
        if request.get("op") not in ("run", "validate") or (request.get("command") or "validate") != "validate":
            # plan runs here, one at a time (self.planning): the first imports Nova's scheduler code, after which
            # a join on the thread that imported it never returned (seen: the thread gone, join still waiting)
            return self.answer(request)
        answer: list[dict[str, Any]] = []
        worker = threading.Thread(target=lambda: answer.append(self.answer(request)), daemon=True)
        worker.start()
        asked = request.get("deadline")
        deadline = float(asked) if isinstance(asked, (int, float)) and 0 < asked < wire.deadline() else wire.deadline()
        worker.join(deadline)
        if answer:
            return answer[0]
        return {"user_error": f"the engine server did not finish this request within its deadline of {deadline:g} s "
                              f"(NFVCAT_REQUEST_TIMEOUT); it goes on answering others", "exit_code": 3}

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        if op == "status":
            return {"status": self.status()}
        if op == "stop":
            self.stopping.set()
            return {"stopped": os.getpid()}
        if op not in ("run", "validate"):
            return {"error": f"unknown request {op!r}"}
        if not isinstance(request.get("cwd"), str):
            return {"error": "a request names its working directory (cwd)"}
        own = own_working_directory()
        with contextlib.nullcontext() if own else self.shared_cwd:
            if self.stopping.is_set():  # it found its code or settings changed, or was asked to stop
                return {"restart": "this engine server is stopping"}
            with self.counter:
                self.requests += 1
            code = [self.code]
            check = None
            if self.watch is None or self.watch.changed():  # computed again while the engines work
                check = threading.Thread(target=lambda: code.__setitem__(0, code_fingerprint()), daemon=True)
                check.start()
            try:
                os.chdir(request["cwd"])
                answer = self._run(request) if op == "run" else self._validate(request)
                if answer is None:
                    self.stopping.set()  # the settings or the site profile changed: a new server is needed
                    return {"restart": "the settings, the site profile or the Python changed"}
                if check is not None:
                    check.join()
                if code != [self.code]:
                    self.stopping.set()  # nfvcat or an engine changed: this answer may be the old code's
                    return {"restart": "nfvcat's code or an engine changed"}
                return answer
            except Exception as exc:
                from nfvcat.core.errors import UserError

                if isinstance(exc, UserError):
                    return {"user_error": str(exc), "exit_code": exc.exit_code}
                return {"error": f"{type(exc).__name__}: {exc}"}
            finally:
                with self.counter:
                    first, self.warmed = not self.warmed, True
                if first:  # the first request started what it needed; load the other engines now
                    threading.Thread(target=self.pool.warm, daemon=True).start()
                    gc.freeze()  # the modules the first request imported: no collection walks them again

    def _settled(self, site: str | None, request: dict[str, Any]) -> bool:
        """Whether the caller's settings and site profile are those this server started with."""
        return settings_fingerprint(site, request.get("caller") or {}) == self.settings

    def _run(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """A command line's ``nfvcat validate``, printed here as the command prints it (None: wrong server)."""
        import io

        from nfvcat.validation import invocation
        from nfvcat.validation.pipeline import validate_paths

        command = str(request.get("command") or "validate")
        if command != "validate" and command not in self.commands:
            return {"left": f"this server does not run {command}"}
        if "argv" in request:
            parse = self.parse_command_line if command == "validate" else self.commands[command][0]
            args = self._command_line(request, parse)
            if "left" in args or "needs" in args:
                return args
        else:
            args = dict(request.get("args") or {})
        if command != "validate":  # its output does not depend on a site profile: only the caller's settings
            if not self._settled(self.site, request):
                return None
            with self.planning:
                code, stdout, stderr = self.commands[command][1](args)
            return {"output": {"exit": code, "stdout": stdout, "stderr": stderr}}
        inv = invocation.prepare(args)
        if not self._settled(site_for(inv.options.site, inv.options.catalog_root), request):
            return None
        report = validate_paths(inv.paths, inv.options, self.pool, self.documents.read)
        out, err = io.StringIO(), io.StringIO()
        code = invocation.render(report, inv, out, err)
        return {"output": {"exit": code, "stdout": out.getvalue(), "stderr": err.getvalue()}}

    def _command_line(self, request: dict[str, Any],
                      parse: Callable[[list[str]], dict[str, Any]] | None) -> dict[str, Any]:
        """The call of a command line's words; or what the client is to do instead: send the buffer that
        ``--stdin-filename`` names ("needs"), or leave the call to the command ("left": usage, help, an
        error in the words, --no-server, a server started without the parser)."""
        import io

        if parse is None:
            return {"left": "this server was started without the command's parser"}
        try:
            with self.parsing, contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                args = parse([str(a) for a in request["argv"]])
        except SystemExit:
            return {"left": "usage, help or a usage error: the command prints it"}
        if args.get("no_server"):
            return {"left": "--no-server"}
        if args.get("stdin_filename"):
            if "stdin" not in request:
                return {"needs": "stdin"}
            args["stdin"] = str(request["stdin"])
        return args

    def _validate(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """The language server's validation: the Report (None: wrong server)."""
        from nfvcat.validation.model import Options
        from nfvcat.validation.pipeline import validate_paths

        if not self._settled(request.get("site"), request):
            return None
        options = Options.from_json(request.get("options") or {})
        report = validate_paths(list(request.get("paths") or []), options, self.pool, self.documents.read)
        return {"report": report.to_json()}

    def serve(self) -> int:
        lock = open(self.dir / "server.lock", "w")  # noqa: SIM115 (held for the server's life)
        deadline = time.monotonic() + 15  # a server being replaced may still be stopping its workers
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if time.monotonic() > deadline:
                    lock.close()
                    return 0  # another server holds this directory and answers
                time.sleep(0.05)
        path = Path(wire.socket_path())
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # left by a server that was killed
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)
        try:
            listener.bind(str(path))
        finally:
            os.umask(old_umask)
        listener.listen(16)
        pid_path().write_text(f"{os.getpid()}\n{self.fingerprint}\n")
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, lambda *_: self.stopping.set())
        try:
            with selectors.DefaultSelector() as sel:
                sel.register(listener, selectors.EVENT_READ)
                while not self.stopping.is_set():
                    if sel.select(0.2):
                        conn, _ = listener.accept()
                        with self.counter:
                            self.active += 1
                            self.last = time.monotonic()
                        threading.Thread(target=self.handle, args=(conn,), daemon=True).start()
                    with self.counter:
                        if not self.active and time.monotonic() - self.last > self.idle:
                            break
        finally:
            listener.close()
            for leftover in (path, pid_path()):  # ours: no other server runs while we hold the lock
                with contextlib.suppress(OSError):
                    leftover.unlink()
            deadline = time.monotonic() + 10
            while self.active and time.monotonic() < deadline:  # let an answer being written finish
                time.sleep(0.05)
            self.pool.stop()
            lock.close()
        return 0


def _rss_kib(pids: list[int | None]) -> int:
    total = 0
    for pid in pids:
        if pid is None:
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total
