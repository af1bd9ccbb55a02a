"""The Python engine's fast paths (pieces cut at line ends, one literal pass per piece, the line
filters tried on many lines at once, `near` lines read only where a hit can use them) decide
exactly what the per-line rules of generator/diagnosis/matcher.py decide. A plain per-line reading of those
rules, here, is the reference, on adversarial logs fed in every way a caller feeds them."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import generator.diagnosis.matcher as diagnose
from generator.diagnosis.matcher import Matcher, matcher_spec
from generator.core.patterns import MAX_LINE, check_pattern, compile_line_filter, compile_pattern

# Patterns whose line filter must not be fooled: anchors next to \r and at cut ends, \b, classes
# and \s that could run across a \r or a newline, '.' over non-ASCII characters, a numeric one.
FINGERPRINTS = [
    {"pattern": r"^CUDA out of memory"},
    {"pattern": r"out of memory\.?$"},
    {"pattern": r"\bNCCL error\b"},
    {"pattern": r"Watchdog caught\s+collective"},
    {"pattern": r"Watchdog caught[^x]{0,6}timeout"},
    {"pattern": r"loss: .{1,3} nan"},
    {"pattern": r"Reducer::prepare", "near": r"allreduce\b", "window": 3},
    {"pattern": r"out of memory", "near": r"^\[rank\d\]: NCCL", "window": 2},
    {"pattern": r"allocate (\d+\.\d+) GiB", "rising": True, "times": 3},
    {"pattern": r"used (\d+) of (\d+) GiB", "share_above": 0.9, "times": 2},
]
PARTS = [
    "", " ", "x", "\r", "\n", "\r\n", "\x1b[31m", "\x1b[0m", "é", "\ufffd", "[rank2]: ", "CUDA out of memory", " out of memory", ".",
    "NCCL", " NCCL error", "error ", "Watchdog caught", " collective", "\t", "timeout", "loss: ", " nan", "Reducer::prepare",
    "allreduce", "allreduce_", "allocate ", "1.5", "2.25", "9.0", " GiB", "used 95 of 100 GiB", "[rank1]: NCCL", "x" * (MAX_LINE - 12),
]


def spec() -> dict:
    fps = []
    for k, fp in enumerate(FINGERPRINTS):
        assert check_pattern(fp["pattern"]) is None and (not fp.get("near") or check_pattern(fp["near"]) is None)
        fps.append({"slug": f"e{k}", "id": f"e{k}#0", "near": None, "window": 40, "strength": "strong", "score": 6, "rising": False,
                    "share_above": None, "times": 5, **fp})
    entries = {f"e{k}": {"title": f"e{k}", "url": f"e{k}/", "often_causes": []} for k in range(len(fps))}
    return matcher_spec({"version": 1, "flags": "", "fingerprints": fps, "entries": entries})


SPEC = spec()
ANSI = re.compile(diagnose.ANSI_PATTERN.encode())


def reference(data: bytes) -> list[tuple[int, list[int], bool]]:
    """Per fingerprint: (confirmed hits, the lines of the first five, confirmed by `near`), read
    line by line straight from the rules."""
    raw_lines = ANSI.sub(b"", data).split(b"\n")
    if raw_lines[-1] == b"":
        raw_lines.pop()
    segments = [[s[:MAX_LINE] for s in raw.decode("utf-8", "replace").split("\r")] for raw in raw_lines]

    def first(rx: re.Pattern[str], segs: list[str]) -> re.Match[str] | None:
        return next((m for m in map(rx.search, segs) if m), None)

    out = []
    for fp in SPEC["fingerprints"]:
        rx = compile_pattern(fp["pattern"])
        hits = [(n, m) for n, segs in enumerate(segments, 1) if (m := first(rx, segs))]
        near_lines = [n for n, segs in enumerate(segments, 1) if fp["near"] and first(compile_pattern(fp["near"]), segs)]
        confirmed: list[int] = []
        by_near = False
        previous, streak, good = None, 0, 0
        for n, m in hits:
            if fp["rising"]:
                value = float(m.group(1))
                streak = streak + 1 if previous is not None and value > previous else 1
                previous = value
                if streak >= fp["times"]:
                    confirmed.append(n)
            elif fp["share_above"]:
                whole, part = float(m.group(1)), float(m.group(2))
                good += whole > 0 and part / whole >= fp["share_above"]
                if good >= fp["times"]:
                    confirmed.append(n)
            elif not fp["near"]:
                confirmed.append(n)
            elif any(abs(n - k) <= fp["window"] for k in near_lines):
                confirmed.append(n)
                by_near = True
        out.append((len(confirmed), confirmed[:5], by_near))
    return out


def matched(feeds: list[bytes]) -> list[tuple[int, list[int], bool]]:
    m = Matcher(SPEC, "log")
    for data in feeds:
        m.feed(data)
    m.close()
    return [(s.count, [e.line for e in s.evidence], s.near_confirmed) for s in m.state]


def check(data: bytes, seed: int) -> None:
    expected = reference(data)
    assert matched([data]) == expected
    rnd = random.Random(seed)
    cuts = sorted(rnd.sample(range(1, len(data)), min(len(data) - 1, 6))) if len(data) > 1 else []
    assert matched([data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)])]) == expected  # reads cut anywhere
    assert matched([data[k : k + 1] for k in range(len(data))] if len(data) < 400 else [data]) == expected


@pytest.fixture(autouse=True)
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pieces of a few lines, so that logs of a few lines cross many piece ends (and their tails)."""
    monkeypatch.setattr(diagnose, "PIECE", 48)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(PARTS), max_size=30), st.integers(0, 2**16))
def test_the_fast_paths_decide_what_the_per_line_rules_decide(parts: list[str], seed: int) -> None:
    data = "".join(parts).encode()
    if b"\xef\xbf\xbd" in data:  # stands for bytes that are not UTF-8
        data = data.replace(b"\xef\xbf\xbd", b"\xff\xc3")
    check(data, seed)


@pytest.mark.parametrize("data", [
    # a matching line cut at MAX_LINE: '$' holds at the cut, so the whole line must get the exact test
    b"y" * (MAX_LINE - len("out of memory")) + b"out of memory and more\n",
    b"y" * (MAX_LINE + 10) + b" CUDA out of memory\n" + b"\r" * 50 + b"CUDA out of memory",
    # a literal in the last line, which has no newline; CRLF line ends; progress bars redrawn with \r
    b"ok\r\nWatchdog caught \r\n collective\r\n" + b"Reducer::prepare\r\n" * 3 + b"allreduce\r\nallocate 1.0 GiB\rallocate 2.0 GiB",
    b"".join(b"step %d allocate %d.5 GiB\r\n" % (k, k) for k in range(8)) + b"\xffallocate 9.5 GiB\xfe",
    # near lines before, after and out of the window of hits, across many pieces
    b"\n".join([b"allreduce", b"x", b"x", b"Reducer::prepare", b"x" * 60, b"x", b"x", b"x", b"Reducer::prepare", b"x", b"allreduce"]),
    # a near line exactly `window` lines before a hit, the first line of a piece's tail (PIECE 48)
    b"allreduce " + b"p" * 20 + b"\n" + b"x" * 7 + b"\n" + b"x" * 7 + b"\n" + b"Reducer::prepare\n",
    b"[rank1]: NCCL\n" + b"pad\n" * 30 + b"out of memory\n" * 3 + b"pad\n" + b"[rank1]: NCCL\n",
])
def test_adversarial_logs(data: bytes) -> None:
    check(data, 1)


def test_the_line_filter_finds_every_line_the_pattern_matches_among_joined_lines() -> None:
    """`_filtered` tries a fingerprint's filter on many ASCII lines joined by newlines: searched
    from a line's start, it must find a match that starts within that line whenever the pattern
    matches one of the line's segments (whatever the lines around it)."""
    lines = [b"CUDA out of memory", b"x\rCUDA out of memory", b"out of memory\ry", b"NCCL error\r", b"Watchdog caught\r collective",
             b"Watchdog caught\r\rtimeout", b"loss: ab nan", b"allocate 2.5 GiB", b"used 95 of 100 GiB", b"xNCCL errorx", b""]
    for fp in SPEC["fingerprints"]:
        rx, q = compile_pattern(fp["pattern"]), compile_line_filter(fp["pattern"])
        assert q is not None
        for k, line in enumerate(lines):
            if not any(rx.search(s) for s in line.decode().split("\r")):
                continue
            for around in (lines, lines[::-1], [b"x"] * len(lines)):
                joined = b"\n".join([*around[:k], line, *around[k + 1 :]])
                at = sum(len(x) + 1 for x in around[:k])
                found = q.search(joined, at)
                assert found is not None and found.start() <= at + len(line), (fp["pattern"], line, around)


def test_the_literal_cover_takes_plain_runs_as_one_character_at_a_time_would(monkeypatch) -> None:
    """required_literals reads a run of plain characters at once; with that shortcut turned off
    (no run is plain), the covers of 20,000 random checked patterns are the same, and every line
    a pattern matches holds one of its literals."""
    import generator.core.patterns as patterns

    rnd = random.Random(11)
    alphabet = "abcab(|)?*+.[]^-\\d{1,2}$ x:"
    checked = []
    while len(checked) < 20_000:
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 16)))
        if check_pattern(text) is None:
            checked.append(text)
    fast = [patterns._CoverParser(p).alternation() for p in checked]
    monkeypatch.setattr(patterns, "_LITERAL_RUN", re.compile(r"(?!)"))
    assert fast == [patterns._CoverParser(p).alternation() for p in checked]
    assert sum(1 for c in fast if c) > 3_000  # a fair share of them have a cover to compare
    lines = ["".join(rnd.choice("abcx: -1") for _ in range(rnd.randint(0, 12))) for _ in range(300)]
    for p, cover in zip(checked[:3_000], fast):
        for line in lines:
            if cover and re.search(p, line, re.ASCII):
                assert any(lit in line for lit in cover), (p, line, cover)
