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
    line_host: str
    root_rank: str
    root_host: str
    barrier_failed: str
    horovod_missing: str
    horovod_stalled: str
    horovod_stalled_rank: str
    stalled_block_lines: int
    barrier_blames: str
    world_size: str
    root_block_lines: int
    lines_per_rank: int
    line_chars: int
    max_ranks: int


RANK_RULES: RankRules = {
    # Only lines holding one of these (or inside a torchrun root-cause block) are read.
    "literals": [
        "Watchdog caught", "last enqueued", "signal dumping", "dump signal from another", "Root Cause",
        "nranks", "rank      :", "host      :", "monitoredBarrier", "missing ranks", "Stalled ranks", "MEMBER: ",
    ],
    # [Rank 3], [PG 1 Rank 3], [PG 0 (default_pg) Rank 3], [PG ID 0 PG GUID 0(default_pg) Rank 3]
    "rank_in_text": r"\[(?:PG (?:ID )?(\d+)[^\]]*? )?Rank (\d{1,6})\]",
    "watchdog": r"Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(\d+), OpType=(\w+)",
    "enqueued": r"last enqueued (?:NCCL )?work: (-?\d+), last completed (?:NCCL )?work: (-?\d+)",
    "first_dump": r"First PG on this rank to signal dumping",
    "nccl_host": r"(?:^|\s|\]:?|>:)([A-Za-z0-9][\w.-]*):\d+:\d+ \[\d+\] NCCL INFO .*?\brank (\d{1,6}) nranks (\d{1,6})",
    # The host of an NCCL line itself ("node-6:3070:3090 [0] NCCL WARN ..."), for the rank whose own line it is.
    "line_host": r"(?:^|\s|\]:?|>:)([A-Za-z0-9][\w.-]*):\d+:\d+ \[\d+\] (?:\S+ )?NCCL ",
    "root_rank": r"^\s*rank\s+: (\d{1,6})",
    "root_host": r"^\s*host\s+: (\S+)",
    # The software names the rank that did not arrive: Gloo's monitored barrier (its coordinator,
    # rank 0, says "Ranks 4, 5 failed to pass"), Horovod's stall report ("[missing ranks: 1]", or
    # "Stalled ranks:" followed by "6: [tensor, ...]" lines).
    "barrier_failed": r"Ranks? (\d{1,6}(?:, \d{1,6})*) failed to pass monitoredBarrier",
    "horovod_missing": r"\[missing ranks: (\d{1,6}(?:, ?\d{1,6})*)\]",
    "horovod_stalled": r"Stalled ranks:\s*$",
    "horovod_stalled_rank": r"^(?:\[\d+,\d+\]<std(?:out|err)>:)?\s*(\d{1,6}): \[",
    "stalled_block_lines": 64,
    # A rank that reached the barrier blames the coordinator it waited for: weaker evidence (the
    # coordinator may itself be waiting for another rank), and the rank saying it is a waiter.
    "barrier_blames": r"Rank (\d{1,6}) successfully reached monitoredBarrier, but received errors while waiting for send/recv from rank (\d{1,6})",
    # World size from Lightning's start-up lines ("Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/3").
    "world_size": r"GLOBAL_RANK: \d{1,6}, MEMBER: \d{1,6}/(\d{1,6})",
    "root_block_lines": 8,
    "lines_per_rank": 4,
    "line_chars": 400,
    "max_ranks": 100_000,
}
