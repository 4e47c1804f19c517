"""The server hands a template's data to the Heat worker instead of the worker parsing the text again, only
where heatclient's parse makes the same data: on every YAML and JSON file of the repository, the YAML
parser tests' tricky inputs and inputs where stripping the text changes it, the data handed over is
heatclient's (same types, same shared objects), and nothing is handed over where it differs."""

from __future__ import annotations

import binascii
import json
import marshal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from heatclient.common import template_format

from nfvcat.core import yamlpos
from nfvcat.core.documents import Document
from nfvcat.validation.engines.heat_handover import parsed_as_heatclient_parses
from tests.unit.test_yamlpos_parsers import CORPUS, ROOT, TRICKY, _shape

STRIPPED = {  # heatclient parses text.strip(): where that is not the text's data, nothing is handed over
    "clip-at-end": "heat_template_version: 2021-04-16\nuser_data: |\n  #!/bin/sh\n  echo hi\n",
    "keep-at-end": "heat_template_version: 2021-04-16\ndescription: |+\n  kept\n\n\n",
    "strip-at-end": "heat_template_version: 2021-04-16\ndescription: |-\n  stripped\n\n",
    "folded-at-end": "heat_template_version: 2021-04-16\ndescription: >\n  folded\n  text\n",
    "spaces-in-block-at-end": "heat_template_version: 2021-04-16\nd: |-\n  x  \n",
    "block-in-list-at-end": "heat_template_version: 2021-04-16\nl:\n- a\n- |\n  b\n",
    "block-then-key": "heat_template_version: 2021-04-16\nd: |\n  x\nz: 1\n",
    "block-then-comment": "heat_template_version: 2021-04-16\nd: |\n  x\n# end\n",
    "duplicate-key-block-last": "heat_template_version: 2021-04-16\na: 1\nb: 2\na: |\n  x\n",
    "alias-at-end": "heat_template_version: 2021-04-16\nx: &t |\n  y\nz: *t\n",
    "complex-key-at-end": "heat_template_version: 2021-04-16\n? |\n  k\n",
    "leading-newlines": "\n\nheat_template_version: 2021-04-16\na: 1\n",
    "leading-spaces": "  heat_template_version: 2021-04-16\n  a: 1\n",
    "crlf": "heat_template_version: 2021-04-16\r\na: 1\r\n",
    "nbsp-at-end": "heat_template_version: 2021-04-16\na: b\u00a0",
    "trailing-spaces": "heat_template_version: 2021-04-16\na: b   \n\n",
    "end-marker": "heat_template_version: 2021-04-16\na: |\n  x\n...\n",
    "json": '{"heat_template_version": "2021-04-16", "a": 1e5}\n',
    "flow-at-end": "heat_template_version: 2021-04-16\na: {b: \"c \"}\n",
    "plain": "heat_template_version: 2021-04-16\nresources: {}\n",
    "int-key-at-end": "heat_template_version: 2021-04-16\n1: |\n  x\n",
    "int-and-str-key": "heat_template_version: 2021-04-16\n'1': plain\n1: |\n  x\n",
}


def _texts() -> list[tuple[str, str]]:
    out = [(f"tricky:{k}", v) for k, v in sorted(TRICKY.items())]
    out += [(f"stripped:{k}", v) for k, v in sorted(STRIPPED.items())]
    for path in CORPUS:
        try:
            out.append((str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")))
        except UnicodeDecodeError:
            continue
    return out


def _heatclient(text: str) -> Any:
    """What heatclient's parse gives its caller, before its own checks (the worker runs them)."""
    stripped = text.strip()
    try:
        if stripped.startswith("{"):
            return ("json", json.loads(stripped))
        return yaml.load(stripped, Loader=template_format.yaml_loader)
    except (yaml.YAMLError, ValueError):
        return ("error",)


def _handed(text: str) -> tuple[dict[str, str] | None, Any]:
    try:
        data, pos = yamlpos.load(text)
    except yamlpos.DocumentError:
        return None, None
    doc = Document(path="t.yaml", abspath="/t.yaml", kind="hot", text=text, data=data, positions=pos)
    return parsed_as_heatclient_parses(doc), data


def test_what_is_handed_over_is_what_heatclient_parses_and_nothing_else_is() -> None:
    handed_over = refused_where_equal = 0
    for name, text in _texts():
        handed, data = _handed(text)
        theirs = _heatclient(text)
        same = data is not None and _shape(theirs) == _shape(data)
        if handed:
            handed_over += 1
            assert handed["text"] == text.strip(), name
            given = marshal.loads(binascii.a2b_base64(handed["data"]))
            assert _shape(given) == _shape(theirs), name
        else:
            refused_where_equal += same
    assert handed_over > 100, "the repository's templates and files are handed over"
    for name in ("clip-at-end", "keep-at-end", "block-in-list-at-end", "duplicate-key-block-last",
                 "alias-at-end", "complex-key-at-end", "leading-spaces", "crlf", "nbsp-at-end", "json",
                 "int-key-at-end", "int-and-str-key"):
        assert _handed(STRIPPED[name])[0] is None, name
    for name in ("strip-at-end", "block-then-key", "plain"):
        assert _handed(STRIPPED[name])[0], name
    assert refused_where_equal < handed_over


def test_differences_stripping_makes_are_real() -> None:
    """Most inputs above that are refused differ in heatclient's parse: the refusal is needed (an alias or
    trailing spaces are refused out of caution)."""
    for name in ("clip-at-end", "keep-at-end", "block-in-list-at-end", "duplicate-key-block-last",
                 "complex-key-at-end", "leading-spaces", "nbsp-at-end", "json", "int-and-str-key"):
        text = STRIPPED[name]
        assert _shape(_heatclient(text)) != _shape(yamlpos.load(text)[0]), name


@pytest.mark.parametrize("handed_text", ["same", "other"])
def test_the_worker_takes_the_data_for_that_exact_text_and_parses_any_other(tmp_path: Path,
                                                                            handed_text: str) -> None:
    """A clean template handed over as data with a broken resource: the worker reports the broken resource
    when the handed text is the file's (it did not parse the file), and nothing when it is another text."""
    text = "heat_template_version: 2021-04-16\nresources:\n  n: {type: OS::Neutron::Net}\n"
    (tmp_path / "t.yaml").write_text(text)
    broken = {"heat_template_version": "2021-04-16", "resources": {"n": {"type": "OS::Neutron::Net",
                                                                        "properties": {"nonsense": 1}}}}
    key = text.strip() if handed_text == "same" else text.strip() + "\n# another text"
    job = {"file": str(tmp_path / "t.yaml"),
           "parsed": [{"text": key, "data": binascii.b2a_base64(marshal.dumps(broken), newline=False).decode()}]}
    proc = subprocess.run([sys.executable, "-m", "nfvcat.validation.engines.heat"],
                          input=json.dumps({"jobs": [job]}) + "\n",
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    [result] = json.loads(proc.stdout)["results"]
    messages = [f["message"] for f in result["findings"]]
    if handed_text == "same":
        assert any("nonsense" in m for m in messages), messages
    else:
        assert messages == []


def test_a_chain_hands_over_the_templates_it_nests_as_the_run_read_them(tmp_path: Path) -> None:
    """A chain's job carries its nested VNF template's data too (an edited VNF template nested in a chain):
    the run's own documents, the unsaved buffer's when there is one."""
    from nfvcat.core import documents
    from nfvcat.validation.engines import heat
    from nfvcat.validation.engines.jobs import JobContext
    from nfvcat.validation.rules.base import Context

    (tmp_path / "vnf.yaml").write_text("heat_template_version: 2021-04-16\nresources: {}\n")
    (tmp_path / "chain.yaml").write_text("heat_template_version: 2021-04-16\nresources:\n"
                                         "  a: {type: vnf.yaml}\n  b: {type: vnf.yaml}\n  c: {type: missing.yaml}\n")
    buffer = "heat_template_version: 2021-04-16\nresources: {n: {type: OS::Neutron::Net}}\n"
    read: dict[str, Document] = {}

    def reader(path: str) -> Document:
        if path not in read:
            read[path] = (documents.from_text(path, buffer) if path.endswith("vnf.yaml")
                          else documents.read(path))
        return read[path]

    chain = reader(str(tmp_path / "chain.yaml"))
    [job] = heat.jobs(chain, JobContext(Context(), read=reader))
    sent = job.request()
    assert [p["text"] for p in sent["parsed"]] == [chain.text.strip(), buffer.strip()]
    assert "parsed" not in job.payload, "not part of the job's identity (its cache key)"
