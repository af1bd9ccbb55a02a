"""The patterns `ranks.py` reads a log with, as data: `matcher.matcher_spec` ships them in the
matcher definition, so the browser engine (`templates/static/diagnose-ranks.js`) follows the same
rules from the same text. Each is valid in Python's `re` and in JavaScript."""

from __future__ import annotations

from typing import TypedDict

__all__ = ["MERGE_RULES", "MergeRules", "PathRule", "RANK_RULES", "RankRules"]


class PathRule(TypedDict):
    kind: str  # "rank" (a global rank), "local rank", "node", "job" or "host"
    label: str  # how the verdict names it: "{label} {n}"
    pattern: str  # searched in the file's path ("/"-separated, as given); group 1 is the number or host


class MergeRules(TypedDict):
    timestamps: list[str]
    months: list[str]
    stamp_chars: int
    paths: list[PathRule]
    host_prefix: str
    skip_names: str
    max_files: int


# How several log files (one per rank or node) become one story: `logmerge.py` and
# `templates/static/diagnose-merge.js` read them with these patterns. A line's time is its first
# timestamp in its first `stamp_chars` characters; each pattern gives month, day, hour, minute,
# second and an optional fraction, in that order (the year, when there is one, is not compared:
# a merge across New Year's Eve is ordered wrong). Times are compared as written (time zones and
# clock skew between nodes are not corrected).
MERGE_RULES: MergeRules = {
    "timestamps": [
        # torch/glog: "[E1130 02:23:19.811412 ...]", "I1130 02:23:19.811412 3816208 run.py:766]"
        r"(?:^|[\[\s:])[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{1,9})\b",
        # Python logging, DeepSpeed, ISO 8601, SLURM: "2024-11-30 02:23:19,811", "2024-11-30T02:23:19.811Z"
        r"\b\d{4}-(\d\d)-(\d\d)[T _](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?",
        # date(1): "Sat Nov 30 02:23:19 UTC 2024"
        r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +(\d{1,2}) (\d\d):(\d\d):(\d\d)()",
    ],
    "months": ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"],
    "stamp_chars": 120,
    # A file's rank, node or host from its path, when its lines carry no rank prefix: the first
    # rule that matches, in this order (a local rank before a rank: "local_rank3" holds "rank3").
    "paths": [
        # torchrun --log-dir: <log_dir>/<run_id>/attempt_0/<local_rank>/stdout.log|stderr.log
        {"kind": "local rank", "label": "local rank", "pattern": r"attempt_\d+/(\d{1,6})/(?:stdout|stderr|error)\.[A-Za-z]+$"},
        {"kind": "local rank", "label": "local rank", "pattern": r"(?:^|[^A-Za-z0-9])local[-_]?rank[-_]?(\d{1,6})(?![0-9])"},
        {"kind": "rank", "label": "rank", "pattern": r"(?:^|[^A-Za-z0-9])(?:global[-_]?)?rank[-_]?(\d{1,6})(?![0-9])"},
        # a SLURM array: slurm-<jobid>_<taskid>.out; the task is a node (or a job) index, not a rank
        {"kind": "node", "label": "SLURM array task", "pattern": r"(?:^|/)slurm-\d+_(\d{1,6})\.[A-Za-z]+$"},
        {"kind": "node", "label": "node", "pattern": r"(?:^|[^A-Za-z0-9])node[-_]?(\d{1,6})(?![0-9])"},
        {"kind": "job", "label": "SLURM job", "pattern": r"(?:^|/)slurm-(\d{1,12})\.[A-Za-z]+$"},
        # a file named for its host: gpu1504.log, worker-3.out, ip-10-0-0-12.log (letters, then a digit; no "_")
        {"kind": "host", "label": "host", "pattern": r"(?:^|/)((?:[A-Za-z][A-Za-z0-9]*-)*[A-Za-z]+-?\d[A-Za-z0-9-]*)\.(?:log|out|err|txt)$"},
    ],
    # pdsh / DeepSpeed's multi-node runner put the host first: "gpu1505: [rank1]: ...", "10.0.29.212: ..."
    "host_prefix": r"^((?:[A-Za-z][A-Za-z0-9-]*\d[A-Za-z0-9-]*|\d{1,3}(?:\.\d{1,3}){3})(?:\.[A-Za-z0-9-]+)*): ",
    # Files in a folder that are not logs (checkpoints, configs, torchrun's error.json duplicates stderr)
    "skip_names": r"(?:^\.|\.(?:json|ya?ml|toml|py|sh|pt|pth|bin|ckpt|safetensors|npy|npz|pkl|png|jpe?g|svg|pdf|zip|tar|whl|so)$)",
    "max_files": 1024,
}


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
    merge: MergeRules


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
    # Several files (logmerge.py): how they are merged and who wrote each, below.
    "merge": MERGE_RULES,
}

