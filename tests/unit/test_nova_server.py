"""The server request nfvcat checks is the one Heat sends: the user data wrapped byte for byte as Heat's own
NovaClientPlugin.build_userdata wraps it (run in a process of its own: Heat's client plugins and Nova cannot
share one configuration), and Heat's default format."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from nfvcat.validation.engines.nova_server import HEAT_DEFAULT_FORMAT, SHORTEST_CFN_URL, heat_userdata

HEAT = r"""
import json, sys, types
from oslo_config import cfg
from heat.common import config  # noqa: F401 - registers Heat's options
from heat.engine.clients.os import heat_plugin, nova
cases = json.load(sys.stdin)
cfg.CONF.set_override("heat_metadata_server_url", sys.argv[1].removesuffix("/v1/"))
heat = heat_plugin.HeatClientPlugin.__new__(heat_plugin.HeatClientPlugin)
plugin = nova.NovaClientPlugin.__new__(nova.NovaClientPlugin)
context = types.SimpleNamespace(clients=types.SimpleNamespace(client_plugin=lambda name: heat))
plugin._context = lambda: context
out = [plugin.build_userdata(meta, text, instance_user=None, user_data_format=fmt) for text, fmt, meta in cases]
print(json.dumps({"built": out, "default": cfg.CONF.default_user_data_format}))
"""

MIME = """Content-Type: multipart/mixed; boundary="XX"
MIME-Version: 1.0

--XX
Content-Type: text/x-shellscript
Content-Disposition: attachment; filename="a.sh"

#!/bin/sh
echo é
--XX
Content-Type: text/cloud-config
Content-Disposition: attachment; filename="b.cfg"

#cloud-config
runcmd: [true]
--XX--
"""

TEXTS = ("#!/bin/sh\necho hi\n", "#!/bin/sh\necho été\n", MIME, '{"ignition": {"version": "3.0"}}')
CASES = [(text, fmt, meta) for text in TEXTS for fmt in ("HEAT_CFNTOOLS", "SOFTWARE_CONFIG", "RAW")
         for meta in ({}, {"AWS::CloudFormation::Init": {"a": 1}})]


def boundaries(text: str | None) -> str | None:
    return None if text is None else re.sub(r"={15}\d+==", "BOUNDARY", text)


@pytest.fixture(scope="module")
def heat() -> dict[str, object]:
    proc = subprocess.run([sys.executable, "-c", HEAT, SHORTEST_CFN_URL], input=json.dumps(CASES),
                          capture_output=True, text=True, timeout=300, check=True)
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.mark.parametrize("case", range(len(CASES)))
def test_the_user_data_is_heats(case: int, heat: dict[str, object]) -> None:
    text, fmt, meta = CASES[case]
    mine = heat_userdata(text, fmt, meta)
    built = heat["built"][case]  # type: ignore[index]
    if mine is None:  # an Ignition config with metadata: Heat re-serialises it, nfvcat does not claim a size
        assert fmt == "SOFTWARE_CONFIG" and meta and "ignition" in text
        return
    assert boundaries(mine) == boundaries(built)


def test_the_default_format_is_heats(heat: dict[str, object]) -> None:
    assert heat["default"] == HEAT_DEFAULT_FORMAT
