"""The pipeline: read → catalog (load + validate + cross-entry) → pages → render → write.

`build()` calls each stage, a function in its own module, in that order. What a rebuild may skip
is decided in incremental.py (with the build cache, cache.py, as its store on disk), and the
worker pool (core/parallel.py) spreads the work over the cores; neither changes a byte of output.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path
from typing import TYPE_CHECKING

from .cache import BuildCache, digest, input_stamp
from ..core.config import TEMPLATES, Config, require_templates
from .gitdates import git_head
from .incremental import Warm, dates_at, file_key, file_records, keyed, page_plans, parse_all, renderer_for, unchanged_pages
from ..core.parallel import run_parallel, start_parallel
from ..core.problems import BuildFailed
from .write import SiteWriter, scan_site, write_file

if TYPE_CHECKING:
    from ..core.catalog import Catalog
    from .pages import Page
    from .reads import Made, Read, Reader
    from .render import Renderer

# The stages (pydantic, jinja2, markdown-it, Pygments: slow imports) load only once a
# build has work to do, so a no-op rebuild answers before importing them.

__all__ = ["BuildResult", "Warm", "build", "load_catalog", "rare_collections", "render_pages"]

DEFAULT_CACHE = Path(".cache") / "build"  # what the CLI uses unless --no-cache or --cache-dir

# Fewer pages render sooner in this process, after `meanwhile`, than in a forked pool: while a
# pool runs, the large process of a build server or a rebuild pays a copy-on-write fault for
# each page of memory it writes to (bench/README.md, "The catalog patched").
POOL_MIN = 128


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


def load_catalog(entries: Path) -> Catalog:
    """Read and validate every entry; raises BuildFailed with every problem."""
    from ..core.catalog import build_catalog
    from ..core.read import read_source

    return build_catalog(read_source(entries))


def render_pages(renderer: Renderer, reader: Reader, todo: list[tuple[Page, str]], jobs: int | None, keep_reads: bool = True,
                 meanwhile: Callable[[], object] | None = None) -> list[tuple[Read, ...]]:
    """Render each page straight into the place reserved for it (SiteWriter.reserve), in forked
    workers when there are many and no other thread runs, but for the `site_wide` pages, whose
    memoised parts the build cache keeps: those render in this process while the workers render
    the rest, and then `meanwhile()` runs. Returns what each page looked up (nothing, without
    `keep_reads`: a cold build keeps no keys and no memo)."""
    global _RENDERER, _READER
    _RENDERER, _READER = renderer, reader
    for name in sorted({p.template for p, _ in todo if p.template}):
        renderer.load(name)  # compiled once, before the workers fork
    here = [i for i, (page, _) in enumerate(todo) if page.site_wide] if keep_reads else []  # a cold build keeps no memo either
    made: dict[int, tuple[Read, ...]] = {}

    def in_this_process() -> None:
        made.update((i, _render_to(todo[i])) for i in here)
        if meanwhile is not None:
            meanwhile()

    skip = set(here)
    rest = [i for i in range(len(todo)) if i not in skip]
    made.update(zip(rest, run_parallel(_render_to if keep_reads else _render_only, [todo[i] for i in rest], jobs=jobs, min_items=POOL_MIN,
                                       meanwhile=in_this_process)))
    return [made[i] for i in range(len(todo))]


def _content_key(body: str | bytes) -> tuple[bytes, str]:
    """A file of plain content's bytes and its key: their digest."""
    data = _encoded(body)
    return data, "c" + hashlib.blake2b(data, digest_size=16).hexdigest()


def _encoded(body: str | bytes) -> bytes:
    return body.encode("utf-8") if isinstance(body, str) else body


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


def collect_and_set_aside() -> None:
    """For a process that holds a build's state from one build to the next (the build server, the
    dev server), after a build: a full collection, the memory it freed handed back to the system
    (glibc keeps freed blocks for the process otherwise), and everything still alive frozen out
    of later collections (gc.freeze), which would scan it at every allocation burst of a build."""
    gc.unfreeze()
    gc.collect()
    _malloc_trim()()
    gc.freeze()


@lru_cache(maxsize=1)
def _malloc_trim() -> Callable[[], object]:
    """glibc's malloc_trim(0), or nothing where the C library has none. Looked up on first use:
    ctypes is not imported by a build that no server runs."""
    import ctypes

    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError):
        return lambda: None
    return lambda: trim(0)


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
    head = git_head(entries)
    stamp = input_stamp(
        [entries, templates, Path(__file__).resolve().parent.parent],  # generator/, every package
        json.dumps([repr(config), search, str(out_abs), head]),
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
    parsed = parse_all(source, hashes, cache, jobs, warm.parsed if warm is not None else None)
    try:
        catalog = build_catalog(source, parsed, cache.memo if cache.enabled else None, warm.catalog if warm is not None else None)
    except BuildFailed:
        cache.save_parsed(set(hashes.values()))  # the valid files stay known
        raise
    if warm is not None:
        warm.catalog = catalog
    dates = dates_at(entries, head, cache.memo if cache.enabled else None)
    from .reuse import Reuse

    reuse = Reuse(warm.reuse if warm is not None else None)
    plan = plan_pages(catalog, config, dates, search, contents=hashes, before=cache.known, reuse=reuse)
    pages, reader = plan.pages, plan.reader

    renderer = renderer_for(config, templates, cache, warm)
    plans = page_plans(pages, config, search, renderer, reuse) if cache.enabled else {}  # a cold build keeps no keys
    if plan_only and warm is not None:
        warm.reuse = reuse
        warm.hold(parsed, hashes)
        if cache.enabled:
            # What the next build's own process makes of every entry, made now while it waits:
            # the memos of the site-wide files' items and of the search index come into memory,
            # and the search files' keys into `warm.plain`. Nothing is written.
            for page in pages:
                if page.site_wide:
                    page.made(reader)
            if search:
                warm.plain = {page.path: (page.body, _content_key(page.body)[1]) for page in search_pages(catalog, jobs)
                              if isinstance(page.body, (str, bytes))}
        return BuildResult(out_abs, 0, 0, catalog.warning_count, unchanged=True, entries=len(catalog.records))
    scanned = scanning() if scanning is not None else None
    kept: dict[str, str] = {}  # pages an update leaves in place → their key
    made_from: dict[str, Made] = {}  # page → what it was made from, for the next build
    if scanned is not None:
        kept, made_from = unchanged_pages(pages, plans, reader, cache.made, lambda path: cache.pages.get(path, "").partition(":")[0] or None,
                                          cache.numbers(reader.stale()), scanned.unchanged)
    keys: dict[str, str] = {}  # page written → its key
    same: list[str] = []  # files of plain content an update leaves in place
    writer = SiteWriter(out, update=scanned is not None)
    rendered = 0

    held_plain = warm.plain if warm is not None else {}
    plain_keys: dict[str, tuple[str | bytes, str]] = {}  # path → (its content, its key), for a Warm

    def place(plain: list[Page]) -> None:
        """Write the files of plain content, or keep them where an update finds them as they were."""
        for page in plain:
            body = page.body or ""
            assert not callable(body)  # a file of plain content
            if not cache.enabled:
                writer.add(page.path, _encoded(body))
                continue
            # A file of plain content is keyed by its bytes' digest: one whose digest and file are
            # as last written stays, unread (most of the search index's files, after an edit). The
            # very object the last build in this process digested (a memo's result, taken over)
            # has that build's key: its bytes are not made and digested again.
            last = held_plain.get(page.path)
            data = None
            if last is not None and last[0] is body:
                key = last[1]
            else:
                data, key = _content_key(body)
            plain_keys[page.path] = (body, key)
            if scanned is not None and cache.pages.get(page.path, "").partition(":")[0] == key and scanned.unchanged(page.path):
                writer.keep(page.path)
                same.append(page.path)
            else:
                writer.add(page.path, data if data is not None else _encoded(body))
                keys[page.path] = key

    indexed: list[Page] = []

    def index() -> None:
        """The search index, made while the workers render (it reads the catalog only)."""
        indexed.extend(search_pages(catalog, jobs))
        place(indexed)

    try:
        todo: list[tuple[Page, str]] = []
        plain: list[Page] = []
        for page in pages:
            if page.template is None and not callable(page.body):
                plain.append(page)
            elif page.path in kept:
                writer.keep(page.path)
            else:
                todo.append((page, writer.reserve(page.path)))
        place(plain)
        progress(f"rendering {len(todo)} files")
        made = render_pages(renderer, reader, todo, jobs, keep_reads=cache.enabled, meanwhile=index if search else None)
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
            recorded = ({path: cache.pages[path] for path in (*kept, *same)}
                        | {path: file_key(key, os.path.join(writer.out, path)) for path, key in keys.items()})
            save = partial(cache.save, stamp, recorded, out_abs, set(hashes.values()), len(catalog.records),
                           file_records(source, hashes, cache, started), made_from, reader.known(), held=warm is not None)
            if warm is not None:
                warm.cache, warm.reuse, warm.pending, warm.plain = cache, reuse, save, plain_keys
                warm.hold(parsed, hashes)
            else:
                save()
    finally:
        writer.finish()
    html = sum(p.path.endswith(".html") for p in (*pages, *indexed))
    return BuildResult(writer.out, html, len(writer.written), catalog.warning_count, rendered=rendered, reused=len(kept),
                       entries=len(catalog.records))
