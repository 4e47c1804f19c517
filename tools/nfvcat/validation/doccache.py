"""The engine server's in-memory layer: parsed documents kept between validations, re-read when the file
changes (its stat signature: size, mtime, ctime, inode; kept once settled, nfvcat.core.filesig), so a warm
validation parses only what changed."""

from __future__ import annotations

import os
from collections import OrderedDict

from nfvcat.core import documents, filesig
from nfvcat.core.documents import Document


class DocumentCache:
    def __init__(self, size: int = 4096):
        self.size = size
        self.entries: OrderedDict[tuple[str, str], tuple[filesig.Signature, Document]] = OrderedDict()

    def read(self, path: str) -> Document:
        try:
            signature = filesig.settled(os.stat(path))
        except OSError:
            return documents.read(path)  # reports the problem
        key = (os.getcwd(), path)  # a document's shown path is relative to the caller's directory
        if signature is None:  # not a regular file, or changed too recently to be told from its next change
            self.entries.pop(key, None)
            return documents.read(path)
        hit = self.entries.get(key)
        if hit is not None and hit[0] == signature:
            self.entries.move_to_end(key)
            return hit[1]
        doc = documents.read(path)
        self.entries[key] = (signature, doc)
        while len(self.entries) > self.size:
            self.entries.popitem(last=False)
        return doc
