"""`failpedia diagnose` on several per-rank logs (the time-order merge of logmerge.py) against the
same bytes as one file (the chunked single-log path): time, MB/s and peak memory, in one run.

    python bench/diagnose_merge.py                    # 8 ranks x 32 MiB, the real entries/
    python bench/diagnose_merge.py --ranks 64 --mib 8

The files are written to a temporary folder: glog-stamped training lines whose times interleave
across the ranks, and one rank's CUDA OOM near the end. The child reports its own peak resident
memory (VmHWM). Exits 1 when the merged run names another rank or passes --max-rss MiB.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from diagnose_big_log import CHILD  # the child that reports its own peak memory

REPO = Path(__file__).resolve().parent.parent
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.15 GiB of which 1.03 GiB is free.\n"


def write_logs(folder: Path, ranks: int, mib: float, culprit: int) -> int:
    lines = int(mib * 2**20 // 110)
    for r in range(ranks):
        with (folder / f"rank{r}.log").open("w") as f:
            for n in range(lines):
                us = n * 1000 + r * 7
                f.write(f"I1130 {2 + us // 3_600_000_000:02d}:{us // 60_000_000 % 60:02d}:{us // 1_000_000 % 60:02d}.{us % 1_000_000:06d} 4242 train.py:88] "
                        f"step {n} loss 1.2345 lr 3.0e-4 grad_norm 0.87 tokens/s 12345\n")
                if r == culprit and n == lines - 100:
                    f.write(OOM)
    return lines


def run(args: list[str], entries: str) -> tuple[float, float, dict]:
    cmd = [sys.executable, "-c", CHILD, "diagnose", "--entries", entries, "--json", *args]
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    peak = next(line for line in done.stderr.splitlines() if line.startswith("peak-kib"))
    return seconds, int(peak.split()[1]) / 1024, json.loads(done.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--mib", type=float, default=32, help="MiB per rank file (default 32)")
    parser.add_argument("--entries", default=str(REPO / "entries"))
    parser.add_argument("--max-rss", type=float, default=400, help="fail above this peak, in MiB (default 400)")
    args = parser.parse_args()
    culprit = args.ranks // 2 + 1
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "logs"
        folder.mkdir()
        write_logs(folder, args.ranks, args.mib, culprit)
        files = sorted(str(p) for p in folder.iterdir())
        one = Path(tmp) / "all.log"
        with one.open("wb") as out:
            for p in files:
                out.write(Path(p).read_bytes())
        size = one.stat().st_size / 2**20
        s1, rss1, data1 = run([str(one)], args.entries)
        s2, rss2, data2 = run([str(folder)], args.entries)
    v = data2["initiating_rank"]
    print(f"{args.ranks} files, {size:.0f} MiB in all")
    print(f"{'':24} {'seconds':>8} {'MB/s':>7} {'peak RSS MiB':>13}")
    print(f"{'one file (concatenated)':24} {s1:8.1f} {size / s1:7.1f} {rss1:13.0f}")
    print(f"{'merged folder':24} {s2:8.1f} {size / s2:7.1f} {rss2:13.0f}")
    print(f"merge / one file: {s2 / s1:.1f}x the time, {rss2 / rss1:.2f}x the memory; initiating rank {v and v['rank']} (expected {culprit})")
    return 0 if v and v["rank"] == culprit and rss2 <= args.max_rss and data1["matches"] else 1


if __name__ == "__main__":
    sys.exit(main())
