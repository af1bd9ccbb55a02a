"""Few pages in the build's process, or in a forked pool? (`build.POOL_MIN`)

    python bench/pool_threshold.py --count 10000 --rounds 3

Builds an N-entry corpus (corpus.py) with a build cache and a `Warm`, as the build server does,
then, in that process, renders the first n entry pages of the plan (n = 40, 80, 120, 200) into
a scratch folder with `render_pages`, the search index made as its `meanwhile` (as in a
rebuild): once with every page in this process, once in a forked pool. Prints the seconds of
each, per round.
"""

from __future__ import annotations

import argparse
import gc
import shutil
import sys
import time
from pathlib import Path

import run
from corpus import work_corpus

sys.path.insert(0, str(run.REPO))
from generator.core.config import Config  # noqa: E402
from generator.site import build as B  # noqa: E402
from generator.site import pages as P  # noqa: E402

SIZES = (40, 80, 120, 200)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--count", type=int, default=10000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--workdir", type=Path, default=None)
    args = p.parse_args(argv)
    work, corpus = work_corpus(args.workdir, args.count, "failpedia-pool-")
    seen: dict[str, object] = {}
    plan_pages, render_pages = P.plan_pages, B.render_pages

    def plan(*a: object, **k: object) -> object:
        seen["plan"] = plan_pages(*a, **k)  # type: ignore[arg-type]
        return seen["plan"]

    def render(*a: object, **k: object) -> object:
        seen["renderer"], seen["reader"] = a[0], a[1]
        return render_pages(*a, **k)  # type: ignore[arg-type]

    P.plan_pages, B.render_pages = plan, render  # type: ignore[assignment]
    warm = B.Warm()
    B.build(corpus, work / "site", Config(), search=True, cache_dir=work / "cache", warm=warm)
    if "plan" not in seen:  # a cache from an earlier run: nothing was planned
        first = sorted(corpus.glob("*/*.yaml"))[0]
        first.write_text(first.read_text() + "\n")
        B.build(corpus, work / "site", Config(), search=True, cache_dir=work / "cache", warm=warm)
    warm.settle()
    gc.collect()
    gc.freeze()
    P.plan_pages, B.render_pages = plan_pages, render_pages
    pages = [page for page in seen["plan"].pages if page.template == "entry.html"]  # type: ignore[attr-defined]
    renderer, reader = seen["renderer"], seen["reader"]
    scratch = work / "scratch"
    for r in range(args.rounds):
        for n in SIZES:
            line = []
            for way, least in (("this process", 10**9), ("pool", 1)):
                shutil.rmtree(scratch, ignore_errors=True)
                scratch.mkdir()
                todo = [(page, str(scratch / f"{i}.html")) for i, page in enumerate(pages[r * n:(r + 1) * n])]
                B.POOL_MIN = least
                started = time.perf_counter()
                B.render_pages(renderer, reader, todo, None, keep_reads=True,  # type: ignore[arg-type]
                               meanwhile=lambda: P.search_pages(reader.catalog, None))  # type: ignore[attr-defined]
                line.append(f"{way} {time.perf_counter() - started:.3f} s")
                gc.collect()
            print(f"round {r + 1}, {n} pages: " + ", ".join(line), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
