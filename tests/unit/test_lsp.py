"""``nfvcat lsp`` driven by pygls's own LSP client over stdio, as an editor would: diagnostics on open and on
save, at the finding's line and column, with the rule id, severity and the link to the rule's docs.
It goes through the engine server (its own cache directory), which the test stops at the end."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

from tests.conftest import ROOT, nfvcat

BAD = (ROOT / "tests" / "fixtures" / "rules" / "E1001" / "fail.yaml").read_text()
GOOD = (ROOT / "tests" / "fixtures" / "rules" / "E1001" / "pass.yaml").read_text()


class Editor:
    """pygls's LSP client running ``nfvcat lsp`` on ``path``'s directory, collecting its diagnostics."""

    def __init__(self, path: Path):
        self.client = LanguageClient("test-editor", "1")
        self.path = path
        self.published: list[types.PublishDiagnosticsParams] = []
        self.arrived = asyncio.Event()
        uri = from_fs_path(str(path))
        assert uri is not None
        self.uri = uri

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
            self.published.append(params)
            self.arrived.set()

    async def next_diagnostics(self) -> types.PublishDiagnosticsParams:
        await asyncio.wait_for(self.arrived.wait(), timeout=300)
        self.arrived.clear()
        return self.published[-1]

    async def open(self, env: dict[str, str]) -> types.PublishDiagnosticsParams:
        await self.client.start_io(sys.executable, "-m", "nfvcat", "lsp", cwd=str(self.path.parent), env=env)
        await self.client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(), root_uri=from_fs_path(str(self.path.parent))))
        self.client.initialized(types.InitializedParams())
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
            uri=self.uri, language_id="yaml", version=1, text=self.path.read_text())))
        return await self.next_diagnostics()

    async def close(self) -> None:
        try:
            await self.client.shutdown_async(None)
            self.client.exit(None)
        finally:
            await self.client.stop()


async def _session(path: Path, env: dict[str, str]) -> list[types.PublishDiagnosticsParams]:
    editor = Editor(path)
    try:
        await editor.open(env)
        path.write_text(GOOD)  # the user fixes the template and saves
        editor.client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=editor.uri)))
        await editor.next_diagnostics()
    finally:
        await editor.close()
    return editor.published


def test_diagnostics_on_open_and_save_through_the_engine_server(tmp_path: Path) -> None:
    path = tmp_path / "net.yaml"
    path.write_text(BAD)
    env: dict[str, Any] = {**os.environ, "NFVCAT_NO_SERVER": "0", "NFVCAT_CACHE_DIR": str(tmp_path / "cache")}
    try:
        opened, saved = asyncio.run(_session(path, env))
        status = nfvcat("server", "status", "--format", "json", env=env)
        assert status.returncode == 0, "the language server validated through the engine server"
    finally:
        nfvcat("server", "stop", env=env)
    assert opened.uri == from_fs_path(str(path))
    [diag] = opened.diagnostics
    assert diag.code == "E1001" and diag.severity == types.DiagnosticSeverity.Error
    assert (diag.range.start.line, diag.range.start.character) == (6, 6)  # nfvcat validate says 7:7
    assert "sriov" in diag.message
    assert diag.code_description is not None
    assert diag.code_description.href == f"{from_fs_path(str(ROOT / 'docs' / 'rules.md'))}#e1001"
    assert saved.uri == opened.uri and list(saved.diagnostics) == []


def _edit(line: int, start: int, end: int, text: str) -> types.TextDocumentContentChangePartial:
    return types.TextDocumentContentChangePartial(range=types.Range(
        start=types.Position(line=line, character=start), end=types.Position(line=line, character=end)), text=text)


async def _typing(path: Path, env: dict[str, str]) -> dict[str, Any]:
    """Open the saved (bad) template, then change the buffer without saving: a full change to the good
    text, an incremental one back to a bad value, then two changes at once (the newest wins)."""
    editor = Editor(path)

    def change(version: int, *changes: types.TextDocumentContentChangeEvent) -> None:
        editor.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=editor.uri, version=version),
            content_changes=list(changes)))

    out: dict[str, Any] = {}
    try:
        out["opened"] = await editor.open(env)
        change(2, types.TextDocumentContentChangeWholeDocument(text=GOOD))  # full sync, not saved
        out["full"] = await editor.next_diagnostics()
        change(3, _edit(6, 25, 31, "sriov"))  # incremental: "direct" -> "sriov"
        out["incremental"] = await editor.next_diagnostics()
        change(4, _edit(6, 25, 30, "sriov-4"))  # two changes while the first waits: only the newest
        change(5, _edit(6, 25, 32, "direct"))
        out["newest"] = await editor.next_diagnostics()
        await asyncio.sleep(3 * float(env["NFVCAT_LSP_DEBOUNCE"]) + 2)  # time for a stale one to show up
        out["after"] = list(editor.published)
    finally:
        await editor.close()
    return out


def test_diagnostics_follow_unsaved_changes_and_the_newest_version_wins(tmp_path: Path) -> None:
    path = tmp_path / "net.yaml"
    path.write_text(BAD)  # stays bad on disk: every change below is unsaved
    env: dict[str, Any] = {**os.environ, "NFVCAT_NO_SERVER": "0", "NFVCAT_CACHE_DIR": str(tmp_path / "cache"),
                           "NFVCAT_LSP_DEBOUNCE": "0.5"}
    try:
        out = asyncio.run(_typing(path, env))
    finally:
        nfvcat("server", "stop", env=env)
    assert path.read_text() == BAD
    assert [d.code for d in out["opened"].diagnostics] == ["E1001"] and out["opened"].version == 1
    assert list(out["full"].diagnostics) == [] and out["full"].version == 2, "the buffer, not the file"
    [diag] = out["incremental"].diagnostics
    assert out["incremental"].version == 3 and diag.code == "E1001" and '"sriov" is not' in diag.message
    assert (diag.range.start.line, diag.range.start.character) == (6, 6)
    assert list(out["newest"].diagnostics) == [] and out["newest"].version == 5
    assert out["after"][-1] is out["newest"] and [p.version for p in out["after"]] == [1, 2, 3, 5], \
        "version 4 was never published"


def test_options_travel_to_the_engine_server_whole(tmp_path: Path) -> None:
    """The language server's Options as plain data and back (the server's one way to read them): every field,
    the project as the .nfvcat.yaml it was read from."""
    import json

    from nfvcat.validation import project
    from nfvcat.validation.model import Options

    (tmp_path / ".nfvcat.yaml").write_text("exclude: ['legacy/**']\nstrict: true\n")
    sent = Options(environments=["e.yaml"], parameters={"vlan": "150"}, site="site.yaml", use_cache=False,
                   catalog_root=tmp_path, require_signed=True, trust_ca="ca.pem",
                   project=project.load(tmp_path / ".nfvcat.yaml"), skip_unknown=True,
                   overlays={str(tmp_path / "t.yaml"): "heat_template_version: 2021-04-16\n"})
    assert Options.from_json(json.loads(json.dumps(sent.to_json()))) == sent
    assert Options.from_json(Options().to_json()) == Options()


async def _opened(path: Path, env: dict[str, str]) -> types.PublishDiagnosticsParams:
    editor = Editor(path)
    try:
        return await editor.open(env)
    finally:
        await editor.close()


def test_a_property_whose_name_holds_a_colon_is_shown_at_its_key(tmp_path: Path) -> None:
    path = tmp_path / "port.yaml"
    path.write_text((ROOT / "tests" / "fixtures" / "defective" / "property_with_colon.yaml").read_text())
    env: dict[str, Any] = {**os.environ, "NFVCAT_NO_SERVER": "0", "NFVCAT_CACHE_DIR": str(tmp_path / "cache")}
    try:
        opened = asyncio.run(_opened(path, env))
    finally:
        nfvcat("server", "stop", env=env)
    [diag] = opened.diagnostics
    assert diag.code == "E1001" and "binding:vnic_typo" in diag.message
    assert (diag.range.start.line, diag.range.start.character) == (9, 6)  # line 10, the key; not properties (8)
