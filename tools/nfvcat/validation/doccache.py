"""The engine server's in-memory layer: parsed documents kept between validations, re-read when the file
changes (its stat signature: size, mtime, ctime, inode), so a warm validation parses only what changed."""

from __future__ import annotations

import os
import stat
from collections import OrderedDict

from nfvcat import documents
from nfvcat.documents import Document

Signature = tuple[int, int, int, int]


class DocumentCache:
    def __init__(self, size: int = 4096):
        self.size = size
        self.entries: OrderedDict[tuple[str, str], tuple[Signature, Document]] = OrderedDict()

    def read(self, path: str) -> Document:
        try:
            st = os.stat(path)
        except OSError:
            return documents.read(path)  # reports the problem
        if not stat.S_ISREG(st.st_mode):
            return documents.read(path)
        signature = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        key = (os.getcwd(), path)  # a document's shown path is relative to the caller's directory
        hit = self.entries.get(key)
        if hit is not None and hit[0] == signature:
            self.entries.move_to_end(key)
            return hit[1]
        doc = documents.read(path)
        self.entries[key] = (signature, doc)
        while len(self.entries) > self.size:
            self.entries.popitem(last=False)
        return doc
