"""The constant-rate flow of an outage measurement (``nfvcat.cloud.outage``) on the dev cloud (entry point
``nfvcat.traffic_flows: devcloud``): test endpoints on the chain's left and right networks, namespaces on the
real host (``targets.cloud.CloudDataplane``); a sender in the left one stamps each UDP packet with its sequence
number at a fixed rate, a sink in the right one records when each arrives. Both print nfvcat's flow records."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nfvcat.cloud.outage import FlowRecord, parse
from nfvcat_testbeds.lab.netns import Lab
from nfvcat_testbeds.targets.cloud import CloudDataplane

FLOW_PORT = 5003
DRAIN_S = 1.0  # after the sender stops: packets still in the chain reach the sink

SENDER = r"""
import json, signal, socket, struct, sys, time
dst, port, rate = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
stop = []
signal.signal(signal.SIGINT, lambda *a: stop.append(1))
signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
gap, n, t0 = 1.0 / rate, 0, time.time()
print(json.dumps({"start": t0, "rate_pps": rate}), flush=True)
while not stop:
    wait = t0 + n * gap - time.time()
    if wait > 0:
        time.sleep(wait)
    try:
        s.sendto(struct.pack("!Q", n) + b"\0" * 22, (dst, port))
    except OSError:
        pass  # no route or neighbour now: offered, and lost
    n += 1
print(json.dumps({"sent": n, "stop": time.time()}), flush=True)
"""

SINK = r"""
import json, signal, socket, struct, sys, time
stop = []
signal.signal(signal.SIGINT, lambda *a: stop.append(1))
signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
s.bind((sys.argv[1], int(sys.argv[2])))
s.settimeout(0.2)
print("ready", flush=True)
while not stop:
    try:
        data = s.recv(64)
    except (socket.timeout, InterruptedError):
        continue
    if len(data) >= 8:
        print(json.dumps({"seq": struct.unpack("!Q", data[:8])[0], "t": time.time()}), flush=True)
"""


class DevcloudFlow:
    def __init__(self, conn: Any, stack: str, rate_pps: float, say: Callable[[str], None]) -> None:
        self.rate_pps, self.say = rate_pps, say
        self.workdir = Path(tempfile.mkdtemp(prefix="nfvcat-flow-"))
        self.sender: subprocess.Popen[bytes] | None = None
        self.sink: subprocess.Popen[bytes] | None = None
        self.dp = CloudDataplane(conn, stack, Lab(tag=f"{os.getpid()}-f"), self.workdir)
        try:
            say(self.dp.plug())
        except BaseException:
            self.close()
            raise
        ep = self.dp.endpoints
        assert ep is not None
        self.describe = f"UDP {ep.src_ip} -> {ep.dst_ip}:{FLOW_PORT} through {stack} (dev cloud's real host)"
        self.logs = {"sender": self.workdir / "sender.jsonl", "sink": self.workdir / "sink.jsonl"}

    def start(self) -> None:
        ep = self.dp.endpoints
        assert ep is not None
        lab = self.dp.lab
        self.sink = lab.spawn(["ip", "netns", "exec", ep.dst_ns, sys.executable, "-c", SINK, ep.dst_ip,
                               str(FLOW_PORT)], self.logs["sink"])
        deadline = time.monotonic() + 30
        while "ready" not in self.logs["sink"].read_text() and time.monotonic() < deadline:
            if self.sink.poll() is not None:
                raise RuntimeError(f"the flow's sink exited: {self.logs['sink'].read_text()[-300:]}")
            time.sleep(0.1)
        # neighbours along the chain first: the first packets would otherwise wait for ARP
        lab.sh(ep.src_ns, f"ping -c 2 -i 0.2 -W 2 {ep.dst_ip}", check=False)
        self.sender = lab.spawn(["ip", "netns", "exec", ep.src_ns, sys.executable, "-c", SENDER, ep.dst_ip,
                                 str(FLOW_PORT), f"{self.rate_pps:g}"], self.logs["sender"])

    def record(self) -> FlowRecord:
        rec = FlowRecord()
        for log in self.logs.values():
            if log.exists():
                text = log.read_text(errors="replace")
                parse((line for line in text[:text.rfind("\n") + 1].splitlines() if line.startswith("{")), rec)
        return rec

    def stop(self) -> FlowRecord:
        if self.sender is not None:
            self.dp.lab.stop(self.sender)
        time.sleep(DRAIN_S)
        if self.sink is not None:
            self.dp.lab.stop(self.sink)
        return self.record()

    def close(self) -> None:
        try:
            for proc in (self.sender, self.sink):
                if proc is not None:
                    self.dp.lab.stop(proc)
            if self.dp.plugged:
                self.dp.unplug()
            self.dp.lab.close()
        finally:
            shutil.rmtree(self.workdir, ignore_errors=True)


def open_devcloud(conn: Any, stack: str, rate_pps: float, say: Callable[[str], None]) -> DevcloudFlow:
    """The entry point ``nfvcat.traffic_flows: devcloud``."""
    return DevcloudFlow(conn, stack, rate_pps, say)
