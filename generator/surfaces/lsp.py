"""`failpedia lsp`: a Language Server on stdio, for editors.

- **Logs** (`*.log`, `*.out`, `*.err`, `slurm-*.out`, a document whose language is `log`, or any
  document the client asks about with the `failpedia.diagnose` command): diagnostics at the
  evidence lines — the initiating failure as an error, candidates as warnings, collateral ones as
  information, each naming its entry; hover shows the entry's quick answer and fix; a code action
  opens the entry (the locally built page when there is one, else the site).
- **Entries** (`entries/<category>/<slug>.yaml`, and the tag and category registries, of a
  Failpedia repository): every problem `failpedia check` reports, as you type, at its line and
  column — the cross-entry ones too, because the open text is checked within its whole folder.

The server holds only the documents the client sent (the protocol's full-text sync).
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path

from ..diagnosis.matcher import Match
from .knowledge import Knowledge
from ..core.problems import BuildFailed, FailpediaError, Problem

__all__ = ["DIAGNOSE_COMMAND", "OPEN_COMMAND", "FailpediaLanguageServer", "check_document", "entries_root_of", "is_log", "make_server"]

DIAGNOSE_COMMAND = "failpedia.diagnose"
OPEN_COMMAND = "failpedia.openEntry"
SOURCE = "failpedia"
DEBOUNCE = 0.25  # seconds of quiet after a keystroke before an entry is checked again
_LOG_NAME = re.compile(r"(\.(log|out|err)|^slurm-.*\.out)$")
_SEVERITY = {"initiating": lsp.DiagnosticSeverity.Error, "candidate": lsp.DiagnosticSeverity.Warning,
             "collateral": lsp.DiagnosticSeverity.Information}


def is_log(path: str, language_id: str | None = None) -> bool:
    return language_id == "log" or bool(_LOG_NAME.search(Path(path).name))


def entries_root_of(path: Path) -> Path | None:
    """The entries folder a file belongs to: the nearest parent holding tags.yaml and categories.yaml."""
    for parent in path.parents:
        if (parent / "tags.yaml").is_file() and (parent / "categories.yaml").is_file():
            return parent
    return None


def check_document(root: Path, path: Path, text: str) -> list[Problem]:
    """What `failpedia check` reports for `path` if it held `text`, checked with the rest of `root`."""
    from ..core.catalog import build_catalog
    from ..core.read import read_source

    source = read_source(root)
    raw = text.encode("utf-8")
    display = str(root) + "/" + path.relative_to(root).as_posix()
    if path.parent == root:
        if path.name == "tags.yaml":
            source = dataclasses.replace(source, tags=(display, raw))
        elif path.name == "categories.yaml":
            source = dataclasses.replace(source, categories=(display, raw))
        else:
            return []
    else:
        entries = [e for e in source.entries if e[0] != display]
        entries.append((display, path.parent.name, path.stem, raw))
        source = dataclasses.replace(source, entries=tuple(sorted(entries)))
    try:
        problems = list(build_catalog(source).warnings)
    except BuildFailed as e:
        problems = list(e.problems)
    problems += list(source.problems)
    return sorted({p for p in problems if p.path == display})


def _range(line: int, col: int, text_line: str = "") -> lsp.Range:
    start = lsp.Position(line=max(line - 1, 0), character=max(col - 1, 0))
    end = lsp.Position(line=start.line, character=max(len(text_line), start.character + 1))
    return lsp.Range(start=start, end=end)


@dataclass(frozen=True)
class _Snapshot:
    uri: str
    path: str | None
    language_id: str | None
    version: int | None
    text: str


class FailpediaLanguageServer(LanguageServer):
    def __init__(self, entries: Path, base_url: str, site: Path | None) -> None:
        super().__init__("failpedia", "0.1.0", text_document_sync_kind=lsp.TextDocumentSyncKind.Full)
        self.entries = entries
        self.base_url = base_url
        self.site = site
        self._knowledge: Knowledge | None = None
        self.matches: dict[str, list[Match]] = {}  # uri → the diagnosis shown
        self._pending: dict[str, asyncio.TimerHandle] = {}
        self._tasks: set[asyncio.Future[None]] = set()
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="failpedia-lsp")

    @property
    def knowledge(self) -> Knowledge:
        if self._knowledge is None:
            self._knowledge = Knowledge.load(self.entries, self.base_url)
        return self._knowledge

    def entry_link(self, slug: str) -> str:
        """The local built page when there is one (works offline), else the site's URL."""
        if self.site is not None:
            page = self.site / slug / "index.html"
            if page.is_file():
                return from_fs_path(str(page.resolve())) or self.knowledge.url(slug)
        return self.knowledge.url(slug)

    # --- the work, on a snapshot of the document, in a worker thread ---------------------------

    def _diagnose(self, snap: _Snapshot) -> tuple[list[lsp.Diagnostic], list[Match]]:
        try:
            knowledge = self.knowledge
        except FailpediaError as e:  # e.g. an entries folder with errors: say so where the user looks
            return [lsp.Diagnostic(range=_range(1, 1), message=f"failpedia cannot load its entries: {e}", source=SOURCE)], []
        diagnosis = knowledge.diagnose([snap.text.encode("utf-8", "replace")], snap.path or snap.uri)
        matches = diagnosis.matches
        rank = diagnosis.rank
        lines = snap.text.splitlines()
        out = []
        for m in matches:
            role = {"initiating": "the failure", "candidate": "possible failure", "collateral": "a consequence"}[m.role]
            if m.role == "initiating" and rank is not None:
                role += f", rank {rank.rank}" + (f" on {rank.host}" if rank.host else "")
            for ev in m.evidence:
                text = lines[ev.line - 1] if ev.line - 1 < len(lines) else ""
                out.append(lsp.Diagnostic(
                    range=_range(ev.line, 1, text),
                    message=f"{m.title} ({role}): {m.summary}",
                    severity=_SEVERITY[m.role], source=SOURCE, code=m.slug,
                    code_description=lsp.CodeDescription(href=m.url) if m.url.startswith("http") else None,
                ))
        return out, matches

    def _check_entry(self, snap: _Snapshot) -> list[lsp.Diagnostic] | None:
        if not snap.path:  # an untitled buffer: a log only when asked
            return None
        path = Path(snap.path).resolve()
        root = entries_root_of(path)
        if root is None or path.suffix != ".yaml":
            return None
        try:
            problems = check_document(root, path, snap.text)
        except FailpediaError as e:
            return [lsp.Diagnostic(range=_range(1, 1), message=str(e), source=SOURCE)]
        lines = snap.text.splitlines()
        return [
            lsp.Diagnostic(
                range=_range(p.line, p.col, lines[p.line - 1] if 0 < p.line <= len(lines) else ""),
                message=p.message,
                severity=lsp.DiagnosticSeverity.Error if p.severity == "error" else lsp.DiagnosticSeverity.Warning,
                source=SOURCE,
            )
            for p in problems
        ]

    def _work(self, snap: _Snapshot, force_log: bool) -> tuple[list[lsp.Diagnostic], list[Match]] | None:
        log = force_log or is_log(snap.path or snap.uri, snap.language_id)
        if not log:
            checked = self._check_entry(snap)
            return None if checked is None else (checked, [])
        return self._diagnose(snap)

    async def refresh(self, uri: str, force_log: bool = False) -> None:
        """Diagnose or check the document off the event loop (a big log takes seconds; hover and
        the next keystroke must not wait), then publish — unless it changed meanwhile."""
        doc = self.workspace.get_text_document(uri)
        snap = _Snapshot(uri, doc.path, doc.language_id, doc.version, doc.source)
        result = await asyncio.get_running_loop().run_in_executor(self.pool, self._work, snap, force_log)
        current = self.workspace.text_documents.get(uri)
        if result is None or current is None or current.version != snap.version:
            return
        diagnostics, matches = result
        self.matches[uri] = matches
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=snap.version))

    def schedule(self, uri: str) -> None:
        loop = asyncio.get_running_loop()
        if uri in self._pending:
            self._pending.pop(uri).cancel()
        self._pending[uri] = loop.call_later(DEBOUNCE, self._run_pending, uri)

    def _run_pending(self, uri: str) -> None:
        self._pending.pop(uri, None)
        if uri in self.workspace.text_documents:
            task = asyncio.ensure_future(self.refresh(uri))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)


def make_server(entries: Path, base_url: str = "", site: Path | None = None) -> FailpediaLanguageServer:
    server = FailpediaLanguageServer(entries, base_url, site)

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: FailpediaLanguageServer, params: lsp.DidOpenTextDocumentParams) -> None:
        await ls.refresh(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: FailpediaLanguageServer, params: lsp.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: FailpediaLanguageServer, params: lsp.DidSaveTextDocumentParams) -> None:
        await ls.refresh(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: FailpediaLanguageServer, params: lsp.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.matches.pop(uri, None)
        if uri in ls._pending:
            ls._pending.pop(uri).cancel()
        ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def hover(ls: FailpediaLanguageServer, params: lsp.HoverParams) -> lsp.Hover | None:
        line = params.position.line + 1
        for m in ls.matches.get(params.text_document.uri, []):
            if any(e.line == line for e in m.evidence):
                text = f"**{m.title}** ({m.role})\n\n{m.summary}\n\n**Fix:** {m.fix}\n\n[Open the entry]({ls.entry_link(m.slug)})"
                return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=text))
        return None

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION)
    def code_action(ls: FailpediaLanguageServer, params: lsp.CodeActionParams) -> list[lsp.Command]:
        # Plain commands (the protocol allows them in place of code actions): a code action whose
        # only content is a command is read back as a Command by some clients anyway.
        first, last = params.range.start.line + 1, params.range.end.line + 1
        return [
            lsp.Command(title=f"Open Failpedia: {m.title}", command=OPEN_COMMAND, arguments=[ls.entry_link(m.slug)])
            for m in ls.matches.get(params.text_document.uri, [])
            if any(first <= e.line <= last for e in m.evidence)
        ]

    @server.command(OPEN_COMMAND)
    def open_entry(ls: FailpediaLanguageServer, link: str) -> None:
        ls.window_show_document(lsp.ShowDocumentParams(uri=link, external=True))

    @server.command(DIAGNOSE_COMMAND)
    async def diagnose_command(ls: FailpediaLanguageServer, uri: str) -> dict[str, Any]:
        """Diagnose any open document as a log (e.g. an untitled buffer holding a pasted traceback)."""
        await ls.refresh(uri, force_log=True)
        return {"matches": [m.as_json() for m in ls.matches.get(uri, [])]}

    return server



