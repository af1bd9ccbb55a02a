"""`failpedia lsp`: driven over stdio by pytest-lsp's client, as an editor would."""

from __future__ import annotations

import sys
from pathlib import Path

from collections.abc import Awaitable, Callable
from typing import Any

from asyncrun import run_async
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient, make_test_lsp_client

REPO = Path(__file__).resolve().parent.parent
ENTRIES = REPO / "entries"
OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 1 has a total capacity "
       "of 79.15 GiB of which 3.44 MiB is free. Of the allocated memory 77.1 GiB is allocated by PyTorch, "
       "and 120.5 MiB is reserved by PyTorch but unallocated.")
WATCHDOG = ("[rank0]:[E1130 02:23:19.811412 1234 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
            "ran for 600033 milliseconds before timing out.")


def with_server(body: Callable[[LanguageClient], Awaitable[Any]]) -> Any:
    """Start `failpedia lsp` over stdio with pytest-lsp's client, run `body(client)`, shut down."""

    async def main() -> Any:
        client = make_test_lsp_client()
        await client.start_io(sys.executable, "-m", "generator", "lsp", "--entries", str(ENTRIES), "--site", str(REPO / "no-site"), cwd=str(REPO))
        try:
            await client.initialize_session(lsp.InitializeParams(capabilities=lsp.ClientCapabilities(), root_uri=REPO.as_uri()))
            result = await body(client)
            await client.shutdown_session()
            return result
        finally:
            await client.stop()

    return run_async(main)


def open_doc(client: LanguageClient, uri: str, text: str, language: str = "plaintext") -> None:
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=uri, language_id=language, version=1, text=text)))


async def diagnostics_for(client: LanguageClient, uri: str) -> list[lsp.Diagnostic]:
    while uri not in client.diagnostics:
        await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return list(client.diagnostics.pop(uri))


def test_a_log_gets_diagnostics_hover_and_an_action(tmp_path: Path) -> None:
    with_server(lambda client: _log_session(client, tmp_path))


async def _log_session(client: LanguageClient, tmp_path: Path) -> None:
    uri = (tmp_path / "slurm-4242.out").as_uri()
    open_doc(client, uri, "\n".join(["starting", f"[rank1]: {OOM}", "x", WATCHDOG, WATCHDOG.replace("rank0", "rank2")]) + "\n")
    got = await diagnostics_for(client, uri)
    by_line = {(d.range.start.line, d.code): d for d in got}
    oom = by_line[(1, "cuda-out-of-memory")]
    assert oom.severity == lsp.DiagnosticSeverity.Error and oom.message.startswith("CUDA out of memory (the failure, rank 1)")
    assert oom.range.end.character == len(f"[rank1]: {OOM}")
    for line in (3, 4):
        assert by_line[(line, "nccl-watchdog-timeout")].severity == lsp.DiagnosticSeverity.Information

    hover = await client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=1, character=5)))
    assert hover is not None and "**Fix:**" in hover.contents.value and "CUDA out of memory" in hover.contents.value
    assert await client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=0, character=1))) is None

    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), range=oom.range, context=lsp.CodeActionContext(diagnostics=[oom])))
    assert actions and actions[0].command == "failpedia.openEntry"
    assert actions[0].arguments[0].endswith("cuda-out-of-memory/")


def test_any_buffer_can_be_diagnosed_on_request() -> None:
    with_server(_untitled_session)


async def _untitled_session(client: LanguageClient) -> None:
    uri = "untitled:Untitled-1"
    open_doc(client, uri, f"Traceback (most recent call last):\n  File \"train.py\", line 3\n{OOM}\n")
    result = await client.workspace_execute_command_async(lsp.ExecuteCommandParams(command="failpedia.diagnose", arguments=[uri]))
    assert result["matches"][0]["slug"] == "cuda-out-of-memory"
    got = await diagnostics_for(client, uri)
    assert [(d.range.start.line, d.code) for d in got] == [(2, "cuda-out-of-memory")]


def test_an_entry_is_checked_as_typed_with_cross_entry_problems() -> None:
    with_server(_entry_session)


async def _entry_session(client: LanguageClient) -> None:
    path = ENTRIES / "memory" / "cuda-out-of-memory.yaml"
    text = path.read_text()
    uri = path.as_uri()
    open_doc(client, uri, text, "yaml")
    assert await diagnostics_for(client, uri) == []

    lines = text.splitlines()
    tags_at = next(i for i, line in enumerate(lines) if line.startswith("tags:"))
    related_at = next(i for i, line in enumerate(lines) if line.startswith("related:"))
    lines[tags_at] = "tags: [oomm, memory]"
    lines.insert(related_at + 1, "  - no-such-entry")
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[lsp.TextDocumentContentChangeWholeDocument(text="\n".join(lines) + "\n")]))
    got = await diagnostics_for(client, uri)
    messages = {(d.range.start.line, d.message) for d in got}
    assert any(line == tags_at and "unknown tag 'oomm'" in m and "did you mean 'oom'" in m for line, m in messages), messages
    assert any(line == related_at + 1 and "no-such-entry" in m for line, m in messages), messages
    assert all(d.severity == lsp.DiagnosticSeverity.Error for d in got if "oomm" in d.message)


def test_the_server_answers_while_a_big_log_is_diagnosed(tmp_path: Path) -> None:
    with_server(lambda client: _big_log_session(client, tmp_path))


async def _big_log_session(client: LanguageClient, tmp_path: Path) -> None:
    small = (tmp_path / "small.log").as_uri()
    open_doc(client, small, f"{OOM}\n")
    await diagnostics_for(client, small)
    big = (tmp_path / "big.log").as_uri()
    line = "[rank0]: {'loss': 2.3141, 'grad_norm': 1.25, 'learning_rate': 1e-05, 'epoch': 0.12}\n"
    open_doc(client, big, line * 60_000 + f"[rank3]: {OOM}\n")
    hover = await client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=small), position=lsp.Position(line=0, character=1)))
    assert hover is not None and big not in client.diagnostics  # answered before the big log was done
    got = await diagnostics_for(client, big)
    assert [(d.range.start.line, d.code) for d in got] == [(60_000, "cuda-out-of-memory")]
