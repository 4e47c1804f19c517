"""Where nfvcat keeps its per-user files. Light on purpose (``os`` only): the engine server's thin client
finds the server's socket through it on every warm ``nfvcat validate``."""

from __future__ import annotations

import os


def cache_base() -> str:
    """The cache directory: ``$NFVCAT_CACHE_DIR``, else ``$XDG_CACHE_HOME/nfvcat``, else ``~/.cache/nfvcat``."""
    return os.environ.get("NFVCAT_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "nfvcat")
