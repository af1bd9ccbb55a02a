"""The matcher on real logs: each of tests/logs/NAME.log repeated to `--mib`, fed in 4 MiB reads.

    python bench/diagnose_real_logs.py                      # the three logs of bench/README.md
    python bench/diagnose_real_logs.py --mib 50 oom_grad_accumulation_llama

Reports MiB/s of CPU time in this process (the matcher alone: the compiled definition of entries/
is made first, untimed), the median of `--repeat` runs, and the top diagnosis.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
LOGS = ["loss_scale_collapse_deepspeed_long", "neg_disk_full_checkpoint_long", "nccl_watchdog_timeout_allreduce_hang"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("logs", nargs="*", default=LOGS, help="names of tests/logs/*.log")
    ap.add_argument("--mib", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from generator.site.build import load_catalog
    from generator.diagnosis.matcher import Matcher, matcher_spec, rank_hits
    from generator.site.pages import fingerprint_data

    spec = matcher_spec(fingerprint_data(load_catalog(REPO / "entries")))
    for name in args.logs:
        one = (REPO / "tests" / "logs" / f"{name}.log").read_bytes()
        data = (one * (args.mib * 2**20 // len(one) + 1))[: args.mib * 2**20]
        speeds, top = [], None
        for _ in range(args.repeat):
            started = time.process_time()
            m = Matcher(spec, name)
            for at in range(0, len(data), 4 << 20):
                m.feed(data[at : at + (4 << 20)])
            m.close()
            matches = rank_hits(spec, [m])
            speeds.append(args.mib / (time.process_time() - started))
            top = matches[0].slug if matches else None
        print(f"{name}: {statistics.median(speeds):.1f} MiB/s ({', '.join(f'{s:.1f}' for s in speeds)}), top {top}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
