"""Linux inotify on the engine server's code and engines (``server.code_fingerprint`` reads them), so that a
validation computes the fingerprint again only after something there changed."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable


class CodeWatch:
    """Linux inotify on what ``code_fingerprint`` reads, so that a validation computes the fingerprint again
    only after something there changed (any event: the fingerprint then decides), not on every call.
    ``start()`` gives None where inotify is not to be had (then every validation computes it, as before)."""

    # every change to a file or to a directory's entries: written, closed after writing, touched (utime,
    # chmod), created, deleted, renamed; the watched directory itself deleted or moved
    MASK = 0x2 | 0x4 | 0x8 | 0x40 | 0x80 | 0x100 | 0x200 | 0x400 | 0x800

    def __init__(self, fd: int, add: Callable[[int, bytes, int], int], dirs: Callable[[], list[str]]):
        self.fd = fd
        self._add = add
        self._dirs = dirs

    @classmethod
    def start(cls, dirs: Callable[[], list[str]]) -> CodeWatch | None:
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, AttributeError):
            return None
        if fd < 0:
            return None
        watch = cls(fd, libc.inotify_add_watch, dirs)
        if not watch.watch():
            watch.close()
            return None
        return watch

    def watch(self) -> bool:
        """Watch every directory ``dirs`` names (again after a change, so a new sub-package is watched too);
        False if one cannot be watched (gone, or the inotify limits)."""
        return all(self._add(self.fd, os.fsencode(d), self.MASK) >= 0 for d in self._dirs())

    def changed(self) -> bool:
        """Whether anything happened there since the last call (its events are drained); True when that
        cannot be told."""
        seen = False
        while True:
            try:
                if not os.read(self.fd, 65536):
                    break
            except BlockingIOError:
                break
            except OSError:
                return True
            seen = True
        if seen and not self.watch():
            return True
        return seen

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)
