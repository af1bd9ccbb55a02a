"""Metrics: the quantities a training log prints (loss, grad norm, loss scale, ...), read from any
log format, and the checks numeric fingerprints make on them.

One table (`QUANTITIES`: each quantity's spellings in logs) and one set of rules; the Python
engine (diagnose.py) uses this module, the browser engine `templates/static/diagnose-metrics.js`,
which follows the same rules step by step on the patterns `metric_rules()` puts in the matcher
definition:

1. A quantity is written as one of its spellings, as a whole key: not right after a letter, digit,
   `_`, `/`, `.` or `-` (so `eval_loss`, `val/loss`, `nll_loss` and `train/grad_norm_x` are not
   `loss`), nor after `val `, `eval `, `test ` or `valid ` (a validation figure is not the
   training one). A spelling must be followed by its value, so `loss_scale` is never `loss` and
   `loss scale` never `loss`.
2. The key may be quoted (`'loss'`, `"train/loss"`); then comes `:`, `=` or spaces (`key: v`,
   `key=v`, `'key': v`, `| key v |`, `key v`), optionally `[` (`lr=[0.0001]`) and a quote (HF
   Trainer's `'grad_norm': '1.77e+18'`), then the number: an integer or decimal with an optional
   exponent (`4.131107E+00`), or `nan` / `inf` in the spellings Python, C and JavaScript print.
   Quantities with a unit (time, memory) may carry one (`0.935s`, `8.27 GiB`); the number must
   not run on into a word, a `.`, `:` or `/` (`12:30:01`, `14/5005` are not readings).
3. Only the first number after a key counts: `Time 0.5 (0.6)` reads 0.5, the current value, not
   the running average in brackets.
4. When a line holds the same quantity twice, the last one is the reading (DeepSpeed's
   `Attempted loss scale: 65536, reducing to 32768` reads 32768, the new scale).
5. Readings are scaled to one unit per kind: time to seconds (`ms` and spellings such as
   Megatron's `elapsed time per iteration (ms)` × 0.001), memory to MiB (`GiB`, `GB`, `G` × 1024;
   a bare number is taken as MiB, as mmengine's `memory:` prints it). `nan` and `inf` read as
   non-finite (None in a series).
6. A line is looked at only when it contains a spelling (the matcher's literal prefilter), so a
   log pays for reading metrics only on its metric lines.

The checks (a numeric fingerprint over `metric`): `rising` fires once the reading rose on `times`
readings in a row (an equal reading starts over); `share_above` once the reading was at least that
share of the `of` quantity on the same line, on `times` lines; `falls_to` once the reading fell
(was lower than the one before) on `times` readings and is at most that value; `nonfinite` on the
first non-finite reading after a finite one.

A series of the readings is kept for the result (`Series`): at most `SERIES_CAP` points, thinned
deterministically (every other point dropped, the stride doubled) so a 100 MB log keeps a bounded,
evenly spaced sample, plus the points where the fingerprint fired.
"""

from __future__ import annotations

import math
import re
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

try:  # the loop of `read` over a whole piece, in C (setup.py builds it where a compiler is)
    from . import _scan as compiled  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - an install without a compiler reads in Python alone
    compiled = None

__all__ = [
    "FAST", "QUANTITIES", "compiled", "SERIES_CAP", "Reading", "Series", "check", "metric_rules", "read", "read_piece", "sparkline", "spellings",
]

# name → (kind, spellings). A spelling with " (ms)"-style unit in it is scaled by KEY_SCALE.
QUANTITIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "loss": ("plain", (
        "loss", "Loss", "LOSS", "lm loss", "lm_loss", "train_loss", "train loss", "Train Loss", "training_loss",
        "training loss", "train/loss", "train_loss_step", "train_loss_epoch", "train/loss_step", "total_loss",
    )),
    "grad_norm": ("plain", (
        "grad_norm", "grad norm", "Grad Norm", "gnorm", "total_norm", "grad-norm", "gradient_norm", "gradient norm",
        "train/grad_norm", "grad_2.0_norm_total", "grad_norm_total",
    )),
    "loss_scale": ("plain", (
        "loss_scale", "loss scale", "loss-scale", "Loss Scale", "loss scale to", "reducing to", "train/loss_scale", "scaler_scale",
    )),
    "learning_rate": ("plain", (
        "lr", "LR", "learning_rate", "learning rate", "Learning Rate", "train/learning_rate",
    )),
    "step_time": ("time", (
        "time", "Time", "batch_time", "step_time", "iter_time", "time/step", "train/step_time", "elapsed time per iteration (ms)",
    )),
    "data_time": ("time", (
        "data_time", "Data", "data time", "dataloader_time", "data_load_time", "train/data_time", "time/data",
    )),
    "memory_allocated": ("memory", (
        "memory_allocated", "memory_allocated()", "mem allocated", "mem_allocated", "allocated", "allocated_memory",
        "mem_alloc", "MA", "memory", "max_mem", "max_memory_allocated", "gpu_mem", "train/memory_allocated",
    )),
    "memory_reserved": ("memory", (
        "memory_reserved", "memory_reserved()", "mem reserved", "mem_reserved", "reserved", "CA", "max_memory_reserved",
    )),
    "throughput": ("plain", (
        "samples_per_second", "train_samples_per_second", "samples/s", "samples/sec", "tokens/s", "tokens_per_sec",
        "tokens_per_second", "tok/s", "wps", "throughput", "throughput per GPU (TFLOP/s/GPU)",
    )),
}

KEY_SCALE = {"elapsed time per iteration (ms)": 0.001}
UNITS = {
    "time": {"ms": 0.001, "s": 1.0, "sec": 1.0},
    "memory": {"GiB": 1024.0, "GB": 1024.0, "G": 1024.0, "MiB": 1.0, "MB": 1.0, "M": 1.0, "KiB": 1 / 1024, "KB": 1 / 1024},
    "plain": {},
}
NOT_AFTER = ("val ", "Val ", "eval ", "Eval ", "test ", "Test ", "valid ", "Valid ")  # rule 1: each ends in a space
NUMBER = r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|[-+]?(?:nan|NaN|NAN|Infinity|infinity|inf|Inf|INF)"
SERIES_CAP = 240


def _ordered(words: Any) -> list[str]:
    """Keys and units in the order the pattern tries them (longest first), which the compiled
    reader follows too."""
    return sorted(words, key=lambda w: (-len(w), w))


def _pattern(kind: str, keys: tuple[str, ...]) -> str:
    # Only ASCII classes (`[0-9]`, not `\d`) and `[ \t]`: Python's re and JavaScript's RegExp read
    # them alike. The pattern starts with the keys, so both engines skip to a key's first letter
    # quickly; rule 1's look-behind is in code (`read`): as a look-behind in the pattern,
    # Python's re would lose that skip.
    alts = "|".join(re.escape(k) for k in _ordered(keys))
    units = _ordered(UNITS[kind])
    unit = f"(?:[ ]?({'|'.join(units)}))?" if units else "()"
    return (
        f"({alts})['\"]?(?:[ \\t]*[:=][ \\t]*|[ \\t]+)\\[?[ \\t]*['\"]?"
        f"({NUMBER})['\"]?{unit}(?![A-Za-z0-9_.:/])"
    )


KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_/.-")


PATTERNS = {name: _pattern(kind, keys) for name, (kind, keys) in QUANTITIES.items()}
_COMPILED = {name: re.compile(p) for name, p in PATTERNS.items()}


def spellings(name: str) -> list[str]:
    """The literals a line holding this quantity contains (the matcher's prefilter covers)."""
    return list(QUANTITIES[name][1])


def metric_rules() -> dict[str, Any]:
    """What the browser engine needs to read metrics as this module does (the matcher definition's
    `rules.metrics`)."""
    return {
        "patterns": PATTERNS,
        "kinds": {name: kind for name, (kind, _) in QUANTITIES.items()},
        "units": UNITS,
        "key_scale": KEY_SCALE,
        "key_chars": "".join(sorted(KEY_CHARS)),
        "not_after": list(NOT_AFTER),
        "series_cap": SERIES_CAP,
    }


# name → (unit → scale) of the quantity's kind
_UNIT_SCALE = {name: UNITS[kind] for name, (kind, _) in QUANTITIES.items()}
FINITE_END = frozenset("0123456789.")  # how a number ends; nan, inf and Infinity end with a letter


class Reading(NamedTuple):
    value: float | None  # None: non-finite (nan, inf)
    start: int  # where the key/value pair is on the line
    end: int


def read(name: str, line: str) -> Reading | None:
    """Rules 1-5: the quantity's reading on one line (segment), or None when it has none. A
    match that is not a whole key is skipped by one character, so a key inside it still counts."""
    # Rule 1 (the key is whole) is tested here, inline, and the value read only for the last
    # match: this runs on every metric line of a log.
    rx = _COMPILED[name]
    last = None
    pos = 0
    while (m := rx.search(line, pos)) is not None:
        start = m.start()
        if start:
            before = line[start - 1]
            if before in KEY_CHARS or (before == " " and line.endswith(NOT_AFTER, 0, start)):
                pos = start + 1
                continue
        last = m
        pos = m.end()
    if last is None:
        return None
    key, number, unit = last.group(1, 2, 3)
    if number[-1] not in FINITE_END:  # nan, inf, Infinity
        return Reading(None, last.start(), last.end())
    value = float(number)
    if unit:
        value *= _UNIT_SCALE[name].get(unit, 1.0)
    if key in KEY_SCALE:
        value *= KEY_SCALE[key]
    return Reading(value, last.start(), last.end())


FAST = compiled is not None
_NAMES = tuple(QUANTITIES)
_INDEX = {name: k for k, name in enumerate(_NAMES)}


# Each quantity as _scan takes it: keys and units in the pattern's order, with their scales.
_SCAN_QUANTITIES = tuple(
    (
        tuple(k.encode() for k in _ordered(keys)), tuple(KEY_SCALE.get(k, 1.0) for k in _ordered(keys)),
        tuple(u.encode() for u in _ordered(UNITS[kind])), tuple(UNITS[kind][u] for u in _ordered(UNITS[kind])),
    )
    for kind, keys in QUANTITIES.values()
)
_KEY_CHARS = "".join(sorted(KEY_CHARS)).encode()
_NOT_AFTER = tuple(w.encode() for w in NOT_AFTER)


class PieceReadings(NamedTuple):
    lines: array[int]  # the line's index in the piece (0-based)
    starts: array[int]  # where the line starts in the piece
    values: array[float]  # the reading (or the share), NaN for a non-finite one


def read_piece(piece: bytes, requests: Sequence[tuple[str, str | None]], max_line: int) -> list[PieceReadings] | None:
    """Rules 1-5 on every line of `piece` (lines end with a newline, segments at carriage
    returns, each cut at `max_line` characters), per request `(quantity, of)`: the lines whose
    first segment with a reading of `quantity` has one, with that reading, or for `of` the share
    of `of`'s reading in the same segment, where both are finite and the whole is above 0 (the
    lines without are left out, as matcher.Matcher._metric leaves them). None when the compiled
    reader is missing or the piece has a long non-ASCII segment, whose cut only Python can tell:
    then `read` decides, line by line."""
    if compiled is None:
        return None
    got = compiled.readings(
        piece, _SCAN_QUANTITIES, tuple((_INDEX[q], _INDEX[o] if o else -1) for q, o in requests), max_line, _KEY_CHARS, _NOT_AFTER,
    )
    if got is None:
        return None
    out = []
    for lines, starts, values in got:
        a, b, c = array("q"), array("q"), array("d")
        a.frombytes(lines)
        b.frombytes(starts)
        c.frombytes(values)
        out.append(PieceReadings(a, b, c))
    return out


CHECKS = {"nonfinite": 0, "rising": 1, "falls_to": 2, "share_above": 3}


def check(kind: str, times: int, limit: float, previous: float | None, streak: int, good: int,
          values: array[float]) -> tuple[float | None, int, int, array[int]]:
    """A numeric check (matcher.Matcher._numeric's rules) over a run of readings in order:
    the check's new state (previous, streak, good) and the indexes of the readings where it
    fired. Needs the compiled reader (`FAST`)."""
    assert compiled is not None
    previous, streak, good, fired = compiled.check(CHECKS[kind], times, limit, previous, streak, good, values)
    out = array("q")
    out.frombytes(fired)
    return previous, streak, good, out


@dataclass
class Series:
    """The readings of one fingerprint over a log: bounded, thinned deterministically."""

    points: list[list[Any]] = field(default_factory=list)  # [line, value or None]
    fired: list[list[Any]] = field(default_factory=list)  # the points where the fingerprint fired
    stride: int = 1
    seen: int = 0

    def add(self, line: int, value: float | None) -> None:
        if self.seen % self.stride == 0:
            self.points.append([line, value])
            if len(self.points) > SERIES_CAP:
                self.points = self.points[::2]
                self.stride *= 2
        self.seen += 1

    def extend(self, lines: Sequence[int], values: Sequence[float | None], base: int = 0) -> None:
        """`add(base + line, value)` of each in turn, at once (NaN as None): the points kept are the readings whose
        index is a multiple of the stride, and the stride the least power of two (times the one
        before) that keeps at most SERIES_CAP of them."""
        total = self.seen + len(lines)
        stride = self.stride
        while (total + stride - 1) // stride > SERIES_CAP:
            stride *= 2
        points = self.points[:: stride // self.stride] if stride != self.stride else self.points
        first = -self.seen % stride  # the first new index that is a multiple of the stride
        for k in range(first, len(lines), stride):
            v = values[k]
            points.append([base + lines[k], None if v is None or v != v else v])
        self.points, self.stride, self.seen = points, stride, total

    def fire(self, line: int, value: float | None, limit: int) -> None:
        if len(self.fired) < limit and (not self.fired or self.fired[-1][0] != line):
            self.fired.append([line, value])

    def copy(self) -> "Series":
        return Series([list(p) for p in self.points], [list(p) for p in self.fired], self.stride, self.seen)


SPARK = "▁▂▃▄▅▆▇█"
SPARK_ASCII = " .:-=+*#"


def sparkline(values: list[float | None], width: int = 40, ascii_only: bool = False) -> str:
    """One character per bucket of `values` (at most `width` buckets, each its maximum), scaled
    from the series' minimum to its maximum; a non-finite bucket is "!"."""
    chars = SPARK_ASCII if ascii_only else SPARK
    if not values:
        return ""
    n = len(values)
    buckets: list[float | None] = []
    count = min(width, n)
    for b in range(count):
        part = values[b * n // count : (b + 1) * n // count]
        finite = [v for v in part if v is not None and math.isfinite(v)]
        buckets.append(None if len(finite) < len(part) else max(finite))
    finite_all = [v for v in buckets if v is not None]
    lo, hi = (min(finite_all), max(finite_all)) if finite_all else (0.0, 0.0)
    out = []
    for v in buckets:
        if v is None:
            out.append("!")
        else:
            out.append(chars[0 if hi == lo else min(len(chars) - 1, int((v - lo) / (hi - lo) * (len(chars) - 1) + 0.5))])
    return "".join(out)
