"""The publish build of one or more checkouts against Hugo + Pagefind, alternating.

    python bench/publish.py --count 1000 --rounds 5 [CHECKOUT ...]

Each round runs, for every checkout (default: this one), a cold build with search
(`python -m generator build --no-cache` from the checkout's own folder, with this virtualenv's
Python, into an empty folder), then Hugo and Pagefind over the same entries as Markdown pages
(`run.hugo_project`), with the page cache dropped before each (root on Linux; without it, the
later builds of a long run are slower whichever tool). Prints each build's seconds and peak
RSS, then each checkout's ratio to Hugo + Pagefind per round, and to the first checkout.

Every checkout's generator is compiled first: an uncompiled worktree under
PYTHONDONTWRITEBYTECODE=1 compiles it again in each timed process (about 0.1 s per build).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import run
from corpus import work_corpus


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("checkouts", nargs="*", type=Path, default=[run.REPO])
    p.add_argument("--count", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--workdir", type=Path, default=None)
    args = p.parse_args(argv)
    pagefind = shutil.which("pagefind")
    if not shutil.which("hugo") or not pagefind:
        p.error("needs hugo (Debian's package) and pagefind (npm install pagefind) on the PATH")
    run.DROP_CACHES = os.access("/proc/sys/vm/drop_caches", os.W_OK)
    work, corpus = work_corpus(args.workdir, args.count, "failpedia-publish-")
    hugo_src, hugo_out = run.hugo_project(corpus, work / "hugo"), work / "hugo-public"
    checkouts = [c.resolve() for c in args.checkouts]
    for c in checkouts:
        subprocess.run([run.PY, "-m", "compileall", "-q", str(c / "generator")], check=True)
    ours: dict[Path, list[float]] = {c: [] for c in checkouts}
    theirs: list[float] = []
    for _ in range(args.rounds):
        for i, c in enumerate(checkouts):
            out = work / f"site-{i}"
            shutil.rmtree(out, ignore_errors=True)
            run.fresh()
            seconds, rss = run.measure([run.PY, "-m", "generator", "build", "--no-cache", "--entries", str(corpus), "--out", str(out)], c)
            ours[c].append(seconds)
            print(f"{c}: {seconds:.2f} s, {rss:.0f} MiB", flush=True)
        shutil.rmtree(hugo_out, ignore_errors=True)
        run.fresh()
        h = run.measure(["hugo", "--quiet", "-s", str(hugo_src), "-d", str(hugo_out)])
        f = run.measure([pagefind, "--site", str(hugo_out)])
        theirs.append(h[0] + f[0])
        print(f"hugo {h[0]:.2f} + pagefind {f[0]:.2f} = {h[0] + f[0]:.2f} s, {max(h[1], f[1]):.0f} MiB", flush=True)
    first = ours[checkouts[0]]
    for c in checkouts:
        to_theirs = [a / b for a, b in zip(ours[c], theirs)]
        line = f"{c}: median {statistics.median(ours[c]):.2f} s; / hugo + pagefind " + ", ".join(f"{r:.2f}" for r in to_theirs)
        if c != checkouts[0]:
            line += "; / first checkout " + ", ".join(f"{a / b:.2f}" for a, b in zip(ours[c], first))
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
