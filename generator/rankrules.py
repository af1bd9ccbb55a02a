"""The patterns `ranks.py` reads a log with, as data: `diagnose.matcher_spec` ships them in the
matcher definition, so the browser engine (`templates/static/diagnose-ranks.js`) follows the same
rules from the same text. Each is valid in Python's `re` and in JavaScript."""

from __future__ import annotations

from typing import TypedDict

__all__ = ["RANK_RULES", "RankRules"]


class RankRules(TypedDict):
    literals: list[str]
    rank_in_text: str
    watchdog: str
    enqueued: str
    first_dump: str
    nccl_host: str
    root_rank: str
    root_host: str
    root_block_lines: int
    lines_per_rank: int
    line_chars: int
    max_ranks: int


RANK_RULES: RankRules = {
    # Only lines holding one of these (or inside a torchrun root-cause block) are read.
    "literals": [
        "Watchdog caught", "last enqueued", "signal dumping", "dump signal from another", "Root Cause",
        "nranks", "rank      :", "host      :",
    ],
    # [Rank 3], [PG 1 Rank 3], [PG 0 (default_pg) Rank 3], [PG ID 0 PG GUID 0(default_pg) Rank 3]
    "rank_in_text": r"\[(?:PG (?:ID )?(\d+)[^\]]*? )?Rank (\d{1,6})\]",
    "watchdog": r"Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(\d+), OpType=(\w+)",
    "enqueued": r"last enqueued (?:NCCL )?work: (-?\d+), last completed (?:NCCL )?work: (-?\d+)",
    "first_dump": r"First PG on this rank to signal dumping",
    "nccl_host": r"(?:^|\s|\]:?)([A-Za-z0-9][\w.-]*):\d+:\d+ \[\d+\] NCCL INFO .*?\brank (\d{1,6}) nranks (\d{1,6})",
    "root_rank": r"^\s*rank\s+: (\d{1,6})",
    "root_host": r"^\s*host\s+: (\S+)",
    "root_block_lines": 8,
    "lines_per_rank": 4,
    "line_chars": 400,
    "max_ranks": 100_000,
}
