"""One-entry rebuilds of one or more checkouts, alternating: the CLI target of issue 20.

    python bench/rebuild.py --count 10000 --edits 8 [--server] [--no-search] [CHECKOUT ...]

Each checkout (default: this one) gets its own copy of an N-entry corpus (corpus.py), build
cache and site. After a first build and a first edit (a build server plans every page once),
each round edits one entry's summary in every checkout's corpus (the same entry, in an order
that alternates between rounds) and times `python -m generator build` from that checkout's
folder with this virtualenv's Python, 2 s after the write: in a fresh process (also where a large
site goes through the build server by default: FAILPEDIA_BUILD_SERVER=0), or with `--server`
through the build server (started by the first build, stopped at the end). Prints
each build's seconds, then each checkout's median and range.

Every checkout's generator is compiled first: an uncompiled worktree under
PYTHONDONTWRITEBYTECODE=1 compiles it again in each timed process (about 0.1 s per build).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path

import run
from corpus import work_corpus

MARK = "Note: "  # put in front of a summary, and taken out again


def edit(corpus: Path, n: int) -> None:
    """Change the summary of one entry (the n-th of those with a quoted one-line start)."""
    files = [f for f in sorted(corpus.glob("*/*.yaml"))[:400] if "\nsummary: '" in f.read_text()]
    f = files[n % len(files)]
    text = f.read_text()
    marked = f"\nsummary: '{MARK}"
    f.write_text(text.replace(marked, "\nsummary: '") if marked in text else text.replace("\nsummary: '", marked, 1))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("checkouts", nargs="*", type=Path, default=[run.REPO])
    p.add_argument("--count", type=int, default=10000)
    p.add_argument("--edits", type=int, default=8)
    p.add_argument("--server", action="store_true", help="through the build server (build --server)")
    p.add_argument("--no-search", action="store_true")
    p.add_argument("--workdir", type=Path, default=None)
    args = p.parse_args(argv)
    work, corpus = work_corpus(args.workdir, args.count, "failpedia-rebuild-")
    checkouts = [c.resolve() for c in args.checkouts]
    places = {c: work / f"checkout-{i}" for i, c in enumerate(checkouts)}
    for c, place in places.items():
        subprocess.run([run.PY, "-m", "compileall", "-q", str(c / "generator")], check=True)
        shutil.rmtree(place, ignore_errors=True)
        shutil.copytree(corpus, place / "entries")

    def build(c: Path, *extra: str) -> float:
        place = places[c]
        cmd = [run.PY, "-m", "generator", "build", "--entries", str(place / "entries"), "--out", str(place / "site"),
               "--cache-dir", str(place / "cache"), *(["--server"] if args.server else []), *(["--no-search"] if args.no_search else []), *extra]
        started = time.perf_counter()
        # a fresh process even where a large site goes through the build server by default
        done = subprocess.run(cmd, cwd=c, capture_output=True, text=True, env={**os.environ, "FAILPEDIA_BUILD_SERVER": "1" if args.server else "0"})
        seconds = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"{c}: build failed:\n{done.stdout}{done.stderr}")
        return seconds

    times: dict[Path, list[float]] = {c: [] for c in checkouts}
    try:
        for c in checkouts:
            build(c)
            edit(places[c] / "entries", args.edits)
            time.sleep(2)
            build(c)  # a build server's first edit plans every page
        for n in range(args.edits):
            for c in checkouts if n % 2 == 0 else checkouts[::-1]:
                edit(places[c] / "entries", n)
                time.sleep(2)
                times[c].append(build(c))
                print(f"{c}: {times[c][-1]:.2f} s", flush=True)
    finally:
        if args.server:
            for c in checkouts:
                subprocess.run([run.PY, "-m", "generator", "build", "--stop-server", "--cache-dir", str(places[c] / "cache")], cwd=c,
                               capture_output=True)
    for c, seconds in times.items():
        print(f"{c}: median {statistics.median(seconds):.2f} s, {min(seconds):.2f}–{max(seconds):.2f} s over {len(seconds)} edits")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
