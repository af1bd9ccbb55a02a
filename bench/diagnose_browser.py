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
    ap.add_argument("--site", type=Path, help="a built site (default: build entries/ into a temporary folder)")
    ap.add_argument("--mib", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    from browser import CHROMIUM, CHROMIUM_ARGS, serve_dir, wait_until

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        site = args.site
        if site is None:
            from generator.build import build
            from generator.config import load_config

            site = work / "site"
            build(REPO / "entries", site, load_config(REPO).with_base_url("http://127.0.0.1/"))
        logs = write_logs(work, args.mib)
        server, url = serve_dir(site)
        rows = []
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for name, log in logs.items():
                walls, worker_ms, status = [], [], ""
                for _ in range(args.repeat):
                    page = b.new_page()
                    page.goto(url + "diagnose/")
                    wait_until(page, "document.querySelector('#diagnose-form').dataset.ready === 'true'")
                    started = time.perf_counter()
                    page.set_input_files("#log-file", str(log))
                    wait_until(page, "Number(document.querySelector('#diagnose-form').dataset.done || 0) >= 1", timeout=300)
                    walls.append(time.perf_counter() - started)
                    status = page.locator("#diagnose-status").inner_text()
                    ms = status.rsplit("(", 1)[-1].split(" ms")[0]
                    worker_ms.append(float(ms) / 1000 if ms.isdigit() else float("nan"))
                    page.close()
                rows.append((name, log.stat().st_size / 2**20, walls, worker_ms, status))
            b.close()
        server.shutdown()
    print(f"{'log':9} {'MiB':>5} {'page s':>7} {'worker s':>9}  runs (page s)  status")
    for name, size, walls, worker_ms, status in rows:
        print(f"{name:9} {size:5.0f} {statistics.median(walls):7.2f} {statistics.median(worker_ms):9.2f}  "
              f"{', '.join(f'{w:.2f}' for w in walls)}  {status}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
