"""The /diagnose/ page on a 50 MB log in real headless Chromium: time from choosing the file to
the answer on the page, and the worker's own matching time.

    python bench/diagnose_browser.py                   # builds the site from entries/ first
    python bench/diagnose_browser.py --site site --repeat 5 --mib 50

Two logs, written once: `metrics`, the line of tests/test_diagnose_browser.py's large-log test
(HF-style step lines: every one holds a literal of several fingerprints), repeated, then a CUDA
OOM line; and `training`, the synthetic training log of diagnose_speed.py (progress bars with
carriage returns, NCCL INFO, warnings) cut to the same size, with its two error lines at the
end. Each run opens a fresh page, chooses the file and waits for the result; the medians of
`--repeat` runs are shown. Chromium is Debian's (/usr/bin/chromium), as in the tests.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

METRIC_LINE = "2024-05-01 12:00:00 | INFO | step 123456 | loss 1.2345 | lr 3.0e-4 | tokens/s 12345.6 | grad_norm 0.87\n"
OOM_LINE = ("[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.15 GiB "
            "of which 1.20 GiB is free.\n")


def write_logs(work: Path, mib: int) -> dict[str, Path]:
    from diagnose_speed import ERRORS, make_log

    metrics = work / "metrics.log"
    with metrics.open("w") as f:
        for _ in range(mib * 1024 * 1024 // len(METRIC_LINE)):
            f.write(METRIC_LINE)
        f.write(OOM_LINE)
    training = work / "training.log"
    make_log(training, mib + 1)
    data = training.read_bytes()
    cut = data.rfind(b"\n", 0, mib * 1024 * 1024) + 1
    training.write_bytes(data[:cut] + "".join(e + "\n" for e in ERRORS).encode())
    return {"metrics": metrics, "training": training}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--site", type=Path, action="append",
                    help="a built site (default: build entries/ into a temporary folder); several: each run alternates between them")
    ap.add_argument("--mib", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    from browser import CHROMIUM, CHROMIUM_ARGS, serve_dir, wait_until

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        sites = args.site
        if not sites:
            from generator.site.build import build
            from generator.core.config import load_config

            sites = [work / "site"]
            build(REPO / "entries", sites[0], load_config(REPO).with_base_url("http://127.0.0.1/"))
        logs = write_logs(work, args.mib)
        servers = [serve_dir(site) for site in sites]
        runs: dict[tuple[str, int], list[tuple[float, float, str]]] = {}
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for name, log in logs.items():
                for _ in range(args.repeat):
                    for k, (_, url) in enumerate(servers):
                        runs.setdefault((name, k), []).append(run_once(b, url, log, wait_until))
            b.close()
        for server, _ in servers:
            server.shutdown()
    print(f"{'log':9} {'site':24} {'page s':>7} {'worker s':>9}  runs (page s)  status")
    for (name, k), got in runs.items():
        print(f"{name:9} {str(sites[k])[-24:]:24} {statistics.median(r[0] for r in got):7.2f} {statistics.median(r[1] for r in got):9.2f}  "
              f"{', '.join(f'{r[0]:.2f}' for r in got)}  {got[-1][2]}")
    return 0


def run_once(b: Any, url: str, log: Path, wait_until: Any) -> tuple[float, float, str]:
    """A fresh page: choose the file, wait for the answer. (page seconds, worker seconds, status)"""
    page = b.new_page()
    page.goto(url + "diagnose/")
    wait_until(page, "document.querySelector('#diagnose-form').dataset.ready === 'true'")
    started = time.perf_counter()
    page.set_input_files("#log-file", str(log))
    wait_until(page, "Number(document.querySelector('#diagnose-form').dataset.done || 0) >= 1", timeout=300)
    took = time.perf_counter() - started
    status = page.locator("#diagnose-status").inner_text()
    ms = status.rsplit("(", 1)[-1].split(" ms")[0]
    page.close()
    return took, float(ms) / 1000 if ms.isdigit() else float("nan"), status


if __name__ == "__main__":
    sys.exit(main())
