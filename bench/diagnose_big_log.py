"""Pipe a generated multi-gigabyte log into `failpedia diagnose -` and report time and peak memory.

    python bench/diagnose_big_log.py                 # 2 GiB, the real entries/
    python bench/diagnose_big_log.py --gib 0.5 --entries /tmp/corpus

Nothing is written to disk: the log is training-log noise (with HTML in it), one 64 MiB line
without a newline, 16 MiB of carriage returns, then a CUDA OOM line at the very end, generated
block by block into the child's standard input. The child reports its own peak resident memory
(VmHWM). Exits 1 when the peak passes --max-rss MiB or the OOM line is not found at its line.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHILD = """
import sys
from generator.surfaces.cli import main
code = main(sys.argv[1:])
sys.stdout.flush()
with open("/proc/self/status") as f:
    peak = [line.split()[1] for line in f if line.startswith("VmHWM:")]
sys.stderr.write("peak-kib %s\\n" % peak[0])
sys.exit(code)
"""
LINE = b"2024-05-01 12:00:00 | INFO | step 123456 | loss 1.2345 | lr 3.0e-4 | <img src=x onerror=alert(1)> ok\n"
OOM = b"[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gib", type=float, default=2.0, help="size of the noise in GiB (default 2)")
    parser.add_argument("--entries", default=str(REPO / "entries"), help="entries folder (default: the real one)")
    parser.add_argument("--max-rss", type=float, default=256, help="fail above this peak, in MiB (default 256)")
    args = parser.parse_args()

    block = LINE * (4 * 1024 * 1024 // len(LINE))
    blocks = int(args.gib * 1024 / 4)
    expected_line = blocks * block.count(b"\n") + 2  # the long line, then the OOM line
    size = blocks * len(block) + 64 * 1024 * 1024 + 16 * 1024 * 1024 + 1 + len(OOM)
    cmd = [sys.executable, "-c", CHILD, "diagnose", "--entries", args.entries, "--json", "-"]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=REPO, stdin=subprocess.PIPE, stdout=out, stderr=err)
        assert proc.stdin is not None
        try:
            for _ in range(blocks):
                proc.stdin.write(block)
            proc.stdin.write(b"x" * (64 * 1024 * 1024))
            proc.stdin.write(b"\r" * (16 * 1024 * 1024))
            proc.stdin.write(b"\n" + OOM)
        finally:
            proc.stdin.close()
            proc.wait()
        seconds = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        report = err.read().decode(errors="replace")
        data = json.loads(out.read() or b"{}")
    if "peak-kib" not in report:
        print(report, file=sys.stderr)
        return 1
    peak = int(report.rsplit("peak-kib ", 1)[1].split()[0]) / 1024
    evidence = [e for m in data.get("matches", []) for e in m["evidence"]]
    found = any(e["line"] == expected_line for e in evidence)
    print(f"diagnose: {size / 2**30:.2f} GiB in {seconds:.1f} s ({size / 2**20 / seconds:.0f} MiB/s), peak RSS {peak:.0f} MiB, "
          f"exit {proc.returncode}, OOM line {expected_line:,} {'found' if found else 'NOT FOUND'}")
    return 0 if found and peak <= args.max_rss else 1


if __name__ == "__main__":
    sys.exit(main())
