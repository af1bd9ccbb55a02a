"""Benchmark `failpedia build` on a synthetic corpus, next to Hugo on the same content.

    python bench/run.py --count 10000            # one size
    python bench/run.py --count 1000,5000,10000  # linear growth
    python bench/run.py --count 2000 --repeat 3 --skip-hugo

For each size it times, each the median of --repeat runs (peak RSS of the child too):
cold full build (--no-cache --no-search), no-op rebuild, rebuild after one entry changed (in a
fresh process, and through the build server: `build --server`, each edit 2 s after the last build), after
the tag registry changed, after a template changed, a cold build with search, one entry changed
in a build with search (the default), the search indexing step alone, Hugo building the same entries converted to Markdown pages with a tags
taxonomy, and Hugo followed by Pagefind (`pagefind` on the PATH: `npm install pagefind`) over
Hugo's pages, alternating with our cold build with search. Ratios against Hugo are printed,
since they hold on a noisy shared machine where seconds do not.

`--drop-caches` (root on Linux): drop the page cache before each cold build of either tool. On
these virtual machines the kernel time of writing a site grows with every site written and
deleted since the page cache was last dropped (bench/README.md has the figures), so without it
the later runs of a long benchmark are slower than the first, whichever tool.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from corpus import make_corpus  # noqa: E402

PY = sys.executable


def measure(cmd: list[str], cwd: Path | None = None) -> tuple[float, float]:
    """Run a command; return (wall seconds, peak RSS in MiB of the process tree's largest member)."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - started
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"command failed: {' '.join(cmd)}\n{err[-2000:]}")
    return elapsed, usage.ru_maxrss / 1024


DROP_CACHES = False  # --drop-caches


def fresh() -> None:
    """Before a cold build (--drop-caches): write back and drop the page cache."""
    if DROP_CACHES:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("1\n")


def _median(runs: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(t for t, _ in runs), max(r for _, r in runs)


def median_of(repeat: int, prepare, cmd: list[str], cwd: Path | None = None) -> tuple[float, float]:
    runs = []
    for _ in range(repeat):
        if prepare:
            prepare()
        runs.append(measure(cmd, cwd))
    return _median(runs)


def hugo_project(corpus: Path, root: Path) -> Path:
    """The same entries as Markdown pages with tags and categories taxonomies."""
    if root.exists():
        shutil.rmtree(root)
    (root / "content").mkdir(parents=True)
    (root / "layouts/_default").mkdir(parents=True)
    (root / "config.toml").write_text('baseURL = "http://localhost/"\ntitle = "bench"\n[taxonomies]\n  tag = "tags"\n  category = "categories"\n')
    (root / "layouts/_default/baseof.html").write_text(
        "<!DOCTYPE html><html><head><title>{{ .Title }}</title></head><body>{{ block \"main\" . }}{{ end }}</body></html>\n")
    (root / "layouts/_default/single.html").write_text(
        '{{ define "main" }}<h1>{{ .Title }}</h1>{{ .Content }}<ul>{{ range .Params.tags }}<li><a href="{{ "tags/" | relURL }}{{ . | urlize }}/">{{ . }}</a></li>{{ end }}</ul>{{ end }}\n')
    (root / "layouts/_default/list.html").write_text(
        '{{ define "main" }}<h1>{{ .Title }}</h1><ul>{{ range .Pages }}<li><a href="{{ .RelPermalink }}">{{ .Title }}</a> {{ .Summary }}</li>{{ end }}</ul>{{ end }}\n')
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for path in sorted(corpus.glob("*/*.yaml")):
        e = yaml.load(path.read_text(), Loader=loader)
        body = [e["summary"], "", "## Why it happens", e["mechanism"], "## Symptoms"]
        body += [f"- **{s['signal']}** — {s['why']}" for s in e["symptoms"]]
        body += ["", "## Fix", e["fix"]["summary"], ""] + [f"1. {s}" for s in e["fix"]["steps"]]
        for c in e["fix"].get("code", []):
            body += ["", f"```{c['language']}", c["code"].rstrip(), "```"]
        body += ["", "## FAQ"] + [f"### {q['q']}\n\n{q['a']}\n" for q in e.get("faq", [])]
        front = {"title": e["title"], "tags": e["tags"], "categories": [path.parent.name]}
        (root / "content" / f"{path.stem}.md").write_text("---\n" + yaml.safe_dump(front) + "---\n" + "\n".join(body) + "\n")
    return root


class _Progress(dict):
    """Results that are also printed as they come (a long run that fails later keeps its figures)."""

    def __setitem__(self, name: str, value: tuple[float, float]) -> None:
        print(f"  {name}: {value[0]:.2f} s, {value[1]:.0f} MiB", file=sys.stderr, flush=True)
        super().__setitem__(name, value)


def bench_size(count: int, repeat: int, work: Path, skip_hugo: bool, search_repeat: int = 1) -> dict[str, tuple[float, float]]:
    corpus = work / f"corpus-{count}"
    make_corpus(REPO / "entries", count, corpus)
    site, cache, templates = work / "site", work / "cache", work / "templates"
    shutil.copytree(REPO / "templates", templates, dirs_exist_ok=True)
    base = [PY, "-m", "generator", "build", "--entries", str(corpus), "--out", str(site), "--no-search",
            "--cache-dir", str(cache), "--templates", str(templates), "--no-server"]
    results: dict[str, tuple[float, float]] = _Progress()

    def clear_cache() -> None:
        shutil.rmtree(cache, ignore_errors=True)

    def start_cold() -> None:
        # Both tools start a cold build from an empty output folder: Hugo's is removed before each
        # run, so ours is too (replacing a 10,000-entry site would add the deletion of 24,000
        # files to our time only).
        clear_cache()
        shutil.rmtree(site, ignore_errors=True)
        fresh()

    # Hugo and the cold build alternate, so each ratio compares two runs made seconds apart.
    hugo_out = work / "hugo-public"
    hugo = None
    if not skip_hugo and shutil.which("hugo"):
        hugo = ["hugo", "--quiet", "-s", str(hugo_project(corpus, work / "hugo")), "-d", str(hugo_out)]
    pairs: list[tuple[tuple[float, float], tuple[float, float] | None]] = []
    for _ in range(repeat):
        theirs = None
        if hugo:
            shutil.rmtree(hugo_out, ignore_errors=True)
            fresh()
            theirs = measure(hugo)
        start_cold()
        pairs.append((measure(base + ["--no-cache"], REPO), theirs))
    if hugo:
        results["hugo build"] = _median([h for _, h in pairs if h])
        print(f"  hugo wrote {sum(1 for _ in hugo_out.rglob('index.html'))} pages; cold/hugo per pair: "
              + ", ".join(f"{c[0] / h[0]:.2f}" for c, h in pairs if h), file=sys.stderr)
    results["cold build (no cache)"] = _median([c for c, _ in pairs])
    measure(base, REPO)  # fill the cache
    results["no-op rebuild"] = median_of(repeat, None, base, REPO)

    one = sorted(corpus.glob("*/*.yaml"))[count // 2]
    original = one.read_text()
    counter = iter(range(10**6))

    def touch_entry() -> None:
        one.write_text(original.replace("summary: ", f"summary: Edit {next(counter)}. ", 1))

    results["one entry changed"] = median_of(repeat, touch_entry, base, REPO)
    # The same through the build server (`build --server`), in its steady state: started by a
    # first build (a no-op), which plans nothing; the first edit after it plans every page (printed
    # apart); then each edit comes 2 s after the last build, as edits do.
    served = [*base[:-1], "--server", "--server-idle", "600"]
    measure(served, REPO)
    touch_entry()
    first = measure(served, REPO)
    print(f"  build server, its first edit: {first[0]:.2f} s", file=sys.stderr)

    def touch_entry_later() -> None:
        time.sleep(2)
        touch_entry()

    results["one entry changed, build server"] = median_of(repeat, touch_entry_later, served, REPO)
    measure(base + ["--stop-server"], REPO)
    tags = corpus / "tags.yaml"
    tags_text = tags.read_text()

    def touch_tags() -> None:
        tags.write_text(tags_text.replace("description: ", f"description: Edit {next(counter)}. ", 1))

    results["tag registry changed"] = median_of(repeat, touch_tags, base, REPO)
    tpl = templates / "entry.html"
    tpl_text = tpl.read_text()

    def touch_template() -> None:
        tpl.write_text(tpl_text + f"\n{{# edit {next(counter)} #}}\n")

    results["template changed"] = median_of(repeat, touch_template, base, REPO)
    if search_repeat < 1:
        return results
    # With search: the build also writes the search index (search/: its terms, shards and doc files).
    searched = work / "site-search"
    with_search = [a for a in base if a != "--no-search"] + ["--no-cache"]
    with_search[with_search.index(str(site))] = str(searched)
    pagefind = shutil.which("pagefind") if hugo else None
    published: list[tuple[tuple[float, float], tuple[float, float] | None]] = []
    for _ in range(search_repeat):
        # Hugo + Pagefind, the publish build a Hugo site with search runs, alternates with ours.
        theirs = None
        if hugo and pagefind:
            shutil.rmtree(hugo_out, ignore_errors=True)
            fresh()
            h = measure(hugo)
            f = measure([pagefind, "--site", str(hugo_out)])
            theirs = (h[0] + f[0], max(h[1], f[1]))
        shutil.rmtree(searched, ignore_errors=True)
        fresh()
        published.append((measure(with_search, REPO), theirs))
    results["cold build with search"] = _median([c for c, _ in published])
    if any(t for _, t in published):
        results["hugo + pagefind"] = _median([t for _, t in published if t])
        print("  with search / hugo + pagefind per pair: " + ", ".join(f"{c[0] / t[0]:.2f}" for c, t in published if t), file=sys.stderr)
    # The default `failpedia build` keeps the search index: one entry changed, with it.
    indexed = [a for a in base if a != "--no-search"]
    indexed[indexed.index(str(site))], indexed[indexed.index(str(cache))] = str(searched), str(work / "cache-search")
    measure(indexed, REPO)  # fill its cache
    results["one entry changed, with search"] = median_of(search_repeat, touch_entry, indexed, REPO)
    results["search indexing alone"] = median_of(
        search_repeat, None,
        [PY, "-c", "from pathlib import Path; from generator.site.build import load_catalog; from generator.search.files import search_files; "
         f"search_files(load_catalog(Path({str(corpus)!r})), jobs=None)"], REPO
    )
    return results


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--count", default="10000", help="entries, or a comma-separated list of sizes")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--search-repeat", type=int, default=1, help="runs of the two search steps (minutes each at 10,000); 0 skips them")
    p.add_argument("--skip-hugo", action="store_true")
    p.add_argument("--workdir", type=Path, default=None)
    p.add_argument("--drop-caches", action="store_true", help="drop the page cache before each cold build of either tool (root, Linux)")
    args = p.parse_args(argv)
    global DROP_CACHES
    DROP_CACHES = args.drop_caches
    if DROP_CACHES and not os.access("/proc/sys/vm/drop_caches", os.W_OK):
        p.error("--drop-caches needs root on Linux (/proc/sys/vm/drop_caches)")
    work = args.workdir or Path(tempfile.mkdtemp(prefix="failpedia-bench-"))
    print(f"cores: {os.cpu_count()}; work dir: {work}", file=sys.stderr)
    # The generator as installed: pip writes bytecode for what it installs, but an editable
    # checkout under PYTHONDONTWRITEBYTECODE=1 (set on these machines) would compile every module
    # again in each timed process, about 0.1 s of each run.
    subprocess.run([PY, "-m", "compileall", "-q", str(REPO / "generator")], check=True)
    for count in [int(c) for c in args.count.split(",")]:
        print(f"== {count} entries, median of {args.repeat} ==", file=sys.stderr)
        results = bench_size(count, args.repeat, work, args.skip_hugo, args.search_repeat)
        hugo = results.get("hugo build")
        print(f"\n{count:,} entries")
        print(f"{'step':28} {'seconds':>9} {'peak RSS MiB':>13} {'vs hugo':>8}")
        for name, (sec, rss) in results.items():
            ratio = f"{sec / hugo[0]:.2f}" if hugo else "-"
            print(f"{name:28} {sec:9.2f} {rss:13.0f} {ratio:>8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
