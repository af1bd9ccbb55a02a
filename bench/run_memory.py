"""`failpedia run` on a job that prints a lot: wall time and the wrapper's peak RSS, next to the
same job with its output sent straight to /dev/null (the cost of passing it through and matching).

    .venv/bin/python bench/run_memory.py --mib 1024
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

JOB = r'''
import sys
mib = int(sys.argv[1])
line = b"[rank%d]: {'loss': 2.3141, 'grad_norm': 1.25, 'learning_rate': 1e-05, 'epoch': 0.12} 100%%|#####| 12/12 [00:01<00:00]\n"
block = b"".join(line % (i % 8) for i in range(8192))
out = sys.stdout.buffer
for _ in range(mib * 2**20 // len(block)):
    out.write(block)
out.write(b"[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB.\n")
out.flush()
sys.exit(1)
'''


def measure(argv: list[str]) -> tuple[float, float, int]:
    """Wall seconds, peak RSS (MiB) of the process tree's largest process, exit code."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    with open(os.devnull, "wb") as null:
        code = subprocess.run(argv, stdout=null, stderr=subprocess.PIPE, cwd=REPO).returncode
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, max(peak, before) / 1024, code


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--mib", type=int, default=1024, help="how much the job prints (MiB)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        job = Path(tmp) / "job.py"
        job.write_text(JOB)
        plain = measure([sys.executable, str(job), str(args.mib)])
        report = Path(tmp) / "run.json"
        wrapped = measure([sys.executable, "-m", "generator", "run", "--json", str(report), "--", sys.executable, str(job), str(args.mib)])
        data = json.loads(report.read_text())
    print(f"job alone:        {plain[0]:6.1f} s  exit {plain[2]}")
    print(f"failpedia run:    {wrapped[0]:6.1f} s  exit {wrapped[2]}  peak RSS {wrapped[1]:.0f} MiB  "
          f"({args.mib / wrapped[0]:.0f} MiB/s passed through)")
    matched = (data["printed_bytes"] - data["skipped_bytes"]) / 2**20
    print(f"matched {matched:.0f} of {data['printed_bytes'] / 2**20:.0f} MiB (the rest counted, not read: the job printed "
          f"faster than the matcher reads); diagnosis: {data['matches'][0]['slug'] if data['matches'] else None}, "
          f"rank {data['initiating_rank']}")


if __name__ == "__main__":
    main()
