"""The pipeline: read → catalog (load + validate + cross-entry) → pages → render → write.

`build()` reads like the house: each stage is a function in its own module, data flows one way.
The build cache (cache.py) and the worker pool (parallel.py) only decide what can be skipped or
spread over the cores; the output is the same byte for byte.
"""

from __future__ import annotations

import gc
import json
import os
import time
from collections.abc import Callable, Iterator, Set as AbstractSet
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from .cache import BuildCache, code_version, digest, input_stamp
from ..core.config import TEMPLATES, Config, require_templates
from .gitdates import git_dates, git_head
from ..core.parallel import run_parallel, start_parallel
from ..core.problems import BuildFailed, FailpediaError
from .write import SiteWriter, identity, scan_site, write_file

if TYPE_CHECKING:
    from ..core.catalog import Catalog, ParseResult
    from .pages import Page
    from .reads import Made, Read, Reader
    from .reuse import Reuse
    from ..core.read import FileSig, Source
    from .render import Renderer

# The stages (pydantic, jinja2, markdown-it, Pygments: slow imports) load only once a
# build has work to do, so a no-op rebuild answers before importing them.

__all__ = ["BuildResult", "Warm", "build", "keyed", "load_catalog", "page_key", "page_plans", "parse_one", "rare_collections", "render_pages"]

DEFAULT_CACHE = Path(".cache") / "build"  # what the CLI uses unless --no-cache or --cache-dir


@dataclass(frozen=True)
class BuildResult:
    out: Path
    pages: int  # HTML pages
    files: int  # every file in the site
    warnings: int  # how many ('failpedia check' lists them)
    rendered: int = 0  # files rendered in this build
    reused: int = 0  # files kept from the previous site (their inputs did not change)
    unchanged: bool = False  # nothing changed: the site was left as it was
    entries: int = 0  # entry pages (what a search index must hold)


@dataclass
class Warm:
    """What a process that runs one build after another (the build server, surfaces/buildserver.py)
    keeps from each to the next, in memory: the build cache as last saved (not loaded again while
    no other build has saved to its folder), the plan (reuse.Reuse: its pages and digests are
    taken over where their inputs are equal) and the renderer (while the templates and settings
    stay). A build given a `Warm` leaves its cache save in `pending`, for the caller to run once
    it has answered (`settle`); the next build settles it first."""

    cache: BuildCache | None = None
    parsed: dict[tuple[str, str], ParseResult] | None = None  # (entry file, digest) → its parse result, from the cache
    reuse: Reuse | None = None
    renderer: tuple[str, Renderer] | None = None  # (the templates' stamp and the settings, the renderer)
    pending: Callable[[], None] | None = None

    def settle(self) -> None:
        pending, self.pending = self.pending, None
        if pending is not None:
            pending()

    def drop(self) -> None:
        """Forget everything (a build failed part way: what it held may be half made)."""
        self.cache = self.parsed = self.reuse = self.renderer = self.pending = None


def load_catalog(entries: Path) -> Catalog:
    """Read and validate every entry; raises BuildFailed with every problem."""
    from ..core.catalog import build_catalog
    from ..core.read import read_source

    return build_catalog(read_source(entries))


def _parse_all(source: Source, hashes: dict[str, str], cache: BuildCache, jobs: int | None,
               held: dict[tuple[str, str], ParseResult] | None = None) -> dict[str, ParseResult]:
    """Every entry file's parse result: from the cache when its bytes (hash) are known, else
    parsed (in parallel when there are many). `held`: the last build's results of the files
    it did not read (by path and digest), taken over as they are."""
    from ..core.read import read_entry
    from ..core.validate import Body, Parsed

    results: dict[str, ParseResult] = {}
    misses = []
    for path, category, slug, raw in source.entries:
        key = hashes[path]
        if raw is None and held is not None and (path, key) in held:
            results[path] = held[path, key]
            continue
        hit = cache.get(key)
        if hit is not None:
            (positions, head), blob = hit
            again = raw if raw is not None else partial(read_entry, source, category, slug)
            results[path] = (Parsed(Body.pickled(partial(_blob, blob, again, path, key)), positions, head), [])  # read when a page needs it
        else:
            misses.append((path, raw if raw is not None else read_entry(source, category, slug), key))
    parsed = run_parallel(partial(parse_one, kept=cache.enabled), [(p, raw) for p, raw, _ in misses], jobs=jobs, min_items=64)
    for (path, _raw, key), result in zip(misses, parsed):
        results[path] = result
        done = result[0]
        if done is not None and cache.enabled:
            cache.put(key, (done.loaded, done.head), done.body.blob())  # get() hands the blob back through a callable
    return results


def _blob(cached: Callable[[], bytes], raw: bytes | Callable[[], bytes], path: str, key: str) -> bytes:
    """An entry's pickled body from the cache, or (the cache file lost or altered since the
    build started) from parsing the file again: its bytes, or (a file the build did not read,
    since it had not changed) the file read now."""
    try:
        return cached()
    except FailpediaError:
        if callable(raw):
            raw = raw()
            if digest(raw) != key:
                raise FailpediaError(f"{path} changed during the build; build again") from None
        parsed, _ = parse_one((path, raw), kept=True)
        if parsed is None:  # its bytes passed before: cannot happen
            raise FailpediaError(f"{path}: the build cache disagrees with the file; build again with --no-cache") from None
        return parsed.body.blob()


SETTLED_NS = 2_000_000_000  # a file changed this shortly before the build read it may change again unseen


def _file_records(source: Source, hashes: dict[str, str], cache: BuildCache, started: int) -> dict[str, tuple[FileSig, str]]:
    """What the next build may skip reading: each entry file's signature and digest. A file read
    within SETTLED_NS of its last change is left out (read again next time): a second write in
    the same tick of the file system's clock, of the same size, would keep its signature."""
    records = {}
    for path, _category, _slug, raw in source.entries:
        if raw is None:
            records[path] = cache.files[path]
        elif (sig := source.signatures.get(path)) is not None and max(sig[1], sig[2]) < started - SETTLED_NS:
            records[path] = (sig, hashes[path])
    return records


def parse_one(item: tuple[str, bytes], kept: bool) -> ParseResult:
    """Parse in a worker; only the positions later stages use travel back (a tenth of the pickle).
    For the build cache (`kept`), the entry travels with its page's HTML fragments, which the
    cache keeps: a later build that re-renders the page for another reason (a template edit)
    needs no markdown. A cold build renders them with the page instead (less to hold)."""
    from ..core.validate import Body, parse_entry

    path, raw = item
    parsed, problems = parse_entry(raw, path)
    if parsed is None:
        return None, problems
    if kept:
        from .pages import entry_fragments

        entry = parsed.body.entry
        parsed = replace(parsed, body=Body(entry, entry_fragments(entry)))
    return parsed.slim(), problems


def page_plans(pages: list[Page], config: Config, search: bool, templates: Renderer, reuse: Reuse | None = None) -> dict[str, str]:
    """The digest of each rendered page's plan (reads.plan_digest): the site-wide salt (the
    generator's code and the settings), its path, templates and planned context, and the
    function and arguments of its `make` or `body`. With `reuse` (the plan's), the digest of a
    page taken over from the last plan, under the same salt and templates, is taken over too."""
    from .reads import plan_digest
    from .reuse import Reuse

    reuse = reuse or Reuse()
    salt = digest(code_version(), repr(config), str(search))
    return {
        p.path: reuse(f"plan:{p.path}", plan_digest, salt, p.path, templates.template_key(p.template) if p.template else "", p.context, p.make or p.body)
        for p in pages if p.template is not None or callable(p.body)
    }


def page_key(page: Page, plan: str, reader: Reader, before: Made | None, key_before: str | None = None,
             stale: AbstractSet[str | int] = frozenset()) -> str | None:
    """A rendered page's key: its plan and the current values (by the plan's `reader`) of the
    look-ups it made when it last rendered (`before`; None: unknown, so no key, and the page
    renders). The key it had (`key_before`) stands when its plan is the same and none of its
    look-ups' subjects is `stale`."""
    if not page.reads_catalog:
        return plan  # it reads nothing
    if before is None:
        return None
    if key_before is not None and before.plan == plan and stale.isdisjoint(before.subjects):
        return key_before
    return reader.key(plan, before.reads)


def keyed(page: Page, plan: str, reader: Reader, reads: tuple[Read, ...]) -> tuple[str, Made]:
    """A page just rendered: its key, made from what it looked up, and that record for the next build."""
    from .reads import Made

    made = Made.of(plan, reads)
    key = page_key(page, plan, reader, made)
    assert key is not None  # its look-ups are known now
    return key, made


def _held(parsed: dict[str, ParseResult], hashes: dict[str, str]) -> dict[tuple[str, str], ParseResult]:
    """The parse results a build server keeps for the next build: those made from the cache."""
    return {(path, hashes[path]): r for path, r in parsed.items() if r[0] is not None and r[0].body.elsewhere}


def _renderer(config: Config, templates: Path, cache: BuildCache, warm: Warm | None) -> Renderer:
    """The renderer (its compiled templates and template keys): the one `warm` holds while the
    templates and settings are the same, else a new one (which `warm` then holds)."""
    from .render import Renderer, TemplateCache, static_files

    if warm is None:
        return Renderer(config, templates, TemplateCache(cache) if cache.enabled else None)
    key = input_stamp([templates], repr(config))
    if warm.renderer is None or warm.renderer[0] != key:
        static_files.cache_clear()  # the static files are read again with the templates
        warm.renderer = (key, Renderer(config, templates, TemplateCache(cache) if cache.enabled else None))
    return warm.renderer[1]


def _identity(key: str, path: str) -> str:
    """A page's key plus the identity of the file this build wrote for it (write.identity)."""
    try:
        return f"{key}:{identity(os.stat(path))}"
    except OSError:
        return key


def render_pages(renderer: Renderer, reader: Reader, todo: list[tuple[Page, str]], jobs: int | None, keep_reads: bool = True,
                 ) -> list[tuple[Read, ...]]:
    """Render each page straight into the place reserved for it (SiteWriter.reserve), in forked
    workers when there are many and no other thread runs, but for the `site_wide` pages, whose
    memoised parts the build cache keeps; returns what each page looked up (nothing, without
    `keep_reads`: a cold build keeps no keys and no memo)."""
    global _RENDERER, _READER
    _RENDERER, _READER = renderer, reader
    for name in sorted({p.template for p, _ in todo if p.template}):
        renderer.load(name)  # compiled once, before the workers fork
    here = [i for i, (page, _) in enumerate(todo) if page.site_wide] if keep_reads else []  # a cold build keeps no memo either
    made = {i: _render_to(todo[i]) for i in here}
    rest = [i for i in range(len(todo)) if i not in made]
    made.update(zip(rest, run_parallel(_render_to if keep_reads else _render_only, [todo[i] for i in rest], jobs=jobs, min_items=32)))
    return [made[i] for i in range(len(todo))]


def _render_to(item: tuple[Page, str]) -> tuple[Read, ...]:
    """Render one page straight into its place in the new site (runs in a worker)."""
    page, target = item
    data, reads = _RENDERER.render_read(page, _READER)
    write_file(target, data, page.path)
    return reads


def _render_only(item: tuple[Page, str]) -> tuple[Read, ...]:
    _render_to(item)
    return ()


_RENDERER: Renderer  # set before the workers fork, so they inherit them
_READER: Reader


@contextmanager
def rare_collections() -> Iterator[None]:
    """A build allocates millions of long-lived objects (heads, models, pages) and makes few
    reference cycles. At CPython's default (a collection every 700 allocations) the collector
    scans them over and over (most of the time that unpickling the cached entries takes).
    Collect every 100,000 allocations instead, and restore the caller's setting after."""
    old = gc.get_threshold()
    gc.set_threshold(100_000, old[1], old[2])
    try:
        yield
    finally:
        gc.set_threshold(*old)


def build(
    entries: Path,
    out: Path,
    config: Config,
    templates: Path = TEMPLATES,
    search: bool = True,
    cache_dir: Path | None = None,
    jobs: int | None = None,
    progress: Callable[[str], None] | None = None,
    warm: Warm | None = None,
    plan_only: bool = False,
) -> BuildResult:
    """The whole pipeline. `search=False` leaves out the search index (search/); `cache_dir=None`
    is a cold build that neither reads nor writes the cache; `jobs` caps the worker processes;
    `progress` hears what stage the build is at (the CLI shows it on a terminal); `warm`: what the
    last build in this process kept (see Warm), taken over and replaced. `plan_only` (with `warm`):
    read, check and plan, write nothing, and keep the plan in `warm` (a build server's idle time
    after a build that had nothing to do, so that the build after an edit plans only what changed)."""
    if warm is not None:
        warm.settle()
    with rare_collections():
        try:
            return _build(entries, out, config, templates, search, cache_dir, jobs, progress or (lambda _: None), warm, plan_only)
        except BaseException:
            if warm is not None:
                warm.drop()
            raise


def _build(
    entries: Path, out: Path, config: Config, templates: Path, search: bool, cache_dir: Path | None, jobs: int | None,
    progress: Callable[[str], None], warm: Warm | None, plan_only: bool = False,
) -> BuildResult:
    require_templates(templates)
    held = warm is not None and warm.cache is not None and warm.cache.current(cache_dir)
    if warm is not None and not held:
        warm.drop()  # another build saved to the cache folder since (or a first build): nothing held is current
    cache = warm.cache if warm is not None and warm.cache is not None else BuildCache.open(cache_dir)
    if warm is not None:
        warm.cache = cache
    out_abs = out.resolve() if out.exists() else out.absolute()
    stamp = input_stamp(
        [entries, templates, Path(__file__).resolve().parent.parent],  # generator/, every package
        json.dumps([repr(config), search, str(out_abs), git_head(entries)]),
    )
    if not plan_only and cache_dir is not None and stamp == cache.stamp and cache.site == str(out_abs) and out_abs.is_dir():
        html = sum(1 for p in cache.pages if p.endswith(".html"))
        return BuildResult(out_abs, html, len(cache.pages), 0, rendered=0, unchanged=True, entries=cache.entries)

    from ..core.catalog import build_catalog
    from .markdown import pygments_css
    from .pages import plan_pages, search_pages
    from ..core.read import read_source
    from .render import static_files

    # An incremental build updates the site in place. What the site holds is scanned on another
    # core meanwhile: the files this build must delete, and those changed since they were written.
    same_site = cache.site == str(out_abs)  # the page keys describe this output folder
    update = bool(cache.pages) and same_site and out_abs.is_dir() and not plan_only
    scanning = start_parallel(scan_site, str(out_abs), cache.pages, jobs=jobs) if update else None
    cache.load_parsed()
    started = time.time_ns()
    source = read_source(entries, known=cache.known_files())
    hashes = {  # each file read is hashed once; one not read has the digest the cache knows it by
        path: digest(raw) if raw is not None else cache.files[path][1] for path, _category, _slug, raw in source.entries
    }
    progress(f"checking {len(source.entries)} entries")
    parsed = _parse_all(source, hashes, cache, jobs, warm.parsed if warm is not None else None)
    try:
        catalog = build_catalog(source, parsed, cache.memo if cache.enabled else None)
    except BuildFailed:
        cache.save_parsed(set(hashes.values()))  # the valid files stay known
        raise
    dates = git_dates(entries)
    from .reuse import Reuse

    reuse = Reuse(warm.reuse if warm is not None else None)
    plan = plan_pages(catalog, config, dates, search, contents=hashes, before=cache.known, reuse=reuse)
    pages, reader = plan.pages + (search_pages(catalog, jobs) if search else []), plan.reader

    renderer = _renderer(config, templates, cache, warm)
    plans = page_plans(pages, config, search, renderer, reuse) if cache.enabled else {}  # a cold build keeps no keys
    if plan_only and warm is not None:
        warm.reuse, warm.parsed = reuse, _held(parsed, hashes)
        return BuildResult(out_abs, 0, 0, catalog.warning_count, unchanged=True, entries=len(catalog.records))
    keys: dict[str, str] = {}
    made_from: dict[str, Made] = {}
    stale = cache.numbers(reader.stale()) if cache.enabled else set()
    scanned = scanning() if scanning is not None else None
    writer = SiteWriter(out, update=scanned is not None)
    kept: dict[str, str] = {}  # pages left in place by an update → their recorded identity
    rendered = 0
    try:
        todo: list[tuple[Page, str]] = []
        for page in pages:
            if page.template is None and not callable(page.body):
                writer.add(page.path, page.body or "")
                continue
            if page.path in plans:
                before = cache.made.get(page.path)
                recorded = cache.pages.get(page.path)
                key_before = recorded.partition(":")[0] if recorded else None
                key = page_key(page, plans[page.path], reader, before, key_before, stale)
                if scanned is not None and key is not None and key == key_before and scanned.unchanged(page.path):
                    writer.keep(page.path)
                    kept[page.path] = cache.pages[page.path]
                    keys[page.path] = key
                    if before is not None:  # the same plan: a changed one changes the key
                        made_from[page.path] = before
                    continue
            todo.append((page, writer.reserve(page.path)))
        progress(f"rendering {len(todo)} files")
        made = render_pages(renderer, reader, todo, jobs, keep_reads=cache.enabled)
        rendered = len(todo)
        if cache.enabled:
            for (page, _), page_reads in zip(todo, made):
                keys[page.path], made_from[page.path] = keyed(page, plans[page.path], reader, page_reads)
        for path, data in static_files(templates):
            writer.add(path, data)
        writer.add("static/pygments.css", pygments_css())
    except BaseException:
        writer.abort()
        raise
    writer.commit(writer.unwritten(scanned, cache.pages) if scanned is not None else ())
    try:
        if cache.enabled:
            identities = {path: kept.get(path) or _identity(key, os.path.join(writer.out, path)) for path, key in keys.items()}
            save = partial(cache.save, stamp, identities, out_abs, set(hashes.values()), len(catalog.records),
                           _file_records(source, hashes, cache, started), made_from, reader.known(), held=warm is not None)
            if warm is not None:
                warm.cache, warm.reuse, warm.pending = cache, reuse, save
                warm.parsed = _held(parsed, hashes)
            else:
                save()
    finally:
        writer.finish()
    html = sum(p.path.endswith(".html") for p in pages)
    return BuildResult(writer.out, html, len(writer.written), catalog.warning_count, rendered=rendered, reused=len(keys) - len(todo) if keys else 0,
                       entries=len(catalog.records))
