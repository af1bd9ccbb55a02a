"""Diagnose throughput next to `grep -E -f` over the same patterns, on the same synthetic log.

    python bench/diagnose_speed.py               # 1 GiB log, the real fingerprints and 10x that set
    python bench/diagnose_speed.py --mib 200     # a smaller run

The log is realistic training noise (progress lines, INFO lines, NCCL INFO, warnings, tqdm bars
with carriage returns) with a few real error lines near the end. Each run is timed as a whole
process (peak RSS from wait4): the matcher's process loads the compiled matcher definition, as
`failpedia diagnose` loads the one it ships, and streams the log in 4 MiB reads. The two
alternate `--repeat` times and the medians are shown, with each pair's ratio; `--against` times another
checkout's matcher in the same alternation (before/after in one run). The patterns are converted
to POSIX ERE for grep (\\d → [0-9], (?: → (, lazy marks dropped); a metric fingerprint's is the
ERE of a reading of its quantity (`_grep_pattern`); grep runs with LC_ALL=C, its fast path. The 10x set adds nine
variants of every fingerprint (the original pattern or-ed with a distinct literal), so the
literal prefilter and the regexes both have ten times the work.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

NOISE = [
    "[rank{r}]: {ts} | INFO | step {n:>7} | loss {l:.4f} | lr 3.0e-04 | tokens/s {t:.1f} | grad_norm {g:.3f}",
    "{ts} node-3:41872:42011 [{r}] NCCL INFO Channel {c:02d}/0 : {r} -> {r2} via P2P/IPC",
    "[default{r}]:[W ProcessGroupNCCL.cpp:1856] Warning: TORCH_NCCL_AVOID_RECORD_STREAMS is the default now",
    "Epoch {e}:  {p}%|{bar}| {n}/{m} [{mm}:{ss}<00:00, 3.21it/s, loss={l:.3f}]\r",
    "{ts} - WARNING - transformers.modeling_utils - Some weights of the model checkpoint were not used when initializing",
    "[rank{r}]:   File \"/opt/conda/lib/python3.11/site-packages/torch/nn/modules/module.py\", line 1739, in _call_impl",
]
ERRORS = [
    "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.15 GiB of which 1.20 GiB is free.",
    "[rank0]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600081 milliseconds before timing out.",
]


def make_log(path: Path, mib: int, seed: int = 7) -> int:
    rnd = random.Random(seed)
    target = mib * 1024 * 1024
    written = lines = 0
    with path.open("w", encoding="utf-8") as f:
        while written < target:
            block = []
            for _ in range(2000):
                tpl = rnd.choice(NOISE)
                block.append(tpl.format(
                    r=rnd.randint(0, 7), r2=rnd.randint(0, 7), ts="2024-05-01 12:00:%02d" % rnd.randint(0, 59),
                    n=rnd.randint(0, 10**6), l=rnd.random() * 3, t=rnd.random() * 1e5, g=rnd.random(), c=rnd.randint(0, 31),
                    e=rnd.randint(0, 9), p=rnd.randint(0, 100), bar="#" * rnd.randint(0, 10), m=1000, mm=rnd.randint(0, 59), ss=rnd.randint(0, 59),
                ))
            text = "\n".join(block) + "\n"
            f.write(text)
            written += len(text)
            lines += len(block)
        for e in ERRORS:
            f.write(e + "\n")
    return lines + len(ERRORS)


def to_ere(pattern: str) -> str | None:
    """The portable subset as POSIX ERE for GNU grep, or None if a construct has no ERE form."""
    out = pattern.replace("(?:", "(")
    out = re.sub(r"([*+?}])\?", r"\1", out)  # lazy → greedy: same lines match
    out = re.sub(r"\\x([0-9a-fA-F]{2})", lambda m: re.escape(chr(int(m.group(1), 16))), out)
    if re.search(r"\[[^\]]*\\[dDsSwW]", out):  # class escapes inside brackets: no ERE form
        return None
    out = out.replace("\\d", "[0-9]").replace("\\D", "[^0-9]")
    return out


def measure(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, int]:
    # Not stdout=DEVNULL: GNU grep, seeing its output is /dev/null, stops at the first matching
    # line, and a metric reading is on the log's first lines.
    with tempfile.TemporaryFile() as out:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - started
    if proc.stderr:
        proc.stderr.close()
    return elapsed, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def variant_entries(factor: int, work: Path) -> Path:
    """A copy of entries/ whose fingerprint list is `factor` times longer (for the 10x run)."""
    import yaml

    dest = work / f"entries-x{factor}"
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(REPO / "entries", dest)
    for path in dest.glob("*/*.yaml"):
        data = yaml.safe_load(path.read_text())
        fps = data.get("fingerprints", [])
        extra = []
        for k in range(1, factor):
            for fp in fps:
                v = dict(fp)
                if "pattern" in fp:  # a metric fingerprint is copied as it is: it reads the same lines
                    v["pattern"] = f"{fp['pattern']}|zq{k}x{path.stem.replace('-', '')} marker"
                extra.append(v)
        data["fingerprints"] = fps + extra
        path.write_text(yaml.safe_dump(data, sort_keys=False))
    return dest


def patterns_of(entries: Path) -> list[str]:
    from generator.site.build import load_catalog

    try:
        catalog = load_catalog(entries)
    except Exception:  # the 10x copy exceeds the schema's 20-fingerprint limit: read it raw
        import yaml

        return [_grep_pattern(fp.get("pattern"), fp.get("metric"))
                for p in sorted(entries.glob("*/*.yaml")) for fp in yaml.safe_load(p.read_text()).get("fingerprints", [])]
    return [_grep_pattern(fp.pattern, fp.metric) for rec in catalog.records.values() for fp in rec.entry.fingerprints]


def _grep_pattern(pattern: str | None, metric: str | None) -> str:
    """A fingerprint's pattern for grep. A metric fingerprint's is what a reading is: the
    quantity's pattern (metrics.PATTERNS) as ERE, its spellings, separator, number and unit, less
    the look-ahead ERE lacks, so grep does work comparable to the reader's, not a spelling's."""
    from generator.core.metrics import PATTERNS, QUANTITIES

    if pattern is not None or metric is None:
        return pattern or ""
    keys = sorted(QUANTITIES[metric][1], key=lambda k: (-len(k), k))
    python_keys = "|".join(re.escape(k) for k in keys)
    rx = PATTERNS[metric]
    assert rx.startswith(f"({python_keys})") and rx.endswith(LOOKAHEAD), rx
    tail = rx[len(python_keys) + 2 : -len(LOOKAHEAD)].replace("(?:", "(").replace("\\t", "\t")
    ere_keys = "|".join("".join("\\" + c if c in ".[]()*+?{}|^$\\" else c for c in k) for k in keys)
    return f"({ere_keys}){tail}"


LOOKAHEAD = "(?![A-Za-z0-9_.:/])"


def spec_of(entries: Path) -> dict[str, Any]:
    """The matcher definition of an entries folder, made as `matcher_spec` makes the shipped one
    (read raw: the 10x copy exceeds the schema's 20-fingerprint limit)."""
    import yaml

    from generator.diagnosis.matcher import matcher_spec
    from generator.core.metrics import PATTERNS, spellings
    from generator.core.patterns import required_literals
    from generator.core.schema import STRENGTH_SCORE, Strength

    fps, info = [], {}
    for p in sorted(entries.glob("*/*.yaml")):
        d = yaml.safe_load(p.read_text())
        info[p.stem] = {"title": d["title"], "url": p.stem + "/", "summary": "", "fix": "", "often_causes": d.get("often_causes", [])}
        for i, fp in enumerate(d.get("fingerprints", [])):
            fps.append({"slug": p.stem, "id": f"{p.stem}#{i}", "pattern": fp.get("pattern"), "near": fp.get("near"),
                        "window": fp.get("window", 40), "strength": fp.get("strength", "strong"),
                        "score": STRENGTH_SCORE[Strength(fp.get("strength", "strong"))], "rising": fp.get("rising", False),
                        "share_above": fp.get("share_above"), "times": fp.get("times", 5)})
            if "metric" in fp:  # as validate.FingerprintHead: the quantity's pattern and spellings
                fps[-1].update({"pattern": PATTERNS[fp["metric"]], "literals": spellings(fp["metric"]),
                                "near_literals": required_literals(fp["near"]) if fp.get("near") else [],
                                "metric": fp["metric"], "of": fp.get("of"), "falls_to": fp.get("falls_to"), "nonfinite": fp.get("nonfinite", False)})
    return matcher_spec({"version": 1, "flags": "", "fingerprints": fps, "entries": info})


# What `failpedia diagnose` does with the definition it ships (api/fingerprints.json): load it,
# then stream the log through the matcher in 4 MiB reads.
CHILD = """
import json, sys
sys.path.insert(0, {repo!r})
from generator.diagnosis.matcher import Matcher, rank_hits
with open(sys.argv[1]) as f:
    spec = json.load(f)
m = Matcher(spec, sys.argv[2])
with open(sys.argv[2], "rb") as f:
    while data := f.read(4 << 20):
        m.feed(data)
m.close()
print(json.dumps([x.slug for x in rank_hits(spec, [m])]))
"""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mib", type=int, default=1024)
    p.add_argument("--workdir", type=Path, default=None)
    p.add_argument("--repeat", type=int, default=3, help="runs of each, alternating; the medians are shown (default 3)")
    p.add_argument("--against", type=Path, default=None,
                   help="another checkout (e.g. `git worktree add /tmp/base main`) whose matcher is timed too, in the same alternation")
    args = p.parse_args(argv)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="failpedia-diag-"))
    log = work / "big.log"
    lines = make_log(log, args.mib)
    size = log.stat().st_size / 1024 / 1024
    print(f"log: {size:.0f} MiB, {lines:,} lines ({work})", file=sys.stderr)
    env = {**os.environ, "LC_ALL": "C"}
    rows = []
    for label, entries in (("1x", REPO / "entries"), ("10x", variant_entries(10, work))):
        pats = patterns_of(entries)
        ere = [e for e in (to_ere(x) for x in pats) if e]
        pf = work / f"patterns-{label}.txt"
        pf.write_text("\n".join(ere) + "\n")
        sf = work / f"spec-{label}.json"
        sf.write_text(json.dumps(spec_of(entries)))
        scripts = {}
        for name, repo in (("this", REPO), ("against", args.against)):
            if repo is not None:
                scripts[name] = work / f"child-{name}.py"
                scripts[name].write_text(CHILD.format(repo=str(repo.resolve())))
        runs: dict[str, list[tuple[float, float, float, float, float]]] = {name: [] for name in scripts}
        for _ in range(args.repeat):  # alternating, so each pair ran under the same load
            for name, script in scripts.items():
                t_py, rss_py, code = measure([sys.executable, str(script), str(sf), str(log)])
                if code != 0:
                    print(f"the matcher ({name}) failed (exit {code})", file=sys.stderr)
                    return 1
                t_grep, rss_grep, _ = measure(["grep", "-E", "-c", "-f", str(pf), str(log)], env)
                runs[name].append((t_py, rss_py, t_grep, rss_grep, t_py / t_grep))
        for name, got in runs.items():
            t_py, rss_py, t_grep, rss_grep, ratio = (statistics.median(r[k] for r in got) for k in range(5))
            tag = label if name == "this" else f"{label} ({name})"
            rows.append((tag, len(pats), len(ere), t_py, max(r[1] for r in got), t_grep, rss_grep, ratio, [r[4] for r in got]))
    print(f"\n{size:.0f} MiB log, median of {args.repeat}")
    print(f"{'set':15} {'patterns':>8} {'(grep)':>7} {'diagnose s':>11} {'MiB/s':>7} {'RSS MiB':>8} {'grep s':>7} {'MiB/s':>7} {'RSS MiB':>8} {'ratio':>6}  pairs")
    for label, n, ne, tp, rp, tg, rg, ratio, pairs in rows:
        print(f"{label:15} {n:8} {ne:7} {tp:11.2f} {size / tp:7.0f} {rp:8.0f} {tg:7.2f} {size / tg:7.0f} {rg:8.0f} "
              f"{ratio:6.2f}  {', '.join(f'{x:.2f}' for x in pairs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
