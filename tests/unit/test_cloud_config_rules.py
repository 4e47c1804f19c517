"""cloud-config checks (E6001 schema, W6003 ignored keys) and the lines they point at, in cloud-config
files and in cloud-config carried by a HOT template, through the real command line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import findings_of

CLOUD_CONFIG = """#cloud-config
run_cmd:
  - echo hi
write_file:
  - path: /etc/motd
package: [vim]
merge_how: dict(recurse_array)+list(append)
users:
  - name: admin
    shel: /bin/bash
"""

HOT = """heat_template_version: 2021-04-16
parameters:
  command: {type: string, default: echo hi}
resources:
  server:
    type: OS::Nova::Server
    properties:
      flavor: m1.small
      image: cirros
      user_data_format: RAW
      user_data: |
        #cloud-config
        runcmd: "echo hi"
        write_file:
          - path: /etc/motd
  config:
    type: OS::Heat::CloudConfig
    properties:
      cloud_config:
        bootcmds:
          - {get_param: command}
  templated:
    type: OS::Nova::Server
    properties:
      flavor: m1.small
      image: cirros
      user_data_format: RAW
      user_data:
        str_replace:
          template: |
            #cloud-config
            ssh_pwauth: $PWAUTH
            run_cmd:
              - echo $HOST
          params:
            $PWAUTH: "no"
            $HOST: vnf
"""


@pytest.fixture(scope="module")
def found(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    tmp = tmp_path_factory.mktemp("cloud-config")
    (tmp / "user-data.yaml").write_text(CLOUD_CONFIG)
    (tmp / "server.yaml").write_text(HOT)
    _, findings = findings_of(str(tmp / "user-data.yaml"), str(tmp / "server.yaml"))
    out: dict[str, list[dict[str, Any]]] = {}
    for f in findings:
        out.setdefault(Path(str(f["file"])).name, []).append(f)
    return out


def _at(findings: list[dict[str, Any]], rule: str) -> list[tuple[int, int]]:
    return sorted((int(f["line"]), int(f["column"])) for f in findings if f["id"] == rule)


def test_top_level_typos_are_warned_with_the_key_meant(found: dict[str, list[dict[str, Any]]]) -> None:
    warnings = [f for f in found["user-data.yaml"] if f["id"] == "W6003"]
    assert _at(warnings, "W6003") == [(2, 1), (4, 1), (6, 1)]  # merge_how is cloud-init's, not a typo
    messages = " ".join(str(f["message"]) for f in warnings)
    for typo, meant in (("run_cmd", "runcmd"), ("write_file", "write_files"), ("package", "packages")):
        assert f"'{typo}'" in messages and f"did you mean '{meant}'?" in messages


def test_a_users_bad_key_points_at_the_key_not_at_the_user(found: dict[str, list[dict[str, Any]]]) -> None:
    [error] = [f for f in found["user-data.yaml"] if f["id"] == "E6001"]
    assert (error["line"], error["column"]) == (10, 5)
    assert "shel" in str(error["message"]) and "did you mean 'shell'?" in str(error["message"])


def test_user_data_block_findings_point_inside_the_block(found: dict[str, list[dict[str, Any]]]) -> None:
    findings = found["server.yaml"]
    assert _at(findings, "E6001") == [(13, 9)]
    assert _at(findings, "W6003") == [(14, 9), (20, 9), (33, 13)]  # keys only where values are deploy-time
    assert all(str(f["message"]).startswith(("user_data: ", "'bootcmds'", "user_data template: "))
               for f in findings if f["id"] in ("E6001", "W6003")), findings
