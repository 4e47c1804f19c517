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


async def _session(path: Path, env: dict[str, str]) -> list[types.PublishDiagnosticsParams]:
    client = LanguageClient("test-editor", "1")
    published: list[types.PublishDiagnosticsParams] = []
    arrived = asyncio.Event()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
        published.append(params)
        arrived.set()

    async def next_diagnostics() -> types.PublishDiagnosticsParams:
        await asyncio.wait_for(arrived.wait(), timeout=300)
        arrived.clear()
        return published[-1]

    await client.start_io(sys.executable, "-m", "nfvcat", "lsp", cwd=str(path.parent), env=env)
    try:
        await client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(), root_uri=from_fs_path(str(path.parent))))
        client.initialized(types.InitializedParams())
        uri = from_fs_path(str(path))
        assert uri is not None
        client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
            uri=uri, language_id="yaml", version=1, text=path.read_text())))
        await next_diagnostics()
        path.write_text(GOOD)  # the user fixes the template and saves
        client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        await next_diagnostics()
        await client.shutdown_async(None)
        client.exit(None)
    finally:
        await client.stop()
    return published


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
