"""Headless Chromium driven through the Chrome DevTools Protocol over a pipe (``--remote-debugging-pipe``: file
descriptors 3 and 4, messages of JSON ended by a NUL byte): no port, no extra package. Launched with no network
use of its own, a fresh profile, and stopped by the test that started it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--remote-debugging-pipe",
         "--disable-dev-shm-usage", "--hide-scrollbars"]


class Browser:
    def __init__(self) -> None:
        exe = shutil.which("chromium") or shutil.which("chromium-browser")
        if exe is None:
            raise RuntimeError("chromium is not installed (tools/debs/site.txt)")
        self.profile = tempfile.mkdtemp(prefix="nfvcat-chromium-")
        import fcntl

        # the child's ends moved above 10 first: a pipe may be given fds 3 or 4 themselves, which dup2 would clobber
        a, self._w = os.pipe()
        self._r, b = os.pipe()
        to_child_r, from_child_w = fcntl.fcntl(a, fcntl.F_DUPFD, 10), fcntl.fcntl(b, fcntl.F_DUPFD, 10)
        os.close(a)
        os.close(b)

        def fds() -> None:
            os.dup2(to_child_r, 3)
            os.dup2(from_child_w, 4)

        self.proc = subprocess.Popen([exe, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
                                     preexec_fn=fds, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, close_fds=False)
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict[str, Any]] = []
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"], flatten=True)["sessionId"]
        for domain in ("Page.enable", "Runtime.enable", "Log.enable"):
            self.call(domain, session=True)

    def _send(self, msg: dict[str, Any]) -> None:
        os.write(self._w, json.dumps(msg).encode() + b"\0")

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            if time.monotonic() > deadline:
                raise TimeoutError("chromium did not answer")
            chunk = os.read(self._r, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self._buf += chunk
        raw, _, self._buf = self._buf.partition(b"\0")
        return dict(json.loads(raw))

    def call(self, method: str, session: bool = False, timeout: float = 60, **params: Any) -> dict[str, Any]:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        self._send(msg)
        deadline = time.monotonic() + timeout
        while True:
            got = self._read(deadline)
            if got.get("id") == self._id:
                if "error" in got:
                    raise RuntimeError(f"{method}: {got['error']}")
                return dict(got.get("result") or {})
            self.events.append(got)

    def open(self, url: str) -> None:
        """Navigate and wait for the load event."""
        self.events.clear()
        self.call("Page.navigate", session=True, url=url)
        deadline = time.monotonic() + 60
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            self.events.append(self._read(deadline))

    def eval(self, expression: str, timeout: float = 60) -> Any:
        res = self.call("Runtime.evaluate", session=True, timeout=timeout, expression=expression,
                        returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in res:
            raise RuntimeError(f"{expression[:60]}: {res['exceptionDetails']}")
        return res["result"].get("value")

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and failed loads seen since the last ``open``."""
        out = []
        for e in self.events:
            m, p = e.get("method"), e.get("params") or {}
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(str(p.get("args")))
            elif m == "Runtime.exceptionThrown":
                out.append(str(p.get("exceptionDetails")))
            elif m == "Log.entryAdded" and (p.get("entry") or {}).get("level") == "error":
                out.append(str(p["entry"].get("text")) + " " + str(p["entry"].get("url", "")))
        return out

    def screenshot(self, path: Path, width: int = 1280, selector: str | None = None) -> None:
        """The page (up to 4000 px down), or only the element ``selector`` finds."""
        import base64

        height = int(self.eval("document.documentElement.scrollHeight"))
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=width, height=min(height, 4000),
                  deviceScaleFactor=1, mobile=False)
        clip = {}
        if selector is not None:
            box = self.eval(f"(() => {{ const r = document.querySelector({json.dumps(selector)})"
                            ".getBoundingClientRect(); return [r.x, r.y + window.scrollY, r.width, r.height]; })()")
            clip = {"clip": {"x": box[0], "y": box[1], "width": box[2], "height": box[3], "scale": 1}}
        data = self.call("Page.captureScreenshot", session=True, format="png", **clip)["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            self._send({"id": 0, "method": "Browser.close", "params": {}})
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        finally:
            os.close(self._w)
            os.close(self._r)
            shutil.rmtree(self.profile, ignore_errors=True)
