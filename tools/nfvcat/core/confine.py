"""Reading files nfvcat is handed, as a linter of other people's pull requests must (cfn-lint, checkov, tflint):
what it reads is untrusted, and so is every file a template names.

- Only regular files are read. A FIFO (it blocks until a writer comes), a character or block device
  (``/dev/zero`` never ends), a socket, and the pseudo-files of ``/proc`` and ``/sys`` (a regular file of size 0
  whose content is the reader's own process: ``/proc/self/environ``) are refused before any byte is read.
- At most ``max_bytes`` are read (a bounded read: a file that grows while it is read, or whose size lies, stops
  there): ``NFVCAT_MAX_FILE_SIZE``, ``max_file_size`` in ``.nfvcat.yaml``, ``--max-file-size``; 8 MiB by default.
- A file a template references (a ``get_file``, a nested template's type, an environment's ``resource_registry``)
  and every file a validation reads is read only when its real path (symlinks followed) lies under one of the
  project's roots: the project (the nearest directory above the working directory with ``.nfvcat.yaml`` or
  ``.git``, else the working directory), the catalog, the directories given on the command line (a file's
  own directory), and what ``--allow-root``/``allow_roots`` add. Anything else is refused, named and never read.

The rule is the one ``nfvcat package`` applies to the files a package takes (``inside``).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse

DEFAULT_MAX_BYTES = 8 * 1024 * 1024
MAX_BYTES_ENV = "NFVCAT_MAX_FILE_SIZE"
# file systems whose "regular files" are the kernel's view of a process or device, not content
PSEUDO_ROOTS = ("/proc", "/sys", "/dev")
PROJECT_MARKERS = (".nfvcat.yaml", ".git")


class Refused(OSError):
    """A file nfvcat does not read, and why (the message names the file, never its content)."""

    def __init__(self, path: str, why: str):
        super().__init__(why)
        self.filename = path
        self.why = why

    def __str__(self) -> str:
        return f"{self.filename}: {self.why}"


class NotRegular(Refused):
    pass


class TooLarge(Refused):
    pass


class Outside(Refused):
    pass


def default_max_bytes() -> int:
    """``NFVCAT_MAX_FILE_SIZE`` (bytes; a k/M/G suffix is 1024-based), else 8 MiB."""
    value = os.environ.get(MAX_BYTES_ENV, "").strip()
    return parse_size(value) if value else DEFAULT_MAX_BYTES


def parse_size(value: str | int) -> int:
    """``1048576``, ``512k``, ``8M``, ``1G`` as bytes; ValueError when it is none of these or not positive."""
    text = str(value).strip()
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(text[-1:].lower(), 1)
    number = int(text[:-1] if scale > 1 else text)
    if number <= 0:
        raise ValueError(f"size must be positive: {value!r}")
    return number * scale


def real(path: str) -> str:
    return os.path.realpath(os.path.abspath(path))


def inside(path: str, root: str) -> bool:
    """Whether ``path``'s real path (symlinks followed) lies under ``root``'s."""
    target, base = real(path), real(root)
    return target == base or target.startswith(base.rstrip(os.sep) + os.sep)


def project_root(start: str | None = None) -> str:
    """The nearest directory at or above ``start`` (the working directory) holding ``.nfvcat.yaml`` or ``.git``;
    ``start`` itself when none does."""
    here = real(start or os.getcwd())
    for candidate in [here, *_parents(here)]:
        if any(os.path.exists(os.path.join(candidate, m)) for m in PROJECT_MARKERS):
            return candidate
    return here


def _parents(path: str) -> Iterator[str]:
    while True:
        parent = os.path.dirname(path)
        if parent == path:
            return
        yield parent
        path = parent


@dataclass(frozen=True)
class Policy:
    """What a validation may read: under ``roots`` (real paths; empty: anywhere), at most ``max_bytes``."""
    roots: tuple[str, ...] = ()
    max_bytes: int = DEFAULT_MAX_BYTES

    @classmethod
    def for_call(cls, given: Iterable[str], allow: Iterable[str] = (), max_bytes: int | None = None,
                 start: str | None = None) -> Policy:
        """The roots of a call made in ``start``: the project, each directory given (a file's own), and
        ``allow``."""
        roots = [project_root(start)]
        for path in given:
            if os.path.isdir(path):
                roots.append(real(path))
            elif os.path.lexists(path) or os.path.isdir(os.path.dirname(os.path.abspath(path))):
                roots.append(real(os.path.dirname(os.path.abspath(path))))  # the directory the file is in
        roots.extend(real(p) for p in allow)
        return cls(tuple(dict.fromkeys(roots)), max_bytes or default_max_bytes())

    def allows(self, path: str) -> bool:
        return not self.roots or any(inside(path, root) for root in self.roots)

    def check(self, path: str, shown: str | None = None) -> None:
        """Raise Outside when ``path`` lies under none of the roots."""
        if not self.allows(path):
            raise Outside(shown or path, "outside the project (its real path is under none of the allowed roots; "
                                         "--allow-root DIR widens them): not read")

    def to_json(self) -> dict[str, Any]:
        return {"roots": list(self.roots), "max_bytes": self.max_bytes}

    @classmethod
    def from_json(cls, data: Any) -> Policy:
        if not isinstance(data, dict):
            return cls(max_bytes=default_max_bytes())
        return cls(tuple(str(r) for r in data.get("roots") or ()), int(data.get("max_bytes") or DEFAULT_MAX_BYTES))


_CURRENT: ContextVar[Policy | None] = ContextVar("nfvcat_confine_policy", default=None)


def current() -> Policy:
    """The policy of the validation this thread runs; outside one: no roots, the default size cap."""
    return _CURRENT.get() or Policy(max_bytes=default_max_bytes())


@contextlib.contextmanager
def applied(policy: Policy) -> Iterator[Policy]:
    token = _CURRENT.set(policy)
    try:
        yield policy
    finally:
        _CURRENT.reset(token)


def kind_of(mode: int) -> str | None:
    """What a file that is not a regular one is, in words; None for a regular file."""
    for test, name in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) else "not a regular file"


def pseudo(path: str) -> bool:
    """Whether ``path`` (real) is a kernel pseudo-file (``/proc``, ``/sys``, ``/dev``)."""
    return any(path == r or path.startswith(r + "/") for r in PSEUDO_ROOTS)


def check_regular(path: str) -> os.stat_result:
    """The file's stat when it is a regular file nfvcat may open; NotRegular otherwise (nothing opened)."""
    st = os.stat(path)
    what = kind_of(st.st_mode)
    if what is None and pseudo(real(path)):
        what = "a kernel pseudo-file"
    if what is not None:
        raise NotRegular(path, f"{what}, not a regular file: not read")
    return st


def read_bytes(path: str, limit: int | None = None, policy: Policy | None = None) -> bytes:
    """The content of a regular file of at most ``limit`` bytes (the policy's cap), read without ever
    blocking on it or reading past the cap; Refused (NotRegular, TooLarge, Outside) or OSError otherwise."""
    policy = policy or current()
    policy.check(path)
    limit = limit or policy.max_bytes
    check_regular(path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)  # what was opened, not what the name pointed at a moment ago
        what = kind_of(st.st_mode)
        if what is not None:
            raise NotRegular(path, f"{what}, not a regular file: not read")
        if st.st_size > limit:
            raise TooLarge(path, f"file is {st.st_size} bytes, larger than the {limit} byte limit "
                                 f"(--max-file-size, {MAX_BYTES_ENV}): not read")
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise TooLarge(path, f"file is larger than the {limit} byte limit (--max-file-size, {MAX_BYTES_ENV}): "
                             "not read")
    return data


def reference_path(ref: str, base_dir: str) -> str | None:
    """The local path a template's reference names (a ``get_file``, a nested template's type: relative to the
    template's directory, absolute, or a ``file:`` URL); None for a URL of another scheme."""
    parsed = urlparse(ref)
    if parsed.scheme == "file":
        return unquote(parsed.path)
    if parsed.scheme and len(parsed.scheme) > 1:  # not a Windows drive letter
        return None
    return os.path.normpath(os.path.join(base_dir, ref))
