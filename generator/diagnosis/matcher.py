"""Diagnose: a training log → the entries whose fingerprints it shows, ranked, with evidence.

One matcher definition, two engines. The definition is `/api/fingerprints.json` (built by
`matcher_spec`); this module is the Python engine and `templates/static/diagnose-worker.js`
the browser one. Both follow the same rules, step by step:

1. Lines are split on `\\n` and numbered from 1. ANSI CSI colour codes are removed first.
   A line is matched segment by segment, split on `\\r` (progress bars redraw with `\\r`);
   only the first `MAX_LINE` characters of a segment are looked at.
2. Candidate lines come from a substring search for each pattern's required literals; the
   regex then runs on each segment of those lines only (identical to a full scan).
3. A fingerprint with `near` counts a hit only when a line within `window` lines before or
   after it matches `near`. A numeric fingerprint (`rising`, `share_above`) counts a hit only
   once its captured numbers (plain decimals) rose on `times` lines in a row, or showed a
   part/whole share of at least `share_above` on `times` lines. A metric fingerprint reads its
   quantity from any log format and checks it as metrics.py's docstring says; every numeric
   fingerprint keeps the series of its readings (metrics.Series), which a match carries.
4. An entry's score is the sum, over its fingerprints that fired, of the strength score
   (definitive 10, strong 6, supporting 2), plus 2 when the hit was confirmed by `near`.
   Entries scoring at least `MIN_SCORE` are candidates. Confidence = min(1, score / 10); its
   word (`certainty`) is "definitive" from 10 (a line names this failure outright), else
   "strong" (the log shows this failure's usual text, which other entries may share).
5. Candidates are ordered by score (desc), then first evidence line, then the length of the
   text their fingerprints matched on that line (desc: the entry that explains more of the line
   first), then slug. A candidate with the same score and first line as the one ranked just
   above it is `tied_with` that one. The initiating failure is the first candidate that no other
   candidate lists in `often_causes` (the first candidate if every one is caused by another).
   Candidates that the initiating one `often_causes` are collateral and go last; the rest keep
   their order between them.
6. Evidence is the stripped segment; one longer than `evidence_chars` is elided in the middle,
   never where the fingerprint matched: the line's head, "…", the matched text with up to
   `evidence_context` characters either side, "…" (see `elide`).

How this engine keeps to them fast (the rules decide the same; tests/test_diagnose_prefilter.py
checks it against a per-line reading of them): it works on pieces of about `PIECE` bytes cut at
line ends; one Aho-Corasick pass over a piece finds the pattern literals; a fingerprint's line
filter (`patterns.compile_line_filter`) is searched once over all its candidate lines joined by
newlines, and only the lines it may match are decoded and searched segment by segment; `near`
literals are looked for only in a piece where the fingerprint has a candidate or a pending hit,
and in the last `window` lines of every piece, where a later hit may look back. Where the
compiled loops are built (generator/core/_scan.c, `metrics.compiled`), the metric fingerprints are
read over every line of a piece in C (`metrics.read_piece`, `metrics.check`) instead of from the
literal pass, and the literal matches are grouped into lines in C (`_group_lines`);
tests/test_scan.py checks the matcher's state is the same with them and without.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import Any

from ahocorasick_rs import BytesAhoCorasick, Implementation

from ..core.metrics import FAST, Reading, Series, check, compiled, metric_rules, read, read_piece
from .rankrules import RANK_RULES
from ..core.patterns import MAX_LINE, compile_line_filter, compile_pattern, plain_number, required_literals

__all__ = ["Match", "Matcher", "diagnose_bytes", "fingerprint_item", "looks_binary", "matcher_spec", "rank_hits", "rank_of"]

MIN_SCORE = 6
NEAR_BONUS = 2
EVIDENCE_PER_FINGERPRINT = 5
EVIDENCE_PER_ENTRY = 5
PENDING_LIMIT = 20
EVIDENCE_CHARS = 300
EVIDENCE_CONTEXT = 40
CHUNK = 4 * 1024 * 1024
BINARY_PROBE = 8192  # a log's first bytes looked at for a NUL


def looks_binary(head: bytes) -> bool:
    """Whether a log's first bytes (after any gunzip) hold a NUL: a binary file, not a text log.
    Every surface that reads logs refuses such a file with this one rule."""
    return b"\x00" in head[:BINARY_PROBE]

PIECE = 1024 * 1024  # the matcher works on this much at a time
DFA_BYTES = 16 * 1024 * 1024
ANSI_PATTERN = r"\x1b\[[0-9;?]*[ -/]*[@-~]"
RANK_PATTERNS = [r"\[rank(\d{1,6})\]:", r"\[default(\d{1,6})\]:", r"^(\d{1,6}): ", r"^\[\d+,(\d{1,6})\]<std(?:out|err)>:"]

_ANSI_BYTES = re.compile(ANSI_PATTERN.encode())
_RANK_RES = [re.compile(p, re.ASCII) for p in RANK_PATTERNS]


def fingerprint_item(slug: str, index: int, fp: Any) -> dict[str, Any]:
    """One fingerprint of the matcher definition, from an entry head's fingerprint
    (validate.FingerprintHead): what `/api/fingerprints.json` lists and `failpedia verify` matches."""
    return {
        "slug": slug,
        "id": f"{slug}#{index}",
        "pattern": fp.pattern,
        "near": fp.near,
        "window": fp.window,
        "strength": fp.strength,
        "score": fp.score,
        "rising": fp.rising,
        "share_above": fp.share_above,
        "times": fp.times,
        "literals": list(fp.literals),
        "near_literals": list(fp.near_literals),
        "metric": fp.metric,
        "of": fp.of,
        "falls_to": fp.falls_to,
        "nonfinite": fp.nonfinite,
    }


def matcher_spec(fingerprints: dict[str, Any]) -> dict[str, Any]:
    """Add what both engines need to the fingerprint data: literal covers and shared rules. The
    covers of a fingerprint that carries them are kept: `pages.fingerprint_data` takes them from
    the entry heads, where validation left them (validate.FingerprintHead)."""
    fps = [
        fp if "literals" in fp else {
            **fp, "literals": required_literals(fp["pattern"]), "near_literals": required_literals(fp["near"]) if fp.get("near") else [],
        }
        for fp in fingerprints["fingerprints"]
    ]
    return {
        **fingerprints,
        "fingerprints": fps,
        "rules": {
            "min_score": MIN_SCORE,
            "near_bonus": NEAR_BONUS,
            "evidence_per_fingerprint": EVIDENCE_PER_FINGERPRINT,
            "evidence_per_entry": EVIDENCE_PER_ENTRY,
            "pending_limit": PENDING_LIMIT,
            "evidence_chars": EVIDENCE_CHARS,
            "evidence_context": EVIDENCE_CONTEXT,
            "max_line": MAX_LINE,
            "ansi": ANSI_PATTERN,
            "rank_patterns": RANK_PATTERNS,
            "ranks": RANK_RULES,
            "metrics": metric_rules(),
        },
    }


@dataclass(frozen=True)
class Evidence:
    file: str
    line: int
    rank: int | None
    text: str
    matched: str = field(default="", compare=False)  # what the fingerprint matched on the line


def elide(text: str, start: int, end: int, limit: int = EVIDENCE_CHARS, context: int = EVIDENCE_CONTEXT) -> str:
    """Rule 6: `text` in at most `limit` characters, keeping `text[start:end]` (the match) with
    up to `context` characters either side, and as much of the head as fits; cuts are marked "…"."""
    if len(text) <= limit:
        return text
    lo, hi = max(0, start - context), min(len(text), end + context)
    if hi - lo > limit - 2:  # a match longer than the room: its start
        hi = lo + limit - 2
    tail = "…" if hi < len(text) else ""
    room = limit - (hi - lo) - len(tail)
    if lo <= room:  # the head reaches the match: no gap
        hi = min(len(text), limit - len(tail)) if tail else hi
        return text[:hi] + tail
    return text[: room - 1] + "…" + text[lo:hi] + tail


@dataclass
class _FpState:
    count: int = 0
    near_confirmed: bool = False
    evidence: list[Evidence] = field(default_factory=list)
    last_near: int = -(10**12)  # the last line known to match `near`
    near_lines: deque[list[Any]] = field(default_factory=deque)  # [line, raw bytes, matched?] within the window
    pending: list[Evidence] = field(default_factory=list)
    previous: float | None = None  # numeric fingerprints: the last captured value
    streak: int = 0  # rising: lines in a row whose value rose
    good: int = 0  # share_above: lines whose share was high enough; nonfinite: finite readings
    series: Series | None = None  # numeric fingerprints: their readings


def _number(text: str | None) -> float | None:
    """A captured number, or None: only plain decimals, which both engines parse alike."""
    return float(text) if plain_number(text) else None


@dataclass(frozen=True)
class Match:
    slug: str
    title: str
    url: str
    score: int
    confidence: float
    role: str  # initiating | candidate | collateral
    evidence: tuple[Evidence, ...]
    summary: str = ""  # the entry's quick answer
    fix: str = ""  # the entry's recommended fix, in one line
    certainty: str = "strong"  # definitive | strong (rule 4)
    tied_with: str | None = None  # the slug ranked just above with the same score and first line
    series: tuple[dict[str, Any], ...] = ()  # the readings of its numeric fingerprints that fired

    def as_json(self) -> dict[str, Any]:
        return {
            "slug": self.slug,
            "title": self.title,
            "url": self.url,
            "confidence": self.confidence,
            "certainty": self.certainty,
            "role": self.role,
            "score": self.score,
            "tied_with": self.tied_with,
            "evidence": [{"file": e.file, "line": e.line, "rank": e.rank, "text": e.text, "matched": e.matched} for e in self.evidence],
            "series": list(self.series),
        }


def _segments(line: str) -> list[str]:
    """Rule 1: a line is matched segment by segment, split on carriage returns, each cut short."""
    return [s[:MAX_LINE] for s in line.split("\r")] if "\r" in line else [line[:MAX_LINE]]


def _literal_scanner(literals: dict[bytes, set[int]]) -> tuple[BytesAhoCorasick | None, list[frozenset[int]]]:
    """An Aho-Corasick automaton over the literals, and the fingerprints of each (by its index)."""
    if not literals:
        return None, []
    order = tuple(sorted(literals))
    return _automaton(order), [frozenset(literals[lit]) for lit in order]


@lru_cache(maxsize=4)
def _automaton(order: tuple[bytes, ...]) -> BytesAhoCorasick:
    """Shared by the matchers of one definition (`failpedia run` has two, the LSP one per diagnosis).
    A DFA scans fastest, but its table (states x byte classes) grows with the literals: past
    DFA_BYTES, the contiguous NFA, a little slower and far smaller."""
    table = sum(map(len, order)) * (len(set(b"".join(order))) + 1) * 4
    kind = Implementation.DFA if table <= DFA_BYTES else Implementation.ContiguousNFA
    return BytesAhoCorasick(list(order), implementation=kind)


def _tail_start(chunk: bytes, lines: int) -> int:
    """Where the last `lines` lines of `chunk` (which ends with a newline) begin."""
    pos = len(chunk) - 1
    for _ in range(lines):
        pos = chunk.rfind(b"\n", 0, pos)
        if pos < 0:
            return 0
    return pos + 1 if lines else len(chunk)


def _group_lines(chunk: bytes, matches: list[tuple[int, int, int]], max_line: int) -> tuple[dict[int, int], dict[int, bytes | None], dict[int, list[int]]]:
    """The lines that hold the literal matches (in order): each line's end (by its start), the
    line itself where a bytes filter can answer for it (ASCII, at most `max_line` bytes) or None,
    and the starts of the lines that hold each literal. The compiled reader's `group_lines` is
    this loop in C (tests/test_scan.py checks the two)."""
    ends: dict[int, int] = {}
    plain: dict[int, bytes | None] = {}
    by_literal: dict[int, list[int]] = {}
    ascii_chunk = chunk.isascii()
    start = end = -1
    for lit, pos, _ in matches:
        if not start <= pos < end:  # a new line (the matches of one line come together)
            start = chunk.rfind(b"\n", 0, pos) + 1
            end = chunk.find(b"\n", pos)
            end = ends[start] = len(chunk) if end < 0 else end
            raw = chunk[start:end] if end - start <= max_line else None
            plain[start] = raw if raw is not None and (ascii_chunk or raw.isascii()) else None
        starts = by_literal.get(lit)
        if starts is None:
            by_literal[lit] = [start]
        elif starts[-1] != start:
            starts.append(start)
    return ends, plain, by_literal


def _line_end(chunk: bytes, start: int) -> int:
    end = chunk.find(b"\n", start)
    return len(chunk) if end < 0 else end


def rank_of(line: str) -> int | None:
    head = line[:120]
    for rx in _RANK_RES:
        m = rx.search(head)
        if m:
            return int(m.group(1))
    return None


class Matcher:
    """Streaming matcher over one log: feed bytes, then `close()`. Memory stays bounded."""

    def __init__(self, spec: dict[str, Any], file: str = "-") -> None:
        self.spec = spec
        self.file = file
        self.fps = spec["fingerprints"]
        self.state = [_FpState(series=Series() if _numeric_fp(fp) else None) for fp in self.fps]
        # Regexes are compiled when a line first needs them: most fingerprints never see a candidate.
        self._patterns: list[re.Pattern[str] | None] = [None] * len(self.fps)
        self._nears: list[re.Pattern[str] | None] = [None] * len(self.fps)
        self._filters: dict[int, re.Pattern[bytes] | None] = {}
        # literal → the fingerprints it is a candidate for: their patterns, and their `near` patterns
        pattern_literals: dict[bytes, set[int]] = {}
        metric_literals: dict[bytes, set[int]] = {}
        near_literals: dict[bytes, set[int]] = {}
        # Metric fingerprints: the compiled reader (metrics.read_piece) reads every line of a
        # piece, so their spellings (on half the lines of a training log) stay out of the literal pass.
        self._metric_fps = [i for i, fp in enumerate(self.fps) if fp.get("metric")] if FAST else []
        self._requests = sorted({(self.fps[i]["metric"], self.fps[i].get("of")) for i in self._metric_fps}, key=str)
        self._checks = {i: _check_of(self.fps[i]) for i in self._metric_fps}  # metrics.check's (kind, times, limit)
        for i, fp in enumerate(self.fps):
            for lit in fp["literals"]:
                (metric_literals if i in self._metric_fps else pattern_literals).setdefault(lit.encode(), set()).add(i)
            for lit in fp["near_literals"]:
                near_literals.setdefault(lit.encode(), set()).add(i)
        # One Aho-Corasick pass (Rust) finds every literal of a piece at once; the metric
        # spellings' own pass runs only on a piece the compiled reader leaves to `read`.
        self._scanner, self._targets = _literal_scanner(pattern_literals)
        self._metric_literals = metric_literals
        self._near_scanner, self._near_targets = _literal_scanner(near_literals)
        self._metric_scanner: tuple[BytesAhoCorasick | None, list[frozenset[int]]] | None = None
        self._window = max((fp["window"] for fp in self.fps if fp.get("near")), default=0)
        self.carry = b""
        self.line_base = 0  # lines before the current chunk

    def feed(self, data: bytes) -> None:
        cut = data.rfind(b"\n")
        if cut < 0:
            self.carry += data
            if len(self.carry) > CHUNK:  # one enormous line: match what we have, keep going
                self._process(self.carry)
                self.carry = b""
            return
        start = 0
        if self.carry:  # the line left unfinished, now whole (not copied in front of all of `data`)
            start = data.find(b"\n") + 1
            self._process(self.carry + data[:start])
        self._process(data, start, cut + 1)
        self.carry = data[cut + 1 :]

    def skip(self, newlines: int, rest: bytes) -> None:
        """Count lines without matching them (the caller could not keep up with the log): the
        skipped data held `newlines` line ends, and `rest` came after its last one."""
        if newlines:
            self.line_base += newlines
            self.carry = rest[-CHUNK:]
        else:
            self.carry = (self.carry + rest)[-CHUNK:]

    def snapshot(self) -> "Matcher":
        """A copy whose state can be fed more (e.g. a log's unfinished last line) without changing
        this matcher's: the per-fingerprint state is copied, the compiled patterns shared."""
        probe = copy.copy(self)
        probe.state = [
            dataclasses.replace(
                s, evidence=list(s.evidence), pending=list(s.pending),
                near_lines=deque(list(e) for e in s.near_lines), series=s.series.copy() if s.series else None,
            )
            for s in self.state
        ]
        return probe

    def close(self) -> None:
        if self.carry:
            self._process(self.carry + b"\n")
            self.carry = b""

    def _process(self, data: bytes, at: int = 0, end: int | None = None) -> None:
        """Match the whole lines of `data[at:end]` (the last may lack its newline only for one
        enormous line), a piece of at most about `PIECE` bytes at a time, cut at line ends: the
        literal matches of a piece are held in memory, so a huge buffer (the LSP's document)
        stays cheap."""
        end = len(data) if end is None else end
        while end - at > PIECE:
            cut = data.rfind(b"\n", at, at + PIECE)
            if cut < 0:
                cut = data.find(b"\n", at + PIECE, end)
                if cut < 0:
                    break
            self._piece(data[at : cut + 1])
            at = cut + 1
        if at < end:
            self._piece(data if at == 0 and end == len(data) else data[at:end])

    def _piece(self, chunk: bytes) -> None:
        if b"\x1b" in chunk:
            chunk = _ANSI_BYTES.sub(b"", chunk)
        candidates = self._pattern_lines(chunk, self._scanner, self._targets)
        fired = self._metric_piece(chunk, candidates) if self._metric_fps else []
        near = self._near_lines(chunk, candidates, {i for _, i in fired}) if self._near_scanner else []
        # Lines in order; on one line the `near` candidates come first (rule 3).
        events: list[tuple[int, int, int, Any]] = sorted(
            [(start, 0, end, fps) for start, end, fps in near] + [(start, 1, end, fps) for start, end, fps in candidates]
            + [(start, 2, _line_end(chunk, start), (i,)) for start, i in fired]
        )
        line_no = self.line_base
        prev = 0
        for start, kind, end, fps in events:
            line_no += chunk.count(b"\n", prev, start)
            prev = start
            raw = chunk[start:end]
            if kind == 0:
                for i in sorted(fps):
                    self._near_candidate(i, line_no + 1, raw)
            elif kind == 1:
                self._match_line(line_no + 1, raw.decode("utf-8", "replace"), fps)
            else:
                self._metric_fired(fps[0], line_no + 1, raw.decode("utf-8", "replace"))
        self.line_base = line_no + chunk.count(b"\n", prev)

    def _metric_piece(self, chunk: bytes, candidates: list[tuple[int, int, set[int]]]) -> list[tuple[int, int]]:
        """The metric fingerprints over a piece, with the compiled reader: every reading goes into
        its fingerprint's series and check (the same as `_metric` and `_numeric` line by line);
        what comes back is where each fired, (line start, fingerprint), for
        `_metric_fired` to make the evidence in line order. A piece the reader leaves to Python
        adds its metric lines to `candidates` instead."""
        got = read_piece(chunk, self._requests, MAX_LINE)
        if got is None:
            if self._metric_scanner is None:
                self._metric_scanner = _literal_scanner(self._metric_literals)
            extra = self._pattern_lines(chunk, *self._metric_scanner)
            merged: dict[int, tuple[int, int, set[int]]] = {s: (s, e, set(f)) for s, e, f in candidates}
            for s, e, f in extra:
                merged[s] = (s, e, merged[s][2] | f) if s in merged else (s, e, f)
            candidates[:] = [merged[s] for s in sorted(merged)]
            return []
        by_request = dict(zip(self._requests, got))
        fired: list[tuple[int, int]] = []
        for i in self._metric_fps:
            fp, st = self.fps[i], self.state[i]
            lines, starts, values = by_request[fp["metric"], fp.get("of")]
            if not lines:
                continue
            assert st.series is not None
            base = self.line_base + 1  # line numbers count from 1
            st.series.extend(lines, values, base)
            st.previous, st.streak, st.good, hits = check(*self._checks[i], st.previous, st.streak, st.good, values)
            for k in hits:
                v = values[k]
                st.series.fire(base + lines[k], None if v != v else v, EVIDENCE_PER_FINGERPRINT)
                fired.append((starts[k], i))
        return fired

    def _metric_fired(self, i: int, number: int, line: str) -> None:
        """A metric fingerprint fired on this line (`_metric_piece`): its hit, with the evidence
        `_metric` would make (the reading of the first segment that has one)."""
        fp, st = self.fps[i], self.state[i]
        if not fp.get("near") and len(st.evidence) >= EVIDENCE_PER_FINGERPRINT:
            st.count += 1  # all `_confirm` would do: the evidence is full
            return
        for segment in _segments(line):
            got = read(fp["metric"], segment)
            if got is not None:
                self._hit(i, self._evidence(number, line, segment, got.start, got.end))
                return

    def _pattern_lines(self, chunk: bytes, scanner: BytesAhoCorasick | None, targets: list[frozenset[int]]) -> list[tuple[int, int, set[int]]]:
        """Rule 2: the lines of `chunk` that hold a pattern's literal, each with the fingerprints
        to test on it, less those that a fingerprint's line filter rules out (`_filtered`)."""
        if scanner is None:
            return []
        matches = scanner.find_matches_as_indexes(chunk, overlapping=True)
        ends, plain, by_literal = (compiled.group_lines if compiled is not None else _group_lines)(chunk, matches, MAX_LINE)
        by_fp: dict[int, list[list[int]]] = {}
        for lit, starts in by_literal.items():
            for i in targets[lit]:
                by_fp.setdefault(i, []).append(starts)
        lines: dict[int, set[int]] = {}
        for i, groups in by_fp.items():
            starts = groups[0] if len(groups) == 1 else sorted(set().union(*groups))
            for s in self._filtered(i, starts, plain):
                fps = lines.get(s)
                if fps is None:
                    lines[s] = {i}
                else:
                    fps.add(i)
        return [(s, ends[s], lines[s]) for s in sorted(lines)]

    def _filtered(self, i: int, starts: list[int], plain: dict[int, bytes | None]) -> list[int]:
        """The lines (by start, in no order) on which fingerprint `i`'s pattern may match. Its line
        filter (`compile_line_filter`) answers for ASCII lines of at most MAX_LINE bytes, all of
        them at once: one search over those lines joined by newlines finds the first line it may
        match, or shows that it matches none (a match within one line is one in the joined text)."""
        rx = self._filter(i)
        if rx is None:
            return starts
        tested = [s for s in starts if plain[s] is not None]
        keep = [s for s in starts if plain[s] is None] if len(tested) < len(starts) else []
        joined = b"\n".join([plain[s] or b"" for s in tested])
        at = index = 0
        while (m := rx.search(joined, at)) is not None:
            index += joined.count(b"\n", at, m.start())
            keep.append(tested[index])  # the line where the match starts: the exact test decides
            at = joined.find(b"\n", m.start()) + 1
            if not at:
                break
            index += 1
        return keep

    def _near_lines(self, chunk: bytes, candidates: list[tuple[int, int, set[int]]], hits: set[int]) -> list[tuple[int, int, set[int]]]:
        """The lines of `chunk` that hold a `near` literal and can matter (rule 3): for a
        fingerprint with a pending hit, a candidate line or a hit (`hits`) in this piece, all of
        them; for the others, those of the last `window` lines only, where a later hit may look back."""
        # A pending hit older than its window can no longer be confirmed.
        active = {i for i, st in enumerate(self.state) if st.pending and st.pending[-1].line + self.fps[i]["window"] > self.line_base}
        active.update(i for i in hits if self.fps[i].get("near"))
        for _, _, line_fps in candidates:
            active.update(i for i in line_fps if self.fps[i].get("near"))
        tail = _tail_start(chunk, self._window)
        assert self._near_scanner is not None
        scan = chunk if active else chunk[tail:]
        base = 0 if active else tail
        out: list[tuple[int, int, set[int]]] = []
        start = end = -1
        fps: set[int] = set()
        targets = self._near_targets
        for lit, pos, _ in self._near_scanner.find_matches_as_indexes(scan, overlapping=True):
            pos += base
            if start <= pos < end:
                fps |= targets[lit]
                continue
            if fps:
                out.append((start, end, fps))
            start = chunk.rfind(b"\n", 0, pos) + 1
            end = chunk.find(b"\n", pos)
            end = len(chunk) if end < 0 else end
            fps = set(targets[lit])
            if start < tail:
                fps &= active
        if fps:
            out.append((start, end, fps))
        return [line for line in out if line[2]]

    def _pattern(self, i: int) -> re.Pattern[str]:
        rx = self._patterns[i]
        if rx is None:
            rx = self._patterns[i] = compile_pattern(self.fps[i]["pattern"])
        return rx

    def _near_pattern(self, i: int) -> re.Pattern[str] | None:
        rx = self._nears[i]
        if rx is None and self.fps[i].get("near"):
            rx = self._nears[i] = compile_pattern(self.fps[i]["near"])
        return rx

    def _filter(self, i: int) -> re.Pattern[bytes] | None:
        """The line filter of a pattern; none for a metric fingerprint: metrics.read decides it,
        with patterns outside the checked subset (lookarounds) that the filter is not made for."""
        if i not in self._filters:
            fp = self.fps[i]
            self._filters[i] = None if fp.get("metric") else compile_line_filter(fp["pattern"])
        return self._filters[i]

    def _match_line(self, number: int, line: str, fps: set[int]) -> None:
        segments = _segments(line)
        readings: dict[tuple[str, int], Reading | None] = {}  # a line's readings, shared by its metric fingerprints
        for i in sorted(fps) if len(fps) > 1 else fps:
            fp = self.fps[i]
            if fp.get("metric"):
                self._metric(i, number, line, segments, readings)
                continue
            rx = self._pattern(i)
            for segment in segments:
                if found := rx.search(segment):
                    break
            else:
                continue
            ev = self._evidence(number, line, found.string, found.start(), found.end())
            if fp.get("rising") or fp.get("share_above"):
                found_ev: Callable[[], Evidence] = partial(_same, ev)
                groups = found.groups()
                first = _number(groups[0] if groups else None)
                if fp.get("rising"):
                    if first is not None:
                        self._numeric(i, number, first, True, found_ev)
                else:
                    part = _number(groups[1] if len(groups) > 1 else None)
                    if first is not None and part is not None and first > 0:
                        self._numeric(i, number, part / first, True, found_ev)
            else:
                self._hit(i, ev)

    def _evidence(self, number: int, line: str, segment: str, start: int, end: int) -> Evidence:
        lead = len(segment) - len(segment.lstrip())
        text = segment.strip()
        start, end = max(0, start - lead), min(len(text), end - lead)
        return Evidence(self.file, number, rank_of(line), elide(text, start, end), text[start:end])

    def _metric(self, i: int, number: int, line: str, segments: list[str], readings: dict[tuple[str, int], Reading | None]) -> None:
        """A metric fingerprint: the reading of the first segment that has one (metrics.read)."""
        fp = self.fps[i]
        name = fp["metric"]
        for k, segment in enumerate(segments):
            got = readings[name, k] if (name, k) in readings else readings.setdefault((name, k), read(name, segment))
            if got is None:
                continue
            # built only when it fires
            evidence = partial(self._evidence, number, line, segment, got.start, got.end)
            of = fp.get("of")
            if of:
                whole = readings[of, k] if (of, k) in readings else readings.setdefault((of, k), read(of, segment))
                if got.value is not None and whole is not None and whole.value is not None and whole.value > 0:
                    self._numeric(i, number, got.value / whole.value, True, evidence)
            else:
                self._numeric(i, number, got.value, got.value is not None, evidence)
            return

    def _numeric(self, i: int, number: int, value: float | None, finite: bool, evidence: Callable[[], Evidence]) -> None:
        """Rule 3b: a numeric fingerprint fires once its readings behave as declared. `value` is
        the reading on line `number` (share_above: the share), None when it is not finite."""
        fp, st = self.fps[i], self.state[i]
        assert st.series is not None
        st.series.add(number, value)
        fired = False
        if fp.get("nonfinite"):
            if finite:
                st.good += 1
            fired = not finite and st.good > 0
        elif value is None:
            return
        elif fp.get("rising"):
            st.streak = st.streak + 1 if st.previous is not None and value > st.previous else 1
            st.previous = value
            fired = st.streak >= fp["times"]
        elif fp.get("falls_to") is not None:
            if st.previous is not None and value < st.previous:
                st.streak += 1
            st.previous = value
            fired = st.streak >= fp["times"] and value <= fp["falls_to"]
        elif value >= fp["share_above"]:
            st.good += 1
            fired = st.good >= fp["times"]
        if fired:
            st.series.fire(number, value, EVIDENCE_PER_FINGERPRINT)
            self._hit(i, evidence())  # a metric fingerprint may still need its `near`

    def _near_candidate(self, i: int, number: int, raw: bytes) -> None:
        """A line that holds one of `near`'s literals. Its regex runs only when a hit needs it:
        now if hits are pending, else when a later hit looks back (most lines never need it)."""
        st = self.state[i]
        window = self.fps[i]["window"]
        while st.near_lines and st.near_lines[0][0] < number - window:
            st.near_lines.popleft()
        entry = [number, raw, None]
        st.near_lines.append(entry)
        if st.pending and self._near_matches(i, entry):
            self._near(i, number)

    def _near_matches(self, i: int, entry: list[Any]) -> bool:
        if entry[2] is None:
            rx = self._near_pattern(i)
            entry[2] = rx is not None and any(rx.search(s) for s in _segments(entry[1].decode("utf-8", "replace")))
            if entry[2]:
                self.state[i].last_near = max(self.state[i].last_near, entry[0])
        return bool(entry[2])

    def _near_before(self, i: int, number: int) -> bool:
        """Whether a line within the window before `number` (or `number` itself) matches `near`."""
        st = self.state[i]
        window = self.fps[i]["window"]
        if number - st.last_near <= window:
            return True
        for entry in reversed(st.near_lines):
            if entry[0] < number - window:
                break
            if entry[0] <= number and self._near_matches(i, entry):
                return True
        return False

    def _near(self, i: int, number: int) -> None:
        st = self.state[i]
        st.last_near = max(st.last_near, number)
        window = self.fps[i]["window"]
        for ev in st.pending:
            if ev.line >= number - window:
                self._confirm(i, ev, near=True)
        st.pending.clear()

    def _hit(self, i: int, ev: Evidence) -> None:
        fp = self.fps[i]
        st = self.state[i]
        if not fp.get("near"):
            self._confirm(i, ev, near=False)
        elif self._near_before(i, ev.line):
            self._confirm(i, ev, near=True)
        else:
            st.pending = [p for p in st.pending if p.line >= ev.line - fp["window"]]
            if len(st.pending) < PENDING_LIMIT:
                st.pending.append(ev)

    def _confirm(self, i: int, ev: Evidence, near: bool) -> None:
        st = self.state[i]
        st.count += 1
        st.near_confirmed = st.near_confirmed or near
        if len(st.evidence) < EVIDENCE_PER_FINGERPRINT and ev not in st.evidence:
            st.evidence.append(ev)


def rank_hits(spec: dict[str, Any], matchers: Iterable[Matcher], base_url: str = "") -> list[Match]:
    """Combine the hits of one or more logs into the ranked list of matches (rules 4 and 5)."""
    fps = spec["fingerprints"]
    matchers = list(matchers)
    fired = [False] * len(fps)
    near = [False] * len(fps)
    evidence: dict[str, list[tuple[int, Evidence]]] = {}
    series: dict[str, list[dict[str, Any]]] = {}
    for m_index, m in enumerate(matchers):
        for i, st in enumerate(m.state):
            if st.count:
                fired[i] = True
                near[i] = near[i] or st.near_confirmed
                evidence.setdefault(fps[i]["slug"], []).extend((m_index, e) for e in st.evidence)
                if st.series is not None:
                    series.setdefault(fps[i]["slug"], []).append(_series_json(fps[i], m.file, st.series))
    score: dict[str, int] = {}
    for i, fp in enumerate(fps):
        if fired[i]:
            score[fp["slug"]] = score.get(fp["slug"], 0) + fp["score"] + (NEAR_BONUS if near[i] else 0)
    candidates = []
    for slug, total in score.items():
        if total < MIN_SCORE:
            continue
        rows = _rows(evidence[slug])
        first = min(rows)
        reach = rows[first].matched  # what the entry's fingerprints matched on its first line (rule 5)
        shown_rows = sorted(rows.items())[:EVIDENCE_PER_ENTRY]
        candidates.append((slug, total, [(k[0], e) for k, e in shown_rows], first, reach))
    candidates.sort(key=lambda c: (-c[1], c[3], -len(c[4]), c[0]))
    entries = spec["entries"]
    slugs = [c[0] for c in candidates]
    caused = {t for c in slugs for t in entries[c]["often_causes"] if t != c}
    initiating = next((c for c in slugs if c not in caused), slugs[0] if slugs else None)
    collateral = set(entries[initiating]["often_causes"]) if initiating else set()
    out: list[Match] = []
    for n, (slug, total, evs, first, _reach) in enumerate(candidates):
        role = "initiating" if slug == initiating else "collateral" if slug in collateral else "candidate"
        above = candidates[n - 1] if n else None
        tied = above[0] if above is not None and above[1] == total and above[3] == first else None
        e = entries[slug]
        out.append(Match(
            slug, e["title"], base_url + e["url"], total, round(min(1.0, total / 10), 2), role, tuple(x[1] for x in evs),
            summary=e.get("summary", ""), fix=e.get("fix", ""), certainty="definitive" if total >= 10 else "strong", tied_with=tied,
            series=tuple(series.get(slug, ())),
        ))
    role_order = {"initiating": 0, "candidate": 1, "collateral": 2}
    out.sort(key=lambda m: role_order[m.role])  # stable: score order stays within a role
    return out


def _same(ev: Evidence) -> Evidence:
    return ev


def _check_of(fp: dict[str, Any]) -> tuple[str, int, float]:
    """A metric fingerprint's check as metrics.check takes it: the kind `_numeric` tells apart,
    its `times` and its threshold."""
    if fp.get("nonfinite"):
        return "nonfinite", 0, 0.0
    if fp.get("rising"):
        return "rising", fp["times"], 0.0
    if fp.get("falls_to") is not None:
        return "falls_to", fp["times"], float(fp["falls_to"])
    return "share_above", fp["times"], float(fp["share_above"])


def _numeric_fp(fp: dict[str, Any]) -> bool:
    return bool(fp.get("rising") or fp.get("share_above") or fp.get("falls_to") is not None or fp.get("nonfinite"))


def _series_json(fp: dict[str, Any], file: str, s: Series) -> dict[str, Any]:
    """A fired numeric fingerprint's readings, as a match carries them (both engines alike)."""
    check = next(c for c in ("rising", "share_above", "falls_to", "nonfinite") if fp.get(c) is not None and fp.get(c) is not False)
    metric = fp.get("metric") or "value"
    return {
        "fingerprint": fp["id"], "file": file, "check": check,
        "metric": f"{metric} / {fp['of']}" if fp.get("of") else metric,
        "readings": s.seen, "points": [list(p) for p in s.points], "fired": [list(p) for p in s.fired],
    }


def _best(a: Evidence, b: Evidence) -> Evidence:
    """Of two rows of one line, the one whose fingerprint matched more of it."""
    return a if (len(a.matched), a.matched, a.text) >= (len(b.matched), b.matched, b.text) else b


def _rows(evidence: list[tuple[int, Evidence]]) -> dict[tuple[int, int], Evidence]:
    """One evidence row per (log, line): the one that matched the most of it."""
    rows: dict[tuple[int, int], Evidence] = {}
    for m, e in evidence:
        key = (m, e.line)
        rows[key] = _best(rows[key], e) if key in rows else e
    return rows


def diagnose_bytes(spec: dict[str, Any], data: bytes, file: str = "-") -> list[Match]:
    """Convenience for tests and tools: one in-memory log → ranked matches."""
    m = Matcher(spec, file)
    m.feed(data)
    m.close()
    return rank_hits(spec, [m])
