"""A Debian mirror on 127.0.0.1 for tests: serves one package at its pool path, counts the requests."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from nfvcat.validation import cloudinit_schema as cs


class Mirror:
    """``url`` is a mirror base URL for NFVCAT_DEBIAN_MIRROR; ``deb`` is what the pool path serves."""

    def __init__(self, deb: bytes):
        self.deb = deb
        self.requests: list[str] = []
        mirror = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                mirror.requests.append(self.path)
                if self.path == f"/debian/{cs.POOL_PATH}":
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(mirror.deb)))
                    self.end_headers()
                    self.wfile.write(mirror.deb)
                else:
                    self.send_error(404)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/debian"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()

    def __enter__(self) -> Mirror:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve_index(m: Any, packages: dict[str, str], monkeypatch: Any) -> None:
    """An HTTP-level fake (requests-mock ``m``) of every suite of a Debian mirror: each Packages.xz index
    serves exactly ``packages`` (name -> version), so a lock of those versions is one the mirror serves."""
    import lzma
    import re

    from nfvcat.packaging.images import mirror

    monkeypatch.setattr(mirror, "_SERVED", {})  # what the mirror served is read once per process
    index = "\n".join(f"Package: {p}\nVersion: {v}\nArchitecture: amd64\n" for p, v in packages.items())
    m.get(re.compile(r"/dists/[^/]+/[^/]+/binary-amd64/Packages\.xz$"), content=lzma.compress(index.encode()))
