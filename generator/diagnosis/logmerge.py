"""Several log files (one per rank or node) → one log in time order, each line with its origin.

The rules are data (`rankrules.MERGE_RULES`), shared with the browser engine
(`templates/static/diagnose-merge.js`), which follows them step by step:

1. Files are ordered naturally by path (`rank2.log` before `rank10.log`): digit runs compare as
   numbers.
2. A file's rank, node or host comes from its path (`paths`, the first rule that matches), used
   for its lines that carry no rank prefix of their own.
3. A line's time is the first timestamp (`timestamps`) in its first `stamp_chars` characters, as
   a number of microseconds (month, day, time; no year). A line without one takes the time of
   the last stamped line before it in its file (lines before a file's first stamp: -1), so it stays
   after that line.
4. The merge repeatedly takes, of the files' next lines, the one with the smallest (time, file
   order): files without timestamps are concatenated in file order; a file's own line order is
   never changed. One line of each file is held at a time, so memory is bounded by the number of
   files, not their length; line numbers are each file's own.

`MergedLog` feeds the merged lines to one `matcher.Matcher`, in chunks, as if they were one
log, and to one `ranks.RankScanner`, each line with its file. After each chunk it notes, for the
evidence the matcher holds (kept or waiting for `near`), the file and line its merged line came
from (a few hundred lines at most), so the matcher itself needs no change.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from .matcher import CHUNK, Evidence, Match, Matcher, rank_hits
from .rankrules import MERGE_RULES
from .ranks import LogSource, RankScanner, RankVerdict, initiating_rank

__all__ = ["MERGED", "LogSource", "MergedLog", "diagnose_files", "identify", "merged_lines", "natural_key", "stamp"]

_M = MERGE_RULES
_STAMP = re.compile("|".join(f"(?:{p})" for p in _M["timestamps"]), re.ASCII)
_GROUPS = 6  # each timestamp pattern: month, day, hour, minute, second, fraction
_MONTHS = {name: n + 1 for n, name in enumerate(_M["months"])}
_PATHS = [(rule, re.compile(rule["pattern"], re.ASCII)) for rule in _M["paths"]]
STAMP_CHARS = _M["stamp_chars"]
MAX_FILES = _M["max_files"]
SKIP_NAMES = re.compile(_M["skip_names"], re.ASCII | re.IGNORECASE)
_DIGITS = re.compile(r"(\d+)", re.ASCII)
BATCH_LINES = 65_536  # merged lines per chunk fed to the matcher
MERGED = "merged"  # the file name the matcher knows the merged log by


def identify(name: str) -> LogSource:
    """Rule 2: the file's rank, node or host from its path."""
    path = name.replace("\\", "/")
    for rule, rx in _PATHS:
        m = rx.search(path)
        if m:
            value = m.group(1)
            if rule["kind"] == "host":
                return LogSource(name, None, f"{rule['label']} {value}", value)
            number = int(value)
            return LogSource(name, number if rule["kind"] == "rank" else None, f"{rule['label']} {number}")
    return LogSource(name)


def natural_key(name: str) -> tuple[tuple[int, str], ...]:
    """Rule 1: digit runs compare as numbers, the rest as text."""
    return tuple((int(part), "") if n % 2 else (-1, part) for n, part in enumerate(_DIGITS.split(name)))


def stamp(head: str) -> int | None:
    """Rule 3: the first timestamp of a line's head, in microseconds from 1 January (31-day months)."""
    m = _STAMP.search(head[:STAMP_CHARS])
    if m is None:
        return None
    k = (m.lastindex or 1) - 1 - ((m.lastindex or 1) - 1) % _GROUPS  # the alternative that matched: its last group
    month, day, hour, minute, second, frac = m.groups()[k : k + _GROUPS]
    mon = _MONTHS[month] if month in _MONTHS else int(month)
    micros = int((frac or "").ljust(6, "0")[:6])
    return ((((mon - 1) * 31 + int(day) - 1) * 24 + int(hour)) * 60 + int(minute)) * 60 * 1_000_000 + int(second) * 1_000_000 + micros


def _lines(chunks: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    """(line number, line without its "\\n"); a line longer than CHUNK comes in pieces of one number,
    as `Matcher.feed` reads it."""
    carry = b""
    number = 0
    for data in chunks:
        buf = carry + data if carry else data
        start = 0
        while (end := buf.find(b"\n", start)) >= 0:
            number += 1
            yield number, buf[start:end]
            start = end + 1
        carry = buf[start:]
        while len(carry) > CHUNK:
            yield number + 1, carry[:CHUNK]
            carry = carry[CHUNK:]
    if carry:
        yield number + 1, carry


def merged_lines(sources: Sequence[Iterable[bytes]]) -> Iterator[tuple[int, int, bytes]]:
    """Rule 4: (source index, line number, line) of every source's lines, merged in time order.
    Each source is an iterable of byte chunks; the sources must already be in file order."""
    iters = [_lines(chunks) for chunks in sources]
    times = [-1] * len(iters)
    heap: list[tuple[int, int, int, bytes]] = []

    def timed(i: int, line: bytes) -> int:
        t = stamp(line[: STAMP_CHARS * 4].decode("utf-8", "replace"))
        if t is not None:
            times[i] = t
        return times[i]

    for i, it in enumerate(iters):
        for number, line in it:
            heap.append((timed(i, line), i, number, line))
            break
    heapq.heapify(heap)
    while heap:
        _, i, number, line = heapq.heappop(heap)
        yield i, number, line
        if not heap:  # the last file left: the rest of it in its order, no times needed
            for number, line in iters[i]:
                yield i, number, line
            return
        # The same file goes on while its next line comes before every other file's next one
        # (what the heap would give next anyway), without a push and a pop per line.
        for number, line in iters[i]:
            t = timed(i, line)
            if (t, i) < heap[0][:2]:
                yield i, number, line
                continue
            heapq.heappush(heap, (t, i, number, line))
            break


class MergedLog:
    """The merged lines of several files → one Matcher and one RankScanner; `result()` gives the
    ranked matches with each evidence line at its own file and line, and the initiating rank."""

    def __init__(self, spec: dict[str, Any], sources: Sequence[LogSource]) -> None:
        self.spec = spec
        self.sources = list(sources)
        self.matcher = Matcher(spec, MERGED)
        self.scanner = RankScanner(sources=self.sources)
        self._batch: list[bytes] = []
        self._where: list[tuple[int, int]] = []  # (source, line) of each line in the batch
        self._base = 0  # merged lines before the batch
        self._bytes = 0
        self._origins: dict[int, tuple[int, int]] = {}  # merged line of held evidence -> (source, line)

    def feed(self, index: int, number: int, line: bytes) -> None:
        self._batch.append(line)
        self._where.append((index, number))
        self._bytes += len(line) + 1
        if len(self._batch) >= BATCH_LINES or self._bytes >= CHUNK:
            self._flush()

    def _flush(self) -> None:
        if self._batch:
            chunk = b"\n".join(self._batch) + b"\n"
            self.matcher.feed(chunk)
            self._note_origins()
            self.scanner.feed_merged(chunk, self._batch, self._where, self.sources)
            self._base += len(self._batch)
        self._batch, self._where, self._bytes = [], [], 0

    def _note_origins(self) -> None:
        """The file and line of every evidence line the matcher holds (its lines number the merged
        log); those of evidence it dropped are dropped too, so this stays as small as the evidence."""
        lo, hi = self._base, self._base + len(self._batch)
        held: dict[int, tuple[int, int]] = {}
        for st in self.matcher.state:
            lines = [e.line for e in itertools.chain(st.evidence, st.pending)]
            if st.series is not None:  # a numeric fingerprint's readings (bounded: metrics.SERIES_CAP)
                lines += [p[0] for p in itertools.chain(st.series.points, st.series.fired)]
            for n in lines:
                if n in self._origins:
                    held[n] = self._origins[n]
                elif lo < n <= hi:
                    held[n] = self._where[n - lo - 1]
        self._origins = held

    def close(self) -> None:
        self._flush()  # every batch ends with its line's end: the matcher keeps nothing back to close
        self.matcher.close()
        self.scanner.close()

    def result(self, base_url: str = "") -> tuple[list[Match], RankVerdict | None]:
        def located(e: Evidence) -> Evidence:
            i, line = self._origins[e.line]
            src = self.sources[i]
            return dataclasses.replace(e, file=src.name, line=line, rank=e.rank if e.rank is not None else src.rank)

        def placed(s: dict[str, Any]) -> dict[str, Any]:
            """A series read from one file is told in that file's lines; one that spans several
            keeps the merged log's line numbers (and its file stays "merged")."""
            where = [self._origins[p[0]] for p in itertools.chain(s["points"], s["fired"])]
            if len({i for i, _ in where}) != 1:
                return s
            lines = iter(line for _, line in where)
            return {**s, "file": self.sources[where[0][0]].name,
                    "points": [[next(lines), p[1]] for p in s["points"]], "fired": [[next(lines), p[1]] for p in s["fired"]]}

        matches = [dataclasses.replace(m, evidence=tuple(map(located, m.evidence)), series=tuple(map(placed, m.series)))
                   for m in rank_hits(self.spec, [self.matcher], base_url)]
        return matches, initiating_rank(matches, self.scanner)


def diagnose_files(spec: dict[str, Any], files: Sequence[tuple[str, bytes]], base_url: str = "",
                   chunk: int = CHUNK) -> tuple[list[Match], RankVerdict | None, list[LogSource]]:
    """Convenience for tests and tools: several in-memory logs (name, bytes) → ranked matches, the
    initiating rank and each file's identity, as `failpedia diagnose` gives for the files."""
    order = sorted(files, key=lambda f: natural_key(f[0]))
    sources = [identify(name) for name, _ in order]
    log = MergedLog(spec, sources)
    for i, number, line in merged_lines([[data[k : k + chunk] for k in range(0, len(data), chunk)] for _, data in order]):
        log.feed(i, number, line)
    log.close()
    matches, verdict = log.result(base_url)
    return matches, verdict, sources
