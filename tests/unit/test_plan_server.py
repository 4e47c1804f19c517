"""``nfvcat plan`` through the engine server: the same output as in-process (text, JSON, --capacity, a user
error, a usage error), and a warm call's client imports neither Nova nor the planner."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT
from tests.unit.test_server import Server, server  # noqa: F401 (the fixture)

CHAIN = ["templates/heat/chain-vrouter/chain-vrouter.yaml",
         "-e", "templates/heat/chain-vrouter/examples/sriov.env.yaml"]


def _without_seconds(text: str) -> object:
    doc = json.loads(text)
    doc.pop("seconds")
    return doc


def test_plan_output_is_the_same_with_and_without_the_server(server: Server, tmp_path: Path) -> None:  # noqa: F811
    calls = [(*CHAIN,), (*CHAIN, "--strategy", "pack"), ("--flavor", "nfv-sriov", "--count", "3", "--port",
                                                         "direct:physnet_sriov"),
             ("--flavor", "nfv-pinned-1g", "--capacity", "--max-copies", "50"), ("--flavor", "nosuch"),
             ("--count",)]
    served_requests = 0
    for args in calls:
        for fmt in ("text", "json"):
            alone = server.run("plan", "--no-server", "--format", fmt, *args)
            served = server.run("plan", "--format", fmt, *args)
            status = server.status()
            assert status is not None and status["requests"] > served_requests, "the server ran it"
            served_requests = status["requests"]
            assert served.returncode == alone.returncode, (args, served.stderr, alone.stderr)
            assert served.stderr == alone.stderr
            if fmt == "json" and alone.returncode in (0, 2):
                assert _without_seconds(served.stdout) == _without_seconds(alone.stdout)
            else:
                assert served.stdout == alone.stdout
    assert alone.returncode == 1 and "expected one argument" in alone.stderr  # the usage error, printed by argparse
    for fmt in ("table", "value"):  # cliff's formats stay in the caller's process (its terminal, its settings)
        alone = server.run("plan", "--no-server", "--format", fmt, *CHAIN)
        served = server.run("plan", "--format", fmt, *CHAIN)
        assert (served.returncode, served.stdout, served.stderr) == (alone.returncode, alone.stdout, alone.stderr)
        assert alone.returncode == 0 and "sriov-rt-compute" in alone.stdout, alone.stderr


def test_a_warm_plan_imports_neither_nova_nor_the_planner(server: Server) -> None:  # noqa: F811
    first = server.run("plan", *CHAIN)
    assert first.returncode == 0, first.stderr
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "nfvcat", "plan", *CHAIN], cwd=ROOT,
                          capture_output=True, text=True, env={**os.environ, **server.env}, timeout=120)
    assert proc.returncode == 0 and proc.stdout == first.stdout, proc.stderr[-2000:]
    imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "nfvcat.validation.wire" in imported, "the call went through the server's client"
    heavy = sorted(m for m in imported if m.split(".")[0] in ("yaml", "nova", "oslo_config", "jsonschema")
                   or m.startswith(("nfvcat.plan", "nfvcat.catalog", "nfvcat.commands")))
    assert heavy == [], heavy
