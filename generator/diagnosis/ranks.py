"""Which rank started a distributed failure, read from the log (pure, streaming, bounded).

A distributed failure is one rank's problem and the other ranks' collateral. The ranked matches
say *what* failed; this module says *which rank*, from what the log shows beside the fingerprints:

- the NCCL watchdog's state per rank: the timed-out work's `SeqNum` and `OpType`, and
  `last enqueued work` / `last completed work`. A rank whose last enqueued work is behind the
  others' never entered the collective they are stuck in: it is the one to look at, even when it
  printed nothing (then it is the rank missing from the ranks that timed out);
- (not the flight recorder's "First PG on this rank to signal dumping": the rank that timed out
  first is the one that waited longest, a victim);
- torchrun's `Root Cause (first observed failure)` block, which names the first rank to *exit*
  — often a bystander killed after the real failure; the verdict says so when they disagree;
- hosts, from NCCL's `host:pid:tid [dev] NCCL INFO ... rank R nranks N` lines and the root
  cause block.

`RankScanner.feed` takes the same chunks as `matcher.Matcher`; only chunks holding one of a
few literals are looked at line by line, so a long healthy log costs a few substring searches.
Several files (logmerge.py) come as merged lines, each with its file (`feed_merged`): a per-rank
file's name stands for its lines' missing rank prefix, and a rank whose file is empty or missing is
one that reported nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ahocorasick_rs import BytesAhoCorasick

from .matcher import ANSI_PATTERN, EVIDENCE_PER_ENTRY, Match, rank_of
from .rankrules import MERGE_RULES, RANK_RULES

__all__ = ["LogSource", "RankScanner", "RankVerdict", "initiating_rank"]

_R = RANK_RULES
_LITERALS = tuple(lit.encode() for lit in _R["literals"])
_FINDER = BytesAhoCorasick(list(_LITERALS))  # all of them in one pass over a chunk
_ANSI = re.compile(ANSI_PATTERN)
_RANK_IN_TEXT = re.compile(_R["rank_in_text"])
_WATCHDOG = re.compile(_R["watchdog"])
_ENQUEUED = re.compile(_R["enqueued"])
_FIRST_DUMP = re.compile(_R["first_dump"])
_NCCL_HOST = re.compile(_R["nccl_host"])
_LINE_HOST = re.compile(_R["line_host"])
_ROOT_RANK = re.compile(_R["root_rank"])
_ROOT_HOST = re.compile(_R["root_host"])
_BARRIER_FAILED = re.compile(_R["barrier_failed"])
_HOROVOD_MISSING = re.compile(_R["horovod_missing"])
_HOROVOD_STALLED = re.compile(_R["horovod_stalled"])
_HOROVOD_STALLED_RANK = re.compile(_R["horovod_stalled_rank"])
_BARRIER_BLAMES = re.compile(_R["barrier_blames"])
_WORLD_SIZE = re.compile(_R["world_size"])
STALLED_BLOCK_LINES = _R["stalled_block_lines"]
ROOT_BLOCK_LINES = _R["root_block_lines"]
LINES_PER_RANK = _R["lines_per_rank"]
LINE_CHARS = _R["line_chars"]
MAX_RANKS = _R["max_ranks"]
_HOST_PREFIX = re.compile(MERGE_RULES["host_prefix"], re.ASCII)

Line = tuple[str, int, str]  # (file, line number, text) of a line that shows it


@dataclass(frozen=True)
class LogSource:
    """One of several log files (logmerge.py), and who wrote it, as far as its path says."""

    name: str  # the path as shown in evidence
    rank: int | None = None  # a global rank (rank3.log)
    label: str | None = None  # "rank 3", "local rank 3", "node 6", "SLURM array task 4", "host gpu1504"
    host: str | None = None


@dataclass
class _RankState:
    timed_out: tuple[int, str] | None = None  # (SeqNum, OpType) of the work it timed out on
    enqueued: int | None = None
    completed: int | None = None
    first_dump: bool = False
    pg: str | None = None  # the process group of the timed-out work, when the log names it
    lines: list[Line] = field(default_factory=list)  # the lines that show it


@dataclass
class RankScanner:
    """Streaming: feed the log's bytes in chunks, as to `matcher.Matcher`; read the state after."""

    file: str = "-"  # the log's name, for its lines (several files: each line's own, feed_merged)
    ranks: dict[int, _RankState] = field(default_factory=dict)
    hosts: dict[int, str] = field(default_factory=dict)
    world: int | None = None
    root_cause: tuple[int, str | None, str, int] | None = None  # (rank, host, file, line) of torchrun's first observed failure
    # Several files (logmerge.py): each file's identity from its path, the files that had a line,
    # and the hosts that files' names or lines' host prefixes give a rank.
    sources: list[LogSource] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    file_hosts: dict[int, str] = field(default_factory=dict)
    _src: LogSource | None = None
    _carry: bytes = b""
    _line_base: int = 0
    # Ranks the software itself names as not having arrived (monitored barrier, Horovod's stall
    # report): rank -> (times named, first line); and the ranks a barrier's waiters blame.
    named: dict[int, list[Any]] = field(default_factory=dict)  # [times, (line, text)]
    blamed: dict[int, list[Any]] = field(default_factory=dict)
    waiters: set[int] = field(default_factory=set)
    _in_root: int = 0  # lines left of a root-cause block being read
    _root_host: str | None = None
    _in_stalled: int = 0  # lines left of a Horovod "Stalled ranks:" block

    def feed(self, data: bytes) -> None:
        buf = self._carry + data
        cut = buf.rfind(b"\n")
        if cut < 0:
            self._carry = buf[-(1 << 20):]
            return
        self._carry = buf[cut + 1 :]
        self._chunk(buf[: cut + 1])

    def close(self) -> None:
        if self._carry:
            self._chunk(self._carry + b"\n")
            self._carry = b""

    def feed_merged(self, chunk: bytes, lines: list[bytes], where: list[tuple[int, int]], sources: list[LogSource]) -> None:
        """Lines of a merged log (logmerge.py), each at its own file and line (`where`: the index of
        its file in `sources`, its line number); `chunk` is the lines joined, where a few substring
        searches tell whether any line needs reading."""
        self.seen.update(sources[i].name for i in {i for i, _ in where})
        if not (self._in_root or self._in_stalled or any(lit in chunk for lit in _LITERALS)):
            return
        for raw, (i, number) in zip(lines, where):
            self._src = sources[i]
            if self._in_root or self._in_stalled or any(lit in raw for lit in _LITERALS):
                self._line(number, _ANSI.sub("", raw.decode("utf-8", "replace")).rstrip("\r"))

    def _file(self) -> str:
        return self._src.name if self._src else self.file

    def _chunk(self, chunk: bytes) -> None:
        """The lines of `chunk` (whole lines) that hold a literal, and those of a block that a
        line opened, in order."""
        starts = sorted({chunk.rfind(b"\n", 0, pos) + 1 for _, pos, _ in _FINDER.find_matches_as_indexes(chunk)})
        k = at = counted = 0
        number = self._line_base
        while at < len(chunk):
            if not (self._in_root or self._in_stalled):
                while k < len(starts) and starts[k] < at:
                    k += 1
                if k == len(starts):
                    break
                at = starts[k]
            number += chunk.count(b"\n", counted, at)
            counted = at
            end = chunk.find(b"\n", at)
            self._line(number + 1, _ANSI.sub("", chunk[at:end].decode("utf-8", "replace")).rstrip("\r"))
            at = end + 1
        self._line_base += chunk.count(b"\n")

    def _state(self, rank: int) -> _RankState | None:
        if rank not in self.ranks and len(self.ranks) >= MAX_RANKS:
            return None
        return self.ranks.setdefault(rank, _RankState())

    def _note(self, st: _RankState, number: int, text: str) -> None:
        if len(st.lines) < LINES_PER_RANK:
            st.lines.append((self._file(), number, text.strip()[:LINE_CHARS]))

    def _name(self, table: dict[int, list[Any]], rank: int, number: int, text: str) -> None:
        if rank in table:
            table[rank][0] += 1
        elif len(table) < MAX_RANKS:
            table[rank] = [1, (self._file(), number, text.strip()[:LINE_CHARS])]

    def _line(self, number: int, text: str) -> None:
        if self._in_stalled:
            if m := _HOROVOD_STALLED_RANK.search(text):
                self._in_stalled -= 1
                self._name(self.named, int(m.group(1)), number, text)
                return
            self._in_stalled = 0
        if m := _BARRIER_FAILED.search(text):
            for r in m.group(1).split(","):
                self._name(self.named, int(r), number, text)
            return
        if m := _HOROVOD_MISSING.search(text):
            for r in m.group(1).split(","):
                self._name(self.named, int(r), number, text)
            return
        if _HOROVOD_STALLED.search(text):
            self._in_stalled = STALLED_BLOCK_LINES
            return
        if m := _BARRIER_BLAMES.search(text):
            if len(self.waiters) < MAX_RANKS:
                self.waiters.add(int(m.group(1)))
            self._name(self.blamed, int(m.group(2)), number, text)
            return
        if m := _WORLD_SIZE.search(text):
            self.world = max(self.world or 0, int(m.group(1)))
            return
        if self._in_root:
            self._in_root -= 1
            if m := _ROOT_HOST.search(text):
                self._root_host = m.group(1)
            elif m := _ROOT_RANK.search(text):
                self.root_cause = (int(m.group(1)), self._root_host, self._file(), number)
                self._in_root = 0
            return
        if "Root Cause" in text:
            self._in_root, self._root_host = ROOT_BLOCK_LINES, None
            return
        if m := _NCCL_HOST.search(text):
            if len(self.hosts) < MAX_RANKS:
                self.hosts[int(m.group(2))] = m.group(1)
            self.world = max(self.world or 0, int(m.group(3)))
            return
        who = _RANK_IN_TEXT.search(text)
        # The launcher's prefix ([rank9]:) is the global rank; "[PG 1 Rank 1]" counts within its group.
        prefixed = rank_of(text)
        if prefixed is None and self._src is not None:  # a per-rank file's name is its lines' prefix
            prefixed = self._src.rank
        found = prefixed if prefixed is not None else int(who.group(2)) if who else None
        pg = who.group(1) if who and who.group(1) is not None else None
        if found is None:
            return
        if self._src is not None and found not in self.file_hosts and len(self.file_hosts) < MAX_RANKS:
            hp = _HOST_PREFIX.match(text)
            host = hp.group(1) if hp else self._src.host
            if host is not None:
                self.file_hosts[found] = host
        st = self._state(found)
        if st is None:
            return
        if m := _WATCHDOG.search(text):
            if st.timed_out is None:  # the first report is the work it is stuck in
                st.timed_out = (int(m.group(1)), m.group(2))
                st.pg = pg if pg is not None else st.pg
            self._note(st, number, text)
        if m := _ENQUEUED.search(text):
            st.enqueued, st.completed = int(m.group(1)), int(m.group(2))
            st.pg = pg if pg is not None else st.pg
            self._note(st, number, text)
        if _FIRST_DUMP.search(text):
            st.first_dump = True
            self._note(st, number, text)


@dataclass(frozen=True)
class RankVerdict:
    rank: int | None  # None only when just a file's name says where it came from (`origin`)
    host: str | None
    reason: str  # one sentence: why this rank
    lines: tuple[Line, ...]  # the log lines that show it
    disagrees: str | None = None  # what torchrun's root cause says, when it names another rank
    origin: str | None = None  # several files, no rank known: the file's node or local rank, and the file

    def as_json(self) -> dict[str, Any]:
        return {
            "rank": self.rank, "host": self.host, "origin": self.origin, "reason": self.reason,
            "lines": [{"file": f, "line": n, "text": t} for f, n, t in self.lines], "root_cause_disagrees": self.disagrees,
        }

    @property
    def who(self) -> str:
        """"rank 3 on node-1", or the origin: "SLURM array task 4 (slurm-77_4.out)"."""
        return (f"rank {self.rank}" if self.rank is not None else self.origin or "?") + (f" on {self.host}" if self.host else "")


def _span(ranks: list[int]) -> str:
    """'0-4, 6, 7' for [0, 1, 2, 3, 4, 6, 7]."""
    runs: list[list[int]] = []
    for r in sorted(set(ranks)):
        if runs and r == runs[-1][-1] + 1:
            runs[-1].append(r)
        else:
            runs.append([r])
    return ", ".join(f"{run[0]}-{run[-1]}" if len(run) > 2 else ", ".join(map(str, run)) for run in runs)


def _from_watchdog(scan: RankScanner) -> tuple[int, str, tuple[Line, ...]] | None:
    timed = {r: st for r, st in scan.ranks.items() if st.timed_out}
    if not timed:
        return None
    # Compare within the process group most ranks are stuck in (SeqNums count per group).
    groups: dict[str | None, list[int]] = {}
    for r, st in timed.items():
        groups.setdefault(st.pg, []).append(r)
    pg = max(groups, key=lambda g: (len(groups[g]), str(g)))
    stuck = {r: timed[r] for r in groups[pg]}
    seq, op = max(st.timed_out for st in stuck.values() if st.timed_out)
    waiting = [r for r, st in stuck.items() if st.timed_out and st.timed_out[0] == seq]
    where = f"{op} SeqNum {seq}" + (f" of process group {pg}" if pg is not None else "")
    lagging = sorted((r for r, st in stuck.items() if st.timed_out and st.timed_out[0] < seq), key=lambda r: (stuck[r].timed_out, r))
    if lagging:
        r = lagging[0]
        own = stuck[r].timed_out
        assert own is not None
        return r, (
            f"ranks {_span(waiting)} wait in {where}; rank {r} timed out earlier, in {own[1]} SeqNum {own[0]}: "
            "it is behind the others (a different code path or a collective it alone skipped)"
        ), tuple(stuck[r].lines)
    behind = sorted(
        (r for r, st in scan.ranks.items() if st.enqueued is not None and st.enqueued < seq and st.pg == pg and r not in waiting),
        key=lambda r: (scan.ranks[r].enqueued or 0, r),
    )
    if behind:
        r = behind[0]
        st = scan.ranks[r]
        return r, (
            f"ranks {_span(waiting)} timed out in {where}; rank {r}'s last enqueued work was {st.enqueued}: "
            "it never entered that collective"
        ), tuple(st.lines)
    # Silence convicts only when the log says how many ranks there are (NCCL's nranks, Lightning's
    # MEMBER k/N, per-rank files rank0.log ... rank7.log): a pasted excerpt often shows a few ranks'
    # lines, and the ranks left out of it did nothing wrong.
    file_ranks = {s.rank: s.name for s in scan.sources if s.rank is not None}
    expected = range(scan.world) if scan.world else range(max(file_ranks) + 1) if len(file_ranks) >= 2 else range(0)
    silent = sorted(set(expected) - set(timed))
    if silent and len(waiting) >= 2 and len(silent) <= len(waiting):
        r = silent[0]
        others = ", ".join(map(str, silent[1:]))
        why = ""
        if file_ranks and r not in file_ranks:
            why = " (no log file for it)"
        elif r in file_ranks and file_ranks[r] not in scan.seen:
            why = f" (its log file {file_ranks[r]} is empty)"
        return r, (
            f"ranks {_span(waiting)} timed out in {where}; rank {r} reported no timeout{why}: it never entered that "
            f"collective, so look at what it was doing{' (also silent: ' + others + ')' if others else ''}"
        ), ()
    # "First PG on this rank to signal dumping" is not evidence against a rank: the first to time
    # out is the first to have entered the collective, a waiter, not the one that never came.
    return None


def initiating_rank(matches: list[Match], scan: RankScanner | None = None) -> RankVerdict | None:
    """The rank the initiating failure came from, with the lines that show it, or None when the
    log does not say (a single-process log, or no rank prefixes)."""
    verdict: RankVerdict | None = None
    own_lines = True  # whether the verdict's lines are the named rank's own
    first = matches[0] if matches else None
    # Ranks whose watchdog reported, or that waited at a barrier: their lines say they were stuck,
    # not who started it.
    timed_out = {r for r, st in scan.ranks.items() if st.timed_out or st.enqueued is not None} if scan else set()
    if scan:
        timed_out |= scan.waiters
    if scan and scan.named:
        # The barrier's coordinator or Horovod's stall report names the ranks that never arrived.
        r = min(scan.named, key=lambda k: (-scan.named[k][0], k))
        others = sorted(set(scan.named) - {r})
        also = f" (also named: {_span(others)})" if others else ""
        own_lines = False
        verdict = RankVerdict(r, None, f"the log names rank {r} as the one that never reached the collective the others wait in{also}",
                              (scan.named[r][1],))
    if verdict is None and first is not None and first.role == "initiating":
        ranked = [e for e in first.evidence if e.rank is not None]
        # The watchdog's own lines come from every stuck rank: they say nothing about who started it.
        if ranked and not {e.rank for e in ranked} <= timed_out:
            ev = next(e for e in ranked if e.rank not in timed_out)  # the first (in time, for several files)
            assert ev.rank is not None
            verdict = RankVerdict(ev.rank, None, f"rank {ev.rank} printed {first.title}", ((ev.file, ev.line, ev.text),))
    if verdict is None and scan is not None and scan.blamed:
        r = min(scan.blamed, key=lambda k: (-scan.blamed[k][0], k))
        if r not in scan.waiters:
            own_lines = False
            waiting = sorted(scan.waiters)
            verdict = RankVerdict(r, None, f"rank{'s' * (len(waiting) != 1)} {_span(waiting)} reached the barrier and wait{'s' * (len(waiting) == 1)} for rank {r}, which printed no error "
                                  "of its own: look at what it was doing", (scan.blamed[r][1],))
    if verdict is None and scan is not None:
        found = _from_watchdog(scan)
        if found:
            verdict = RankVerdict(found[0], None, found[1], found[2])
    if verdict is None and scan is not None and first is not None and first.role == "initiating":
        verdict = _from_files(first, scan)
    if verdict is None:
        return None
    if verdict.rank is None:
        return verdict
    host = scan.hosts.get(verdict.rank) if scan else None
    if host is None and own_lines:
        # The rank's own NCCL line says where it runs (not so a coordinator's or a waiter's line naming it).
        host = next((m.group(1) for _, _, text in verdict.lines if (m := _LINE_HOST.search(text))), None)
    if host is None and scan:
        host = scan.file_hosts.get(verdict.rank)
    disagrees = None
    if scan and scan.root_cause:
        rank, root_host, file, line = scan.root_cause
        if host is None and rank == verdict.rank:
            host = root_host
        if rank != verdict.rank:
            at = f"{file}:{line}" if scan.sources else f"line {line}"
            disagrees = (
                f"torchrun's Root Cause ({at}) names rank {rank}, the first to exit; it exited because of "
                f"rank {verdict.rank}'s failure"
            )
    return RankVerdict(verdict.rank, host, verdict.reason, verdict.lines, disagrees)


def _from_files(first: Match, scan: RankScanner) -> RankVerdict | None:
    """Several files whose lines carry no rank: the initiating failure shows in some files only, and
    the first of them is named for what its path says (a node, a local rank, a host). Only when
    every evidence row is shown (fewer than the cap), so the files it names are all of them."""
    if not scan.sources or len(first.evidence) >= EVIDENCE_PER_ENTRY:
        return None
    labels = {s.name: s for s in scan.sources}
    files = {e.file for e in first.evidence}
    written = {s.name for s in scan.sources if s.name in scan.seen}
    ev = first.evidence[0]
    src = labels.get(ev.file)
    if src is None or src.label is None or ev.rank is not None or not files < written:
        return None
    return RankVerdict(None, src.host, f"{src.label} printed {first.title}; "
                       f"{len(written - files)} of the {len(written)} files do not show it", ((ev.file, ev.line, ev.text),),
                       origin=f"{src.label} ({src.name})")
