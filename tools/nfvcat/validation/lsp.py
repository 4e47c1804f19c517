"""``nfvcat lsp``: a Language Server (pygls) that shows nfvcat's findings as diagnostics.

On open and on save, the file is validated as ``nfvcat validate FILE`` would (through the engine server,
started when none runs, or in-process when it cannot be used) and every finding becomes a diagnostic at
its line and column, with the rule id as its code and the rule's section of docs/rules.md as its link.
Findings in other files (a nested template Heat rejects) are published to those files.

On a change (``textDocument/didChange``, full or incremental), the buffer's content is validated as
``nfvcat validate --stdin-filename FILE`` would, once the typing pauses (``NFVCAT_LSP_DEBOUNCE`` seconds,
default 0.3): the newest version wins, and the findings of a version older than the buffer's are never
published (each publication names its version). Heat reads the buffer in place of the file (nested
templates and get_file around it from disk); tosca-parser reads only the disk, so a TOSCA or VNFD buffer's
engine findings wait for the save (the other rules see the buffer).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from nfvcat import __version__
from nfvcat.core.findings import Finding

SEVERITY = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning,
            "informational": types.DiagnosticSeverity.Information}
RULES_DOC = Path(__file__).resolve().parents[3] / "docs" / "rules.md"


def rule_link(rule_id: str) -> str | None:
    """The rule's section of docs/rules.md in this checkout; else the document the rule enforces."""
    if RULES_DOC.is_file():
        return f"{from_fs_path(str(RULES_DOC))}#{rule_id.lower()}"
    from nfvcat.validation.rules import all_rules

    return next((r.source_url for r in all_rules() if r.id == rule_id and r.source_url), None)


def diagnostic(finding: Finding, lines: list[str]) -> types.Diagnostic:
    """LSP positions are 0-based; the range runs to the end of the offending line."""
    line = max(finding.line - 1, 0)
    start = max(finding.column - 1, 0)
    end = len(lines[line]) if line < len(lines) else start + 1
    link = rule_link(finding.rule_id)
    return types.Diagnostic(
        range=types.Range(start=types.Position(line=line, character=start),
                          end=types.Position(line=line, character=max(end, start + 1))),
        message=finding.message, severity=SEVERITY[finding.severity], code=finding.rule_id,
        code_description=types.CodeDescription(href=link) if link else None,
        source=f"nfvcat ({finding.engine})")


def debounce() -> float:
    try:
        return max(0.0, float(os.environ.get("NFVCAT_LSP_DEBOUNCE", "0.3")))
    except ValueError:
        return 0.3


def validate_file(path: str, text: str | None = None) -> list[Finding]:
    """The findings ``nfvcat validate PATH`` prints (with ``text``: ``--stdin-filename PATH`` given that
    text), through the engine server when it can be used."""
    from nfvcat.validation import client
    from nfvcat.validation.model import Options
    from nfvcat.validation.pipeline import validate_paths

    options = Options(overlays={} if text is None else {os.path.abspath(path): text})
    report = None if client.disabled() else client.validate([path], options)
    if report is None:
        report = validate_paths([path], options)
    return list(report.findings)


class NfvcatLanguageServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("nfvcat", __version__)
        self.published: dict[str, set[str]] = {}  # validated file's URI -> URIs it has diagnostics on
        self.lock = threading.Lock()  # one validation at a time: results are published in order
        self.versions: dict[str, int | None] = {}  # URI -> the newest version of the buffer an event named
        self.timers: dict[str, threading.Timer] = {}  # URI -> the validation waiting for the typing to pause
        self.state = threading.Lock()  # guards versions and timers

    def newest(self, uri: str, version: int | None) -> None:
        """An event about ``version`` of the buffer: results for older versions are stale from now on."""
        with self.state:
            self.versions[uri] = version
            timer = self.timers.pop(uri, None)
        if timer is not None:
            timer.cancel()

    def changed(self, uri: str, version: int) -> None:
        """The buffer changed: validate its content once no newer change came for a while."""
        self.newest(uri, version)
        timer = threading.Timer(debounce(), self.check, args=(uri,), kwargs={"version": version, "buffer": True})
        timer.daemon = True
        with self.state:
            if self.versions.get(uri) != version:
                return
            self.timers[uri] = timer
        timer.start()

    def current(self, uri: str, version: int | None) -> bool:
        with self.state:
            return self.versions.get(uri, version) == version

    def check(self, uri: str, version: int | None = None, buffer: bool = False) -> None:
        """Validate the file (``buffer``: the editor's content of ``version``) and publish, unless a newer
        version of the buffer arrived meanwhile."""
        path = to_fs_path(uri)
        if path is None or (not buffer and not os.path.isfile(path)):
            return
        with self.lock:
            text = None
            if buffer:
                if not self.current(uri, version):
                    return  # a newer change is waiting for its own turn
                try:
                    text = self.workspace.get_text_document(uri).source
                except Exception:
                    return
            try:
                findings = validate_file(path, text)
            except Exception as exc:  # a bad site profile, say: shown, never a crash of the server
                self.window_show_message(types.ShowMessageParams(
                    type=types.MessageType.Error, message=f"nfvcat: {exc}"))
                return
            if not self.current(uri, version):
                return  # the buffer changed while this ran: these findings are of an older version
            by_uri: dict[str, list[types.Diagnostic]] = {uri: []}
            texts: dict[str, list[str]] = {}
            for f in findings:
                target = os.path.abspath(f.file.split("!/", 1)[0])
                key = uri if os.path.abspath(path) == target else from_fs_path(target) or uri
                if key not in texts:
                    texts[key] = _lines(self, key)
                by_uri.setdefault(key, []).append(diagnostic(f, texts[key]))
            for stale in self.published.get(uri, set()) - set(by_uri):
                self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=stale, diagnostics=[]))
            self.published[uri] = set(by_uri)
            for key, diagnostics in by_uri.items():
                self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                    uri=key, diagnostics=diagnostics, version=version if key == uri else None))


def _lines(ls: LanguageServer, uri: str) -> list[str]:
    try:
        return ls.workspace.get_text_document(uri).source.splitlines()
    except Exception:
        return []


def build() -> NfvcatLanguageServer:
    server = NfvcatLanguageServer()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: NfvcatLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        uri, version = params.text_document.uri, params.text_document.version
        ls.newest(uri, version)
        ls.thread_pool.submit(ls.check, uri, version)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: NfvcatLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.changed(params.text_document.uri, params.text_document.version)  # pygls applied the change

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: NfvcatLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        try:
            version: int | None = ls.workspace.get_text_document(uri).version
        except Exception:
            version = None
        ls.newest(uri, version)  # the saved file is this version: a pending change's run is not needed
        ls.thread_pool.submit(ls.check, uri, version)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: NfvcatLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.newest(params.text_document.uri, None)
        for uri in ls.published.pop(params.text_document.uri, set()):
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    return server


def serve_stdio(**_: Any) -> None:
    build().start_io()
