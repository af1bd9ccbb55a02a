"""The compiled metric reader (generator/core/_scan.c) against the definition it speeds up:
`metrics.read` line by line, and the matcher's Python path (`Matcher._metric`, `_numeric`)
fingerprint by fingerprint, on generated lines and on every real log the tests hold."""

from __future__ import annotations

import math
import random
from array import array
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import generator.diagnosis.matcher as diagnose
from generator.core import metrics
from generator.site.build import load_catalog
from generator.diagnosis.matcher import Matcher, matcher_spec
from generator.core.metrics import NOT_AFTER, QUANTITIES, UNITS, read, read_piece
from generator.site.pages import fingerprint_data

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(not metrics.FAST, reason="the compiled reader was not built (no compiler)")

KEYS = sorted({k for _, keys in QUANTITIES.values() for k in keys})
UNIT_WORDS = sorted({u for units in UNITS.values() for u in units})
NUMBERS = ["1", "0.5", "5.", ".25", "-3", "+2.0", "4.131107E+00", "1e-3", "2E5", "1e999", "nan", "NaN", "NAN", "-inf", "Inf",
           "INF", "Infinity", "infinity", "inf", "1.771e+18", "0", "00012", "3.5.1", "1e", "2e+", "12:30:01", "14/5005", "nanx"]
PIECES = KEYS + UNIT_WORDS + NUMBERS + list(NOT_AFTER) + [
    " ", "  ", "\t", ":", "=", ": ", "=[", "[", "]", "'", '"', "'", ",", "|", "/", ".", "_", "-", "(", ")", "x", "é", "→", "\r",
    "s", "ms", " s", " GiB", "sec", "seconds", "{", "}",
]


def reference(piece: bytes, requests: list[tuple[str, str | None]], max_line: int) -> list[list[tuple[int, int, float]]]:
    """What read_piece must give, by `read` and the matcher's rule for the first segment."""
    out: list[list[tuple[int, int, float]]] = [[] for _ in requests]
    start = 0
    for index, raw in enumerate(piece.split(b"\n")[: piece.count(b"\n") + (0 if piece.endswith(b"\n") else 1)]):
        segments = [s[:max_line] for s in raw.decode("utf-8", "replace").split("\r")]
        for r, (q, of) in enumerate(requests):
            for segment in segments:
                got = read(q, segment)
                if got is None:
                    continue
                if of is None:
                    out[r].append((index, start, math.nan if got.value is None else got.value))
                else:
                    whole = read(of, segment)
                    if got.value is not None and whole is not None and whole.value is not None and whole.value > 0:
                        out[r].append((index, start, got.value / whole.value))
                break
        start += len(raw) + 1
    return out


def compiled(piece: bytes, requests: list[tuple[str, str | None]], max_line: int) -> list[list[tuple[int, int, float]]] | None:
    got = read_piece(piece, requests, max_line)
    return None if got is None else [list(zip(r.lines, r.starts, r.values)) for r in got]


def same(a: list[list[tuple[int, int, float]]], b: list[list[tuple[int, int, float]]]) -> bool:
    def key(rows: list[tuple[int, int, float]]) -> list[tuple[int, int, str]]:
        return [(i, s, repr(v)) for i, s, v in rows]  # NaN equal to NaN, -0.0 apart from 0.0
    return [key(r) for r in a] == [key(r) for r in b]


REQUESTS = [(name, None) for name in QUANTITIES] + [("data_time", "step_time"), ("memory_reserved", "memory_allocated")]

SEPARATORS = [":", "=", " ", ": ", " = ", "  ", "\t", "':", "': ", '": ', "=[", ": [", ":'", "= '", "", ":  [ '"]
AFTER = ["", " ", "'", "]", ",", "s", "ms", " s", " sec", "sec", " GiB", "GB", " M", "x", ".", ":", "/", "_", "é", "(0.6)", " (ms)", "e5"]
# A field looks like a reading (key, separator, number, unit) more often than chance would make one.
field = st.tuples(st.sampled_from(["", "", " ", "|", "val ", "eval ", "train_", "/", "é", "x"]), st.sampled_from(KEYS),
                  st.sampled_from(SEPARATORS), st.sampled_from(NUMBERS), st.sampled_from(AFTER)).map("".join)
line_text = st.lists(st.one_of(field, field, st.sampled_from(PIECES)), min_size=1, max_size=10).map("".join)


@settings(max_examples=600, deadline=None)
@given(st.lists(line_text, min_size=1, max_size=6), st.booleans())
def test_generated_lines_read_the_same(lines: list[str], trailing: bool) -> None:
    piece = ("\n".join(lines) + ("\n" if trailing else "")).encode()
    got = compiled(piece, REQUESTS, 4096)
    assert got is not None
    assert same(got, reference(piece, REQUESTS, 4096)), lines


@settings(max_examples=200, deadline=None)
@given(st.lists(line_text, min_size=1, max_size=4))
def test_the_segment_cut_is_the_same(lines: list[str]) -> None:
    """Segments cut at max_line: in bytes for ASCII; a long non-ASCII segment goes to Python."""
    piece = ("\n".join(lines) + "\n").encode()
    got = compiled(piece, REQUESTS, 12)
    long_non_ascii = any(len(s.encode()) > 12 and not s.isascii() for line in lines for s in line.split("\r"))
    if long_non_ascii:
        assert got is None
    else:
        assert got is not None and same(got, reference(piece, REQUESTS, 12)), lines


def test_real_step_lines_read_the_same() -> None:
    lines = []
    for path in sorted((REPO / "tests").glob("*logs/**/*.log")):
        lines += path.read_bytes().split(b"\n")
    assert len(lines) > 2000
    piece = b"\n".join(line for line in lines if len(line) <= 4096) + b"\n"
    got = compiled(piece, REQUESTS, 4096)
    assert got is not None and sum(map(len, got)) > 1000
    assert same(got, reference(piece, REQUESTS, 4096))


def test_the_checks_fire_as_the_python_rules() -> None:
    rnd = random.Random(3)
    for kind, limit in (("nonfinite", 0.0), ("rising", 0.0), ("falls_to", 1.0), ("share_above", 0.5)):
        for _ in range(50):
            values = array("d", [rnd.choice([math.nan, 0.1, 0.4, 0.9, 1.0, 2.0, rnd.random() * 3]) for _ in range(rnd.randint(0, 60))])
            state: tuple[float | None, int, int] = (None, 0, 0)
            # in two runs, as two pieces would
            cut = len(values) // 2
            p, s, g, first = metrics.check(kind, 3, limit, *state, values[:cut])
            p, s, g, second = metrics.check(kind, 3, limit, p, s, g, values[cut:])
            fired = list(first) + [cut + k for k in second]
            assert fired == python_check(kind, 3, limit, values), (kind, list(values))


def python_check(kind: str, times: int, limit: float, values: array) -> list[int]:
    """Matcher._numeric's rules, written out."""
    previous, streak, good, fired = None, 0, 0, []
    for k, v in enumerate(values):
        finite = v == v
        hit = False
        if kind == "nonfinite":
            good += finite
            hit = not finite and good > 0
        elif not finite:
            continue
        elif kind == "rising":
            streak = streak + 1 if previous is not None and v > previous else 1
            previous = v
            hit = streak >= times
        elif kind == "falls_to":
            streak += previous is not None and v < previous
            previous = v
            hit = streak >= times and v <= limit
        elif v >= limit:
            good += 1
            hit = good >= times
        if hit:
            fired.append(k)
    return fired


def test_a_series_extended_at_once_equals_one_point_at_a_time() -> None:
    rnd = random.Random(5)
    for _ in range(40):
        one, many = metrics.Series(), metrics.Series()
        line = 0
        for _ in range(rnd.randint(1, 12)):
            n = rnd.choice([0, 1, 3, 100, 239, 240, 241, 700, 2000])
            lines = list(range(n))
            values = [rnd.choice([None, rnd.random()]) for _ in lines]
            for k in lines:
                one.add(line + k + 1, values[k])
            many.extend(lines, [math.nan if v is None else v for v in values], line + 1)
            line += n
        assert (many.points, many.stride, many.seen) == (one.points, one.stride, one.seen)


@pytest.fixture(scope="module")
def spec() -> dict:
    return matcher_spec(fingerprint_data(load_catalog(REPO / "entries")))


def outcome(spec: dict, data: bytes, fast: bool, monkeypatch: pytest.MonkeyPatch, feed: int) -> list:
    """The matcher's whole state after a log: with the compiled loops (the metric reader, the
    grouping of literal matches into lines), or with neither."""
    monkeypatch.setattr(diagnose, "FAST", fast)
    monkeypatch.setattr(diagnose, "compiled", metrics.compiled if fast else None)
    m = Matcher(spec, "x.log")
    for k in range(0, len(data), feed):
        m.feed(data[k : k + feed])
    m.close()
    return [(s.count, s.near_confirmed, s.evidence, s.pending, s.series) for s in m.state]


def real_logs() -> list[Path]:
    return sorted(p for p in (REPO / "tests").glob("*logs/**/*.log"))


def test_every_real_log_diagnoses_the_same_with_the_compiled_reader(spec: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    logs = real_logs()
    assert len(logs) > 100
    differ = []
    for path in logs:
        data = path.read_bytes()
        for feed in (len(data) + 1, 4096, 97):
            if outcome(spec, data, True, monkeypatch, feed) != outcome(spec, data, False, monkeypatch, feed):
                differ.append((path.name, feed))
    assert not differ


def test_a_long_training_log_diagnoses_the_same(spec: dict, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Several pieces, series thinned many times, checks carried from piece to piece, a long
    non-ASCII line (left to Python) in the middle, and the metric fingerprints firing."""
    rnd = random.Random(11)
    out = []
    g = 1.0
    for n in range(60000):
        g = g * 1.5 if 30000 < n < 30020 else rnd.random()
        out.append(f"step {n} | loss {rnd.random():.4f} | grad_norm {g:.4g} | data_time {rnd.random():.3f} | time {rnd.random() + 0.5:.3f}"
                   f" | memory_allocated {n // 100} MiB | loss scale: {max(1, 2 ** (16 - n // 2000))}")
        if n == 45000:
            out.append("fp16 enabled " + "é" * 5000 + " loss nan")
        if n == 50000:
            out.append("{'loss': nan, 'grad_norm': nan}")
    data = ("\n".join(out) + "\n").encode()
    assert len(data) > 5 * 1024 * 1024
    fast = outcome(spec, data, True, monkeypatch, 4 * 1024 * 1024)
    assert fast == outcome(spec, data, False, monkeypatch, 4 * 1024 * 1024)
    slugs = [fp["slug"] for fp, (count, *_rest) in zip(spec["fingerprints"], fast) if count]
    assert {"exploding-gradients", "loss-scale-collapse", "nan-loss-fp16-overflow"} <= set(slugs)


def test_dense_literal_lines_are_filtered_the_same(spec: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pieces where `NCCL INFO` is on every other line, a few of them the lines a fingerprint
    matches, one of those not ASCII."""
    rnd = random.Random(2)
    out = []
    for n in range(40000):
        out.append(f"node-1:{n}:{n} [0] NCCL INFO Channel {n % 32:02d}/0 : 0[0] -> 1[1] via P2P/IPC" if n % 2 else f"step {n} loss {rnd.random():.3f}")
        if n in (1234, 20001, 39000):
            out.append("node-1:1:1 [0] NCCL INFO NET/Socket : Using [0]docker0:172.17.0.1<0>")
            out.append("node-1:1:1 [0] NCCL INFO Bootstrap : Using lo:127.0.0.1<0>")
        if n == 20001:
            out.append("node-1:1:1 [0] NCCL INFO Bootstrap : Using lo:127.0.0.1<0> é")
        if n in (1300, 38950):  # `near`: after one hit, before another
            out.append("node-1:1:1 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 172.17.0.1<41517> failed : Connection refused")
    data = ("\n".join(out) + "\n").encode()
    fast = outcome(spec, data, True, monkeypatch, 1 << 20)
    assert fast == outcome(spec, data, False, monkeypatch, 1 << 20)
    hits = {fp["id"]: count for fp, (count, *_rest) in zip(spec["fingerprints"], fast) if count}
    assert any(slug.startswith("nccl-socket-interface-not-found") for slug in hits), hits


def test_literal_matches_group_into_the_same_lines(spec: dict) -> None:
    """compiled.group_lines against diagnose._group_lines, on every real log and on lines
    longer than max_line, non-ASCII ones, a piece without a final newline."""
    m = Matcher(spec, "x")
    scanner = m._scanner
    assert scanner is not None
    pieces = [p.read_bytes() for p in real_logs()]
    pieces.append(b"NCCL INFO " + b"x" * 5000 + b"\nCUDA out of memory \xc3\xa9 NCCL INFO\n\xff\xfeNCCL INFO Bootstrap")
    for piece in pieces:
        matches = scanner.find_matches_as_indexes(piece, overlapping=True)
        for max_line in (4096, 40):
            assert metrics.compiled.group_lines(piece, matches, max_line) == diagnose._group_lines(piece, matches, max_line)
