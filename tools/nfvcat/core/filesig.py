"""A file's stat signature, for the caches that keep what they made of a file while the file is unchanged
(the engine server's parsed documents, the content hashes of the result cache).

A signature is (size, mtime, ctime, inode). A file can change without changing it where the kernel stamps
times in coarse ticks (a few milliseconds on kernels without fine-grained timestamps) and a rewrite of the
same size lands in the same tick, so a signature is only trusted once the file's last change is older than
``SETTLED_NS`` (as git treats "racily clean" index entries): any later change then stamps a ctime at least
that much later, which no program can set back (utime sets mtime, never ctime). A file changed more
recently than that is read again each time, which it is anyway while someone edits it.
"""

from __future__ import annotations

import os
import stat
import time

Signature = tuple[int, int, int, int]
SETTLED_NS = 2_000_000_000


def settled(st: os.stat_result) -> Signature | None:
    """The signature of a regular file whose last change is settled; None otherwise (do not keep)."""
    if not stat.S_ISREG(st.st_mode):
        return None
    if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) < SETTLED_NS:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
