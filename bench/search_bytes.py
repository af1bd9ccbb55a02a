"""What one search costs the reader: bytes transferred, and time to the first results, on a big synthetic site.

    python bench/search_bytes.py --count 10000          # corpus from entries/, build, measure
    python bench/search_bytes.py --site /tmp/site10k    # measure an already built site

Builds the synthetic corpus of bench/corpus.py (search index included), serves it with the dev
server's own HTTP handler (`failpedia serve`: no caching, no compression) on 127.0.0.1 and opens
/search/?q=... in headless Chromium with an empty cache, once per query. Every response is
counted as it crossed the wire, and again as a server that gzips text (like GitHub Pages) would
send it. The page itself (HTML, CSS, site scripts) is reported apart from what the search loads.
"First results" is the time from the start of the navigation to the first result in the list
(a MutationObserver in the page records it). Then a second query is typed into the same page,
and what it adds is reported too.
"""

from __future__ import annotations

import argparse
import gzip
import os
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote_plus, urlsplit

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests"))

QUERIES = [
    "cuda oom",
    "#ddp #oom bucket",
    "watchdog",
    "NCCL_BUFFSIZE",
    "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 milliseconds before timing out.",
]
PAGE = (".html", ".css", "site.js", "theme.js", "searchbox.js", "favicon")
SECOND = "nccl timeout"


def build_site(source: Path, count: int, work: Path) -> Path:
    from corpus import make_corpus

    from generator.site.build import build
    from generator.core.config import load_config

    corpus = work / "entries"
    make_corpus(source, count, corpus)
    started = time.perf_counter()
    out = work / "site"
    build(corpus, out, load_config(REPO).with_base_url("http://127.0.0.1/"))
    print(f"built {count} entries in {time.perf_counter() - started:.1f} s into {out}")
    return out


def _wire(path: str, body: bytes) -> int:
    """The size a gzip-serving host would send."""
    return min(len(body), len(gzip.compress(body, 6)))


# Runs in the page before its scripts: the time of the first result in the list.
FIRST_RESULT = """
new MutationObserver(function (records, observer) {
  if (document.querySelector('#search-results .result')) { window.__firstResult = performance.now(); observer.disconnect(); }
}).observe(document, { childList: true, subtree: true });
"""


def _dev_server(site: Path):  # type: ignore[no-untyped-def]
    """The site served by `failpedia serve`'s HTTP handler (its builder is not run)."""
    import threading

    from generator.core.config import Config
    from generator.surfaces.serve import Builder, _bind

    httpd = _bind("127.0.0.1", 0)
    httpd.builder = Builder(site, site, Config(base_url="http://127.0.0.1/"))
    httpd.session = "bench"
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}/"


def measure(site: Path, queries: list[str], repeat: int = 5) -> None:
    from browser import CHROMIUM, CHROMIUM_ARGS
    from playwright.sync_api import sync_playwright

    server, url = _dev_server(site)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for q in queries:
                ctx = browser.new_context()
                ctx.add_init_script(FIRST_RESULT)
                page = ctx.new_page()
                seen: list[tuple[str, int, int, int]] = []

                def done(request) -> None:  # type: ignore[no-untyped-def]
                    response = request.response()
                    if response is None:
                        return
                    sizes = request.sizes()
                    body = response.body()
                    path = urlsplit(request.url).path
                    seen.append((path, sizes["responseBodySize"] + sizes["responseHeadersSize"], len(body), _wire(path, body)))

                page.on("requestfinished", done)
                started = time.perf_counter()
                page.goto(url + "search/?q=" + quote_plus(q))
                page.wait_for_selector('#search-results[aria-busy="false"]', state="attached", timeout=120_000)
                elapsed = time.perf_counter() - started
                page.wait_for_timeout(300)  # let late requests finish
                results = page.locator(".result").count()
                status = page.locator("#search-status").inner_text()
                first = page.evaluate("window.__firstResult || 0") / 1000
                search = [s for s in seen if not s[0].endswith(PAGE) and not s[0].startswith("/__failpedia/")]
                shell = [s for s in seen if s[0].endswith(PAGE) or s[0].startswith("/__failpedia/")]
                print(f"\nquery {q[:70]!r}: {status} ({results} shown); first results at {first:.2f} s, settled in {elapsed:.2f} s")
                print(f"  search: {len(search)} requests, {sum(s[1] for s in search):,} bytes transferred; "
                      f"{sum(s[3] for s in search):,} bytes from a gzip-serving host")
                print(f"  page:   {len(shell)} requests, {sum(s[1] for s in shell):,} bytes transferred; "
                      f"{sum(s[3] for s in shell):,} bytes from a gzip-serving host")
                print(f"  all:    {sum(s[1] for s in seen):,} bytes transferred; {sum(s[3] for s in seen):,} bytes from a gzip-serving host")
                for path, wire, raw, gz in sorted(search, key=lambda s: -s[1]):
                    print(f"    {wire:>9,}  {gz:>9,}  {path}")
                before = len(seen)
                page.fill("#search-q", SECOND)
                page.press("#search-q", "Enter")
                page.wait_for_selector('#search-results[aria-busy="false"]', state="attached", timeout=120_000)
                page.wait_for_timeout(300)
                more = seen[before:]
                print(f"  then {SECOND!r} in the same page: {len(more)} requests, {sum(s[1] for s in more):,} bytes transferred; "
                      f"{sum(s[3] for s in more):,} bytes from a gzip-serving host")
                ctx.close()
                times = []
                for _ in range(repeat):  # each in a fresh context: an empty cache every time
                    ctx = browser.new_context()
                    ctx.add_init_script(FIRST_RESULT)
                    page = ctx.new_page()
                    page.goto(url + "search/?q=" + quote_plus(q))
                    page.wait_for_selector('#search-results[aria-busy="false"]', state="attached", timeout=120_000)
                    times.append(page.evaluate("window.__firstResult || 0") / 1000)
                    ctx.close()
                if times:
                    times.sort()
                    print(f"  first results, {repeat} more runs with an empty cache: median {times[len(times) // 2]:.2f} s "
                          f"(min {times[0]:.2f}, max {times[-1]:.2f}); load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
            browser.close()
    finally:
        server.shutdown()
        server.server_close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--count", type=int, default=10_000, help="entries in the synthetic corpus (default: 10000)")
    p.add_argument("--from", dest="source", type=Path, default=REPO / "entries", help="the entries to clone (default: entries/)")
    p.add_argument("--site", type=Path, help="measure this built site instead of building one")
    p.add_argument("--keep", type=Path, help="build into this folder (kept) instead of a temporary one")
    p.add_argument("--query", action="append", help="a query to measure (repeatable; default: five typical ones)")
    p.add_argument("--repeat", type=int, default=5, help="more runs per query for the time to first results (default: 5)")
    args = p.parse_args(argv)
    queries = args.query or QUERIES
    if args.site:
        measure(args.site, queries, args.repeat)
        return 0
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        measure(build_site(args.source, args.count, args.keep), queries, args.repeat)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        measure(build_site(args.source, args.count, Path(tmp)), queries, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
