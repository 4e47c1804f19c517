"""``nfvcat day0 render|configdrive --add-cloud-config FILE``: the VNF's user data first, the added
cloud-configs after it in a MIME multi-part that cloud-init merges (lists appended, the VNF's keys kept).
That cloud-init really merges them this way is shown by the day-0 VM tier (the gateways run the VNF's
day-0 and the lab's probe from one config drive)."""

from __future__ import annotations

import base64
import email
import gzip
import textwrap
from pathlib import Path

import pytest
import yaml

from nfvcat.core.errors import UserError
from nfvcat.day0 import userdata
from nfvcat_testbeds.lab import chain as c
from nfvcat_testbeds.lab import probe
from tests.conftest import nfvcat

GW_A = [a for k, v in c.gateway_parameters("a", udp_encap=True).items() for a in ("-P", f"{k}={v}")]


def test_added_cloud_config_follows_the_vnfs_own_in_a_multipart(tmp_path: Path) -> None:
    added = tmp_path / "site.cfg"
    added.write_text("#cloud-config\nruncmd:\n  - [echo, site]\n")
    plain = nfvcat("day0", "render", "vnf-ipsec-gw", *GW_A)
    both = nfvcat("day0", "render", "vnf-ipsec-gw", *GW_A, "--add-cloud-config", str(added))
    assert plain.returncode == 0 and both.returncode == 0, plain.stderr + both.stderr
    msg = email.message_from_string(both.stdout)
    assert msg.get_content_type() == "multipart/mixed"
    parts = msg.get_payload()
    assert [p.get_content_type() for p in parts] == ["text/cloud-config", "text/cloud-config"]
    assert parts[0].get_payload().rstrip("\n") == plain.stdout.rstrip("\n")  # the VNF's bytes, untouched
    assert parts[0]["Merge-Type"] is None and parts[1]["Merge-Type"] == userdata.MERGE_TYPE
    assert parts[1].get_filename() == "site.cfg"
    assert yaml.safe_load(parts[1].get_payload()) == {"runcmd": [["echo", "site"]]}
    again = nfvcat("day0", "render", "vnf-ipsec-gw", *GW_A, "--add-cloud-config", str(added))
    assert again.stdout == both.stdout, "the same inputs give the same bytes (boundary from the content)"


def test_config_drive_carries_the_merged_user_data(tmp_path: Path) -> None:
    added = tmp_path / probe.FILENAME
    added.write_text(probe.CLOUD_CONFIG)
    out = tmp_path / "drive"
    proc = nfvcat("day0", "render", "vnf-ipsec-gw", *GW_A, "--add-cloud-config", str(added), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    ud = (out / "openstack" / "latest" / "user_data").read_text()
    names = [p.get_filename() for p in email.message_from_string(ud).get_payload()]
    assert names == ["vnf-user-data", probe.FILENAME]


def test_the_probe_is_a_cloud_config_mapping() -> None:
    userdata.check_cloud_config(probe.CLOUD_CONFIG, "probe")
    data = yaml.safe_load(probe.CLOUD_CONFIG)
    assert [f["path"] for f in data["write_files"]] == ["/usr/local/sbin/nfvcat-probe"]
    run = data["bootcmd"][0]
    # cloud-init.service is ordered before sysinit.target: a bootcmd that waits for a unit with default
    # dependencies (after sysinit.target) deadlocks the boot
    assert run[0] == "systemd-run" and "--no-block" in run and "--property=DefaultDependencies=no" in run, run


def test_a_bad_added_file_is_a_one_line_error(tmp_path: Path) -> None:
    cases = {"no-header.cfg": "runcmd: [ls]\n", "list.cfg": "#cloud-config\n- a\n",
             "broken.cfg": "#cloud-config\nruncmd: [ls\n"}
    for name, text in cases.items():
        bad = tmp_path / name
        bad.write_text(text)
        proc = nfvcat("day0", "render", "vnf-ipsec-gw", *GW_A, "--add-cloud-config", str(bad))
        assert proc.returncode == 1, (name, proc.returncode, proc.stdout)
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert f"{bad}:" in proc.stderr, proc.stderr
    missing = nfvcat("day0", "render", "vnf-ipsec-gw", *GW_A, "--add-cloud-config", str(tmp_path / "nope.cfg"))
    assert missing.returncode == 1 and "nope.cfg" in missing.stderr and "Traceback" not in missing.stderr


@pytest.mark.parametrize("encoding", [None, "text/plain", "b64", "base64", "gz", "gzip", "gz+b64", "gzip+base64"])
def test_file_content_decodes_as_cloud_init_writes(encoding: str | None) -> None:
    data = "#!/bin/sh\necho é\n".encode()
    if encoding is None or encoding == "text/plain":
        content: str | bytes = data.decode()
    elif encoding in ("b64", "base64"):
        content = base64.b64encode(data).decode()
    elif encoding in ("gz", "gzip"):
        content = gzip.compress(data)
    else:
        content = "\n".join(textwrap.wrap(base64.b64encode(gzip.compress(data)).decode(), 20))  # as YAML lines
    item = {"path": "/x", "content": content, **({"encoding": encoding} if encoding else {})}
    assert userdata.file_content(item) == data


def test_embed_puts_the_source_in_compressed_and_round_trips(tmp_path: Path) -> None:
    source = tmp_path / "tool"
    source.write_text("print('hello')\n" * 200)
    hook = tmp_path / "user-data.yaml"
    hook.write_text("#cloud-config\nwrite_files:\n  - path: /usr/local/bin/tool\n    permissions: '0755'\n"
                    "    encoding: gz+b64\n    content: |\n      old\n  - path: /etc/other\n    content: |\n"
                    "      kept\n")
    assert userdata.embed(hook, "/usr/local/bin/tool", source)
    files = {f["path"]: f for f in yaml.safe_load(hook.read_text())["write_files"]}
    assert userdata.file_content(files["/usr/local/bin/tool"]) == source.read_bytes()
    assert files["/etc/other"]["content"] == "kept\n" and files["/usr/local/bin/tool"]["permissions"] == "0755"
    assert not userdata.embed(hook, "/usr/local/bin/tool", source)  # deterministic: nothing to change
    with pytest.raises(UserError, match="no write_files item /etc/other with encoding: gz\\+b64"):
        userdata.embed(hook, "/etc/other", source)
