"""The engine server's in-memory layer: parsed documents kept between validations, re-read when the file
changes (its stat signature: size, mtime, ctime, inode; kept once settled, nfvcat.core.filesig), so a warm
validation parses only what changed."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict

from nfvcat.core import confine, documents, filesig
from nfvcat.core.documents import Document


class DocumentCache:
    def __init__(self, size: int = 4096):
        self.size = size
        self.entries: OrderedDict[tuple[str, str, int], tuple[filesig.Signature, Document]] = OrderedDict()
        self.lock = threading.Lock()  # requests run at once: each change of the entries is one step

    def read(self, path: str) -> Document:
        if not confine.current().allows(path):
            return documents.read(path)  # outside this call's roots (E0015), whatever an earlier call could read
        try:
            signature = filesig.settled(os.stat(path))
        except OSError:
            return documents.read(path)  # reports the problem
        # a document's shown path is relative to the caller's directory; what it is depends on the size cap
        key = (os.getcwd(), path, confine.current().max_bytes)
        if signature is None:  # not a regular file, or changed too recently to be told from its next change
            with self.lock:
                self.entries.pop(key, None)
            return documents.read(path)
        with self.lock:
            hit = self.entries.get(key)
            if hit is not None and hit[0] == signature:
                self.entries.move_to_end(key)
                return hit[1]
        doc = documents.read(path)
        with self.lock:
            self.entries[key] = (signature, doc)
            while len(self.entries) > self.size:
                self.entries.popitem(last=False)
        return doc
