"""What the caches keep of a file while it is unchanged: a stat signature is trusted only once the file's
last change is settled, so that a rewrite of the same size in the same timestamp tick (coarse timestamps:
Debian 12's kernel) is read again, and an unchanged settled file is not.

The coarse tick is simulated: ``os.stat`` as the caches see it gives the same mtime and ctime for every
write, as a kernel that stamps times in ticks gives two writes in one tick."""

from __future__ import annotations

import hashlib
import os
import time
import types
from pathlib import Path
from typing import Any

import pytest

from nfvcat.core import filesig
from nfvcat.validation import cache, doccache

TEMPLATE = "heat_template_version: 2021-04-16\ndescription: {}\nresources: {{}}\n"


def _frozen_stat(stamp_ns: int) -> Any:
    """``os.stat`` with every file's mtime and ctime at ``stamp_ns`` (while the caches call it; patched only
    around those calls, since it is the os module's own)."""
    real = os.stat

    def stat(path: Any, *args: Any, **kwargs: Any) -> Any:
        st = real(path, *args, **kwargs)
        return types.SimpleNamespace(st_mode=st.st_mode, st_size=st.st_size, st_ino=st.st_ino,
                                     st_mtime_ns=stamp_ns, st_ctime_ns=stamp_ns)

    def call(fn: Any, *args: Any) -> Any:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(os, "stat", stat)
            return fn(*args)

    return call


def test_a_signature_is_kept_only_once_the_change_is_settled() -> None:
    now = time.time_ns()
    st = types.SimpleNamespace(st_mode=0o100644, st_size=10, st_ino=7, st_mtime_ns=now, st_ctime_ns=now)
    assert filesig.settled(st) is None  # just written
    old = now - filesig.SETTLED_NS - 1
    st.st_mtime_ns = st.st_ctime_ns = old
    assert filesig.settled(st) == (10, old, old, 7)
    st.st_ctime_ns = now  # utime can set mtime back, never ctime
    assert filesig.settled(st) is None
    st.st_ctime_ns, st.st_mode = old, 0o040755
    assert filesig.settled(st) is None  # a directory


def test_a_same_size_rewrite_in_one_tick_is_hashed_again(tmp_path: Path) -> None:
    f = tmp_path / "t.yaml"
    frozen = _frozen_stat(time.time_ns())
    f.write_text("a: 1\n")
    assert frozen(cache.file_hash, str(f)) == hashlib.sha256(b"a: 1\n").hexdigest()
    f.write_text("a: 2\n")  # same size, same (frozen) times, same inode
    assert frozen(cache.file_hash, str(f)) == hashlib.sha256(b"a: 2\n").hexdigest()


def test_a_settled_file_is_not_read_again(tmp_path: Path) -> None:
    f = tmp_path / "t.yaml"
    f.write_text("a: 1\n")
    frozen = _frozen_stat(time.time_ns() - 10 * filesig.SETTLED_NS)
    first = frozen(cache.file_hash, str(f))
    f.write_text("a: 2\n")  # what a change that stat cannot see would be: the kept hash answers
    assert frozen(cache.file_hash, str(f)) == first == hashlib.sha256(b"a: 1\n").hexdigest()
    assert cache.file_hash(str(f)) == hashlib.sha256(b"a: 2\n").hexdigest()  # the real stat moved on


def test_the_document_cache_reads_a_fresh_rewrite_again_and_keeps_a_settled_file(tmp_path: Path) -> None:
    f = tmp_path / "t.yaml"
    docs = doccache.DocumentCache()
    frozen = _frozen_stat(time.time_ns())
    f.write_text(TEMPLATE.format("one"))
    assert frozen(docs.read, str(f)).data["description"] == "one"
    f.write_text(TEMPLATE.format("two"))
    assert frozen(docs.read, str(f)).data["description"] == "two"
    settled = _frozen_stat(time.time_ns() - 10 * filesig.SETTLED_NS)
    kept = settled(docs.read, str(f))
    assert settled(docs.read, str(f)) is kept  # unchanged and settled: the same parsed document
