"""libyaml parses for speed, PyYAML's pure-Python parser is the reference: on every YAML and JSON file of
the repository (catalog, rule fixtures, snapshots) and on tricky inputs of our own, both give the same data
(the same types, and the same objects shared by aliases), the same key positions and the same duplicate
keys, and a document libyaml rejects gets PyYAML's message. libyaml's documents are built by one walk
(yamlpos._Walk), PyYAML's by its own constructor: these tests compare the two."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nfvcat.core import yamlpos

ROOT = Path(__file__).resolve().parents[2]
CORPUS = sorted(p for top in ("templates", "flavors", "vnfd", "hooks", "images", "tests")
                if (ROOT / top).is_dir()
                for p in (ROOT / top).rglob("*") if p.suffix in (".yaml", ".yml", ".json") and p.is_file())

TRICKY = {
    "anchors": "base: &b {vcpus: 2, ram: 4096}\nsmall: *b\nbig:\n  <<: *b\n  ram: 8192\n",
    "crlf": "heat_template_version: 2021-04-16\r\nresources:\r\n  a:\r\n    type: OS::Nova::Server\r\n",
    "unicode": "description: \"réseau – ü\"\nparameters:\n  ü: {type: string, default: 日本}\n",
    "block-scalars": "a: |\n  line1\n  line2\nb: >-\n  folded\n  text\nc:\n- x\n- - y\n  - z\n",
    "flow": "{a: [1, 2, {b: c}], d: {e: [f, g]}}\n",
    "json": '{"a": [1, 2, {"b": null}], "c": true, "d": 1.5}\n',
    "duplicate": "a: 1\nb: 2\na: 3\nc: {x: 1, x: 2}\n",
    "timestamp": "heat_template_version: 2018-08-31\nwhen: 2001-12-14t21:59:43.10-05:00\n",
    "indentless": "list:\n- name: a\n  value: 1\n- name: b\n  value:\n  - 2\n",
    "tab-in-value": "a: \"x\\ty\"\nb: c\td\n",
    "complex-key": "? [a, b]\n: value\nplain: 1\n",
    "empty": "",
    "comment-only": "# nothing\n",
    "nel": "a: b\x85c: d\n",
    "bom": "\ufeffa: 1\nb: [2]\n",
    "bad-indent": "a:\n  b: 1\n c: 2\n",
    "tab-indent": "a:\n\tb: 1\n",
    "unclosed": "a: [1, 2\nb: 3\n",
    "control-char": "a: b\x07\n",
    "two-documents": "a: 1\n---\nb: 2\n",
    "undefined-alias": "a: *nope\n",
    "yaml-2": "%YAML 2.0\n---\na: 1\n",
    "yaml-1.1": "%YAML 1.1\n---\na: 1\n",
    "nested-colon": "a: b: c\n",
    "trailing-comma": "{a: 1, b: [x, y,],}\n",
    "sequence-no-space": "- a\n-b\n",
    "quotes": "a: 'it''s'\nb: \"\\u00e9\\n\"\nc: \"unterminated\n",
    "escapes": "a: \"\\x41\\t\\N\\_\"\nb: \"\\q\"\n",
    "anchor-chars": "a: &x[1] 1\nb: *x[1]\n",
    "colon-in-key": "a:b: 1\nurl: http://x:80/y\n\"q:k\": v\n",
    "deep-flow": "a: " + "[" * 60 + "]" * 60 + "\n",
    "long-key": "? " + "k" * 1100 + "\n: v\n",
    "implicit-long-key": "k" * 1100 + ": v\n",
    "null-key": "~: a\nnull: b\n",
    "bad-tag": "a: !!python/object:os.system x\n",
    "shared-alias": "a: &x [1, {b: 2}]\nb: *x\nc: {d: *x, e: &y {f: 1, f: 2}}\ng: *y\n",
    "recursive-alias": "a: &r [1, *r]\n",
    "explicit-tags": "a: !!str 1\nb: !!int \"3\"\nc: !!float 1\nd: !!binary aGk=\ne: !!set {x, y}\n",
    "omap": "a: !!omap [b: 1, c: 2]\n",
    "scalar-keys": "1: int\n1.5: float\ntrue: bool\n~: none\n2001-01-01: date\n0x1F: hex\n",
    "scalar-types": "a: [1, -0x1f, 0o17, 1_000, 1.5e3, .inf, -.NaN, Yes, off, NULL, 2020-02-02, '1', \"x\"]\n",
    "merge-nested": "base: &b {x: 1}\nitems:\n- <<: *b\n  y: 2\n",
    "value-key": "a: {=: 1}\n",
    "depth-199": "a: " + "[" * 199 + "]" * 199 + "\n",
    "depth-201": "a: " + "[" * 201 + "]" * 201 + "\n",
    "bomb": "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
            "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
            "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n",
}


def _shape(data: Any, ids: dict[int, int] | None = None) -> Any:
    """The data with every value's type and which collections are one object (an alias shares its anchor's):
    ``==`` alone takes 1, 1.0 and True for one another."""
    ids = {} if ids is None else ids
    if isinstance(data, (dict, list)):
        if id(data) in ids:
            return ("same-as", ids[id(data)])
        ids[id(data)] = len(ids)
        if isinstance(data, dict):
            return ("dict", ids[id(data)], [(_shape(k, ids), _shape(v, ids)) for k, v in data.items()])
        return ("list", ids[id(data)], [_shape(v, ids) for v in data])
    return (type(data).__name__, repr(data))


def _outcome(text: str, cls: Any) -> tuple[str, Any]:
    try:
        data, pos = yamlpos._load(text, cls)
    except yamlpos.DocumentError as exc:
        return "error", (exc.rule_id, exc.message, exc.line, exc.column)
    return "ok", (_shape(data), pos.marks, pos.duplicates)


def _same_or_falls_back(text: str) -> None:
    reference = _outcome(text, yamlpos._Loader)
    fast = _outcome(text, yamlpos._FastLoader)
    if fast[0] == "ok" and yamlpos._fast_reads(text):  # what libyaml accepts, PyYAML reads the same way
        assert fast == reference
    if reference[0] == "error":  # what callers see is always PyYAML's outcome
        with pytest.raises(yamlpos.DocumentError) as exc:
            yamlpos.load(text)
        assert (exc.value.rule_id, exc.value.message, exc.value.line, exc.value.column) == reference[1]
    else:
        data, pos = yamlpos.load(text)
        assert ("ok", (_shape(data), pos.marks, pos.duplicates)) == reference


def test_the_single_walk_builds_the_common_documents_and_leaves_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    """libyaml's documents are built by one walk (data, positions, size); merge keys, other tags, recursive
    aliases and the limits are left to the full checks, which the tests above compare with PyYAML."""
    walked: list[bool] = []
    real = yamlpos._Walk.node

    def node(self: Any, *args: Any) -> Any:
        try:
            result = real(self, *args)
        except yamlpos._Unusual:
            walked.append(False)
            raise
        if args[1] == ():
            walked.append(True)
        return result

    monkeypatch.setattr(yamlpos._Walk, "node", node)
    expect = {"shared-alias": True, "scalar-keys": True, "scalar-types": True, "depth-199": True,
              "duplicate": True, "recursive-alias": False, "explicit-tags": False, "omap": False,
              "merge-nested": False, "value-key": False, "depth-201": False, "bomb": False}
    for name, walks in expect.items():
        walked.clear()
        try:
            yamlpos._load(TRICKY[name], yamlpos._FastLoader)
        except yamlpos.DocumentError:
            assert name in ("depth-201", "bomb"), name  # the full checks refuse what the walk left them
        assert walked and walked[-1] is walks, name
    data, _ = yamlpos.load(TRICKY["shared-alias"])
    assert data["a"] is data["b"] is data["c"]["d"] and data["g"] is data["c"]["e"] == {"f": 2}


def test_libyaml_is_the_fast_loader() -> None:
    assert yamlpos._FastLoader.__mro__[1].__name__ == "CSafeLoader"
    assert yamlpos._fast_reads("a: 1\n")


def test_libyaml_accepts_a_tab_pyyaml_refuses_so_pyyaml_reads_tabs() -> None:
    text = TRICKY["tab-in-value"]
    assert _outcome(text, yamlpos._FastLoader)[0] == "ok"
    assert _outcome(text, yamlpos._Loader)[0] == "error"
    assert not yamlpos._fast_reads(text)


def test_the_corpus_is_the_repository() -> None:
    assert len(CORPUS) > 100


@pytest.mark.parametrize("path", CORPUS, ids=[str(p.relative_to(ROOT)) for p in CORPUS])
def test_repository_files_parse_the_same(path: Path) -> None:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        pytest.skip("not UTF-8 text: documents.read reports it before any parser")  # a fixture of E0005
    _same_or_falls_back(text)


@pytest.mark.parametrize("name", sorted(TRICKY))
def test_tricky_inputs_parse_the_same(name: str) -> None:
    _same_or_falls_back(TRICKY[name])
