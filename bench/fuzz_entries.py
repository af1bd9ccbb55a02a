"""Fuzz the loader, the validator, the catalog and the pattern checker with Hypothesis.

    python bench/fuzz_entries.py                    # 120 seconds
    python bench/fuzz_entries.py --seconds 600 --findings /tmp/fuzz

Four targets, fed in turn until the time is up:

- load: a real entry's bytes mutated (snippets of YAML syntax spliced in, ranges cut or doubled,
  bytes flipped) → `load_yaml` may only return data or raise its LoadError;
- validate: the same bytes → `parse_entry` returns a model or problems, never raises; every
  message is one printable line under 1,000 characters;
- catalog: schema-shaped data (a valid entry with fields replaced by arbitrary values and text)
  with small registries → `build_catalog` returns or raises BuildFailed, nothing else;
- patterns: regex-like strings → `check_pattern` never raises, and every pattern it accepts
  matches crafted 4,096-character lines in under a second (catastrophic backtracking).

Any other exception, an unclean message, or one input taking over --slow seconds is a finding:
it is printed once per kind (exception type and place) and its input saved under --findings.
Exit status 1 when there is a finding. Prints the count of executions per target.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import re
import sys
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from generator.core.catalog import build_catalog  # noqa: E402
from generator.core.load import LoadError, load_yaml  # noqa: E402
from generator.core.patterns import MAX_LINE, check_pattern, compile_pattern  # noqa: E402
from generator.core.problems import BuildFailed  # noqa: E402
from generator.core.read import Source  # noqa: E402
from generator.core.validate import parse_entry  # noqa: E402

sys.path.insert(0, str(REPO / "tests"))
from conftest import CATEGORIES, TAGS, valid_entry  # noqa: E402

SNIPPETS = [b"&a ", b"*a", b"!!", b"!x ", b"!!python/object/apply:os.system ['id'] ", b"<<: ", b"? ", b"[", b"{", b"]", b"}",
            b"- ", b": ", b"\t", b"\n  ", b"\n- ", b"'", b'"', b"\\", b"\\u202e", b'"\\e[2J"', b"\xff", b"\x00", b"\x1b",
            b"\xe2\x80\xae", b"\xe2\x80\x8b", b"\xf3\xa0\x80\x81", b"%YAML 1.1\n", b"%TAG ! tag:x,2000:\n", b"---\n", b"...\n",
            b"|\n", b">-\n", b"#", b"9" * 120, b"0x" + b"f" * 90, b"2024-13-45", b"1:2:3:4:5", b".inf", b"~", b"null",
            b"<script>alert(1)</script>", b"{{ 7*7 }}", b"[a](javascript:alert(1))", b"TODO", b"\r\n", b"\xef\xbb\xbf"]
REGEX_ATOMS = list("ab.()[]{}|*+?^$-\\:, 0123") + ["(?:", "{2}", "{1,3}", "{2,}", "{0,99}", "[^", "\\d", "\\w", "\\s", "\\S",
                                                    "\\.", "\\x41", "a-z", "\\b", "(?=", "(?P<n>", "\\1", "XYZ", "foo"]


class Fuzz:
    def __init__(self, findings_dir: Path, slow: float) -> None:
        self.findings_dir = findings_dir
        self.slow = slow
        self.runs: Counter[str] = Counter()
        self.seconds: Counter[str] = Counter()  # time inside the targets (the rest is Hypothesis)
        self.kinds: dict[str, str] = {}
        self.seeds = [p.read_bytes() for p in sorted((REPO / "entries").glob("*/*.yaml"))] or [b"title: x\n"]
        # The catalog target uses the test suite's small registries and valid entry: parsing the real
        # registries on every execution would take most of the time.
        self.tags = yaml.safe_dump(TAGS).encode()
        self.categories = yaml.safe_dump(CATEGORIES).encode()
        self.valid: dict[str, Any] = valid_entry()

    def finding(self, target: str, kind: str, data: bytes | str, detail: str = "") -> None:
        if kind in self.kinds:
            return
        raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
        digest = hashlib.sha256(raw).hexdigest()[:12]
        self.findings_dir.mkdir(parents=True, exist_ok=True)
        path = self.findings_dir / f"{target}-{digest}.bin"
        path.write_bytes(raw)
        self.kinds[kind] = str(path)
        print(f"FINDING [{target}] {kind}\n  {detail[:200]!r}\n  input saved to {path}", flush=True)

    def guard(self, target: str, data: bytes | str, call: Any) -> Any:
        """Run one execution; turn anything unexpected into a finding."""
        self.runs[target] += 1
        started = time.perf_counter()
        try:
            return call()
        except Exception as e:  # the whole point: nothing may escape
            frame = traceback.extract_tb(e.__traceback__)[-1]
            self.finding(target, f"{type(e).__name__} at {Path(frame.filename).name}:{frame.lineno}", data, str(e))
        finally:
            took = time.perf_counter() - started
            self.seconds[target] += took
            if took > self.slow:
                self.finding(target, f"slow: {took:.1f} s for one input", data)
        return None

    def clean(self, target: str, messages: list[str], data: bytes) -> None:
        for m in messages:
            if not m or len(m) >= 1_000 or not m.isprintable():
                shape = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", m)  # one finding per kind of message
                shape = re.split(r"[;\n(]", re.sub(r"#?x?[0-9a-fA-F]{2,}|\d+", "N", shape))[0][:60]
                shape = shape[: shape.index("'…'") + 3] if "'…'" in shape else shape
                self.finding(target, f"unclean message: {shape!r}", data, m)

    # --- targets ---

    def load(self, raw: bytes) -> None:
        def run() -> None:
            try:
                load_yaml(raw)
            except LoadError as e:
                self.clean("load", [e.message], raw)

        self.guard("load", raw, run)

    def validate(self, raw: bytes) -> None:
        def run() -> None:
            parsed, problems = parse_entry(raw, "entries/memory/fuzz.yaml")
            if (parsed is None) != bool(problems):
                self.finding("validate", "a result with neither a model nor problems (or both)", raw)
            self.clean("validate", [p.message for p in problems], raw)

        self.guard("validate", raw, run)

    def catalog(self, data: Any) -> None:
        try:
            raw = yaml.safe_dump(data, allow_unicode=True, sort_keys=False).encode("utf-8", "surrogatepass")
        except (yaml.YAMLError, UnicodeError):
            return

        def run() -> None:
            source = Source(Path("entries"), "entries", ("entries/tags.yaml", self.tags), ("entries/categories.yaml", self.categories),
                            (("entries/memory/fuzz.yaml", "memory", "fuzz", raw),), ())
            try:
                build_catalog(source)
            except BuildFailed as e:
                self.clean("catalog", [p.message for p in e.problems], raw)

        self.guard("catalog", raw, run)

    def pattern(self, text: str) -> None:
        def run() -> None:
            if check_pattern(text) is not None:
                return
            rx = compile_pattern(text)
            pieces = [c for c in text if c.isalnum() or c in " .:,_-"] or ["a"]
            rnd = random.Random(text)
            lines = ["".join(rnd.choice(pieces) for _ in range(MAX_LINE)) for _ in range(2)] + [pieces[0] * MAX_LINE]
            started = time.perf_counter()
            for line in lines:
                rx.search(line)
            if time.perf_counter() - started > 1:
                self.finding("patterns", f"accepted pattern is slow on a crafted line: {text!r}", text)

        self.guard("patterns", text, run)


def mutate(fuzz: Fuzz, seed: int) -> bytes:
    """A real entry with 1-8 random edits. Hypothesis draws the seed: generating the edits through
    its own strategies costs more than running the loader and validator on them."""
    rnd = random.Random(seed)
    raw = bytearray(rnd.choice(fuzz.seeds))
    for _ in range(rnd.randint(1, 8)):
        at = rnd.randint(0, len(raw))
        op = rnd.choice(["insert", "insert", "cut", "double", "flip", "binary", "line"])
        if op == "insert":
            raw[at:at] = rnd.choice(SNIPPETS)
        elif op == "cut":
            del raw[at : at + rnd.randint(1, 200)]
        elif op == "double":
            raw[at:at] = raw[at : at + rnd.randint(1, 400)] * rnd.randint(2, 40)
        elif op == "flip" and raw:
            raw[at % len(raw)] = rnd.randrange(256)
        elif op == "line":  # a whole line repeated: many list items, long texts
            start = raw.rfind(b"\n", 0, at) + 1
            end = raw.find(b"\n", at)
            line = raw[start : end if end >= 0 else len(raw)] + b"\n"
            raw[start:start] = line * rnd.randint(2, 200)
        else:
            raw[at:at] = rnd.randbytes(rnd.randint(1, 16))
    return bytes(raw[: 1024 * 1024 + 16])


TEXT = st.one_of(st.text(max_size=80), st.sampled_from([s.decode("utf-8", "replace") for s in SNIPPETS]))
VALUE = st.recursive(
    st.one_of(TEXT, st.integers(), st.floats(), st.booleans(), st.none()),
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(TEXT, inner, max_size=5)),
    max_leaves=8,
)


def shaped(fuzz: Fuzz) -> st.SearchStrategy[Any]:
    @st.composite
    def build(draw: st.DrawFn) -> Any:
        data = dict(fuzz.valid)
        for _ in range(draw(st.integers(1, 5))):
            key = draw(st.one_of(st.sampled_from(sorted(data) or ["title"]), TEXT))
            data[key] = draw(VALUE)
        return data

    return build()


def run(seconds: float, findings: Path, slow: float, batch: int) -> int:
    fuzz = Fuzz(findings, slow)
    opts = settings(max_examples=batch, deadline=None, database=None, suppress_health_check=list(HealthCheck))

    @opts
    @given(st.integers(0, 2**64 - 1))
    def bytes_target(seed: int) -> None:
        for k in range(10):  # ten inputs per example: Hypothesis' own overhead is ~5 ms an example
            raw = mutate(fuzz, seed + k)
            fuzz.load(raw)
            fuzz.validate(raw)

    @opts
    @given(shaped(fuzz))
    def data_target(data: Any) -> None:
        fuzz.catalog(data)

    @opts
    @given(st.lists(st.sampled_from(REGEX_ATOMS), max_size=24).map("".join))
    def pattern_target(text: str) -> None:
        fuzz.pattern(text)

    started = time.perf_counter()
    rounds = 0
    while time.perf_counter() - started < seconds:
        for target in (bytes_target, data_target, pattern_target):
            target()
        rounds += 1
    took = time.perf_counter() - started
    total = sum(fuzz.runs.values())
    per = ", ".join(f"{k} {v:,} ({fuzz.seconds[k]:.0f} s)" for k, v in sorted(fuzz.runs.items()))
    print(f"fuzz_entries: {total:,} executions in {took:.0f} s ({per}); {len(fuzz.kinds)} finding{'s' * (len(fuzz.kinds) != 1)}")
    for kind, path in fuzz.kinds.items():
        print(f"  {kind}  ({path})")
    return 1 if fuzz.kinds else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=120, help="how long to fuzz (default 120)")
    parser.add_argument("--findings", type=Path, default=REPO / ".cache" / "fuzz-findings", help="where inputs that found something go")
    parser.add_argument("--slow", type=float, default=2.0, help="seconds one input may take before it counts as a finding")
    parser.add_argument("--batch", type=int, default=300, help="Hypothesis examples per target per round")
    args = parser.parse_args()
    return run(args.seconds, args.findings, args.slow, args.batch)


if __name__ == "__main__":
    sys.exit(main())
