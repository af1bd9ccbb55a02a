"""`failpedia mcp`: the encyclopedia as a Model Context Protocol server on stdio, for coding
agents. Tools: `diagnose_log`, `search`, `get_entry`; every entry is also a resource
(`failpedia://entry/<slug>`, Markdown).

An agent's arguments can be steered by text it read elsewhere, so a `path` is only ever read as
a log: the answer holds the matches and the log lines that are their evidence (lines that match
a fingerprint), never other content of the file; folders, devices and FIFOs are refused.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError

from ..diagnosis.matcher import EVIDENCE_CHARS, Match
from .knowledge import MAX_TOP, Knowledge, LogRefused, read_log_file

__all__ = ["MAX_LOG_TEXT", "make_server"]

MAX_LOG_TEXT = 64 * 1024 * 1024  # characters of log text accepted inline; a bigger log goes by path


def _match(m: Match) -> dict[str, Any]:
    ranks = sorted({e.rank for e in m.evidence if e.rank is not None})
    return {
        "slug": m.slug, "title": m.title, "url": m.url, "role": m.role, "confidence": m.confidence,
        "quick_answer": m.summary, "fix": m.fix, "ranks": ranks,
        "evidence": [{"line": e.line, "rank": e.rank, "text": e.text[:EVIDENCE_CHARS]} for e in m.evidence],
    }


def make_server(knowledge: Knowledge) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer(
        "failpedia",
        instructions=(
            "Failpedia names ML-training failures from their logs. Call diagnose_log with a failed job's "
            "log (text, or a path to a log file) before guessing at a fix; then get_entry for the full "
            "fix. search finds entries by words, #tags or a pasted error line."
        ),
    )

    @server.tool()
    def diagnose_log(log: str | None = None, path: str | None = None, top: int = 5) -> dict[str, Any]:
        """Name the failure a training log shows. Give the log text as `log`, or the path of a log
        file as `path` (read as a log only; the answer holds matching evidence lines, never the
        file's other contents). Returns the ranked matches: the initiating failure first, then
        collateral ones, each with its role, confidence, evidence lines, quick answer and fix."""
        if (log is None) == (path is None):
            raise ToolError("give exactly one of `log` (the text) or `path` (a log file)")
        if log is not None:
            if len(log) > MAX_LOG_TEXT:
                raise ToolError(f"the log text is over {MAX_LOG_TEXT} characters; save it to a file and pass `path`")
            chunks: Any = [log.encode("utf-8", "replace")]
            file = "log"
        else:
            assert path is not None
            chunks, file = read_log_file(path), path
        try:
            diagnosis = knowledge.diagnose(chunks, file)
        except LogRefused as e:
            raise ToolError(str(e)) from None
        matches = diagnosis.matches
        top = max(1, min(top, MAX_TOP))
        first = matches[0] if matches else None
        return {
            "matches": [_match(m) for m in matches[:top]],
            "initiating": first.slug if first and first.role == "initiating" else None,
            "initiating_rank": diagnosis.rank.as_json() if diagnosis.rank else None,
            "note": None if matches else "no known failure matched this log",
        }

    @server.tool()
    def search(query: str, top: int = 10) -> dict[str, Any]:
        """Find entries by words, #tags (`#ddp #oom`), identifiers (`NCCL_P2P_DISABLE`) or a pasted
        error line — the query language of `failpedia search`. Returns the ranked results."""
        if not query.strip():
            raise ToolError("empty query: give words, #tags or a pasted error line")
        from ..core.problems import FailpediaError

        try:
            return {"query": query, "results": knowledge.search(query, top)}
        except FailpediaError as e:  # e.g. an unknown #tag, with a suggestion
            raise ToolError(str(e)) from None

    @server.tool()
    def get_entry(slug: str) -> dict[str, Any]:
        """One entry by its slug (as diagnose_log and search return it): the whole entry as
        Markdown, and as structured data (fingerprints, fix code per stack, references...)."""
        if slug not in knowledge.catalog.records:
            from ..core.validate import suggest

            hint = suggest(slug, list(knowledge.catalog.records))
            raise ToolError(f"no entry '{slug}'{hint}")
        return {"slug": slug, "markdown": knowledge.markdown(slug), "data": knowledge.data(slug)}

    @server.resource("failpedia://entry/{slug}", mime_type="text/markdown", description="One Failpedia entry as Markdown")
    def entry_resource(slug: str) -> str:
        if slug not in knowledge.catalog.records:
            raise ResourceNotFoundError(f"no entry '{slug}'")
        return knowledge.markdown(slug)

    @server.resource("failpedia://entries", mime_type="application/json", description="Every entry: slug, title, quick answer, tags")
    def entries_resource() -> list[dict[str, Any]]:
        return [
            {"slug": s, "title": r.head.title, "summary": r.head.summary, "tags": list(r.tags), "uri": f"failpedia://entry/{s}"}
            for s, r in knowledge.catalog.records.items()
        ]

    return server
