"""The dev cloud's flow (nfvcat_testbeds.targets.flow): its sender and sink, run here on the loopback, print the
records nfvcat's outage measurement reads, and a flow with nothing lost reads as such."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from nfvcat.cloud import outage
from nfvcat_testbeds.targets import flow


def test_the_sender_and_the_sink_print_records_that_lose_nothing_on_the_loopback(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    logs = {name: (tmp_path / f"{name}.jsonl").open("w") for name in ("sink", "sender")}
    sink = subprocess.Popen([sys.executable, "-c", flow.SINK, "127.0.0.1", port], stdout=logs["sink"])
    try:
        deadline = time.monotonic() + 10
        while "ready" not in (tmp_path / "sink.jsonl").read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        sender = subprocess.Popen([sys.executable, "-c", flow.SENDER, "127.0.0.1", port, "200"],
                                  stdout=logs["sender"])
        time.sleep(1.5)
        sender.send_signal(signal.SIGTERM)
        assert sender.wait(10) == 0
        time.sleep(flow.DRAIN_S)
    finally:
        sink.send_signal(signal.SIGINT)
        sink.wait(10)
        for f in logs.values():
            f.close()
    rec = outage.FlowRecord()
    for name in ("sender", "sink"):
        outage.parse((line for line in (tmp_path / f"{name}.jsonl").read_text().splitlines()
                      if line.startswith("{")), rec)
    f = outage.figures(rec, rec.start or 0.0)
    assert rec.rate_pps == 200 and rec.malformed == 0 and f.sent > 100
    assert (f.lost, f.time_to_full_rate_s) == (0, 0.0) and f.longest_gap_s < 0.5
