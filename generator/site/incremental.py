"""Incremental builds, in one place: what a build may skip, and how it knows it may.

The stages (read, catalog, pages, render, write) make the site from the entries and templates
alone; a cold build is just them. What lets a later build do less sits here, around them:

- **parse results by file digest** (`parse_all`): an entry file whose bytes are known is not
  parsed again. They come from the build cache on disk (cache.py), or from what the last build
  in this process kept (`Warm.parsed`, the dev server's `ResidentSite`). The entry arrives as a
  `validate.Body` with its page's HTML fragments, pickled, unpickled only if a page renders it.
- **each page's key** (`page_plans`, `page_key`, `keyed`): its plan, and the values of the
  look-ups it made through the catalog when it last rendered (reads.py). A page whose key is
  the key of the file written for it keeps that file (`unchanged_pages`).
- **the plan taken over** (reuse.Reuse): parts of the plan whose inputs are equal to the last
  build's are not made again.
- **the entries' git dates** (`dates_at`): kept under the git HEAD they were read at.
- **what a process keeps between builds** (`Warm`): the cache as last saved, the parse results,
  the plan and the renderer.

Two stages still carry a piece of it: the catalog's `Memo` (derived indexes kept by the digest
of their inputs, and the search index's postings, which the next build patches: search/files.py)
and `validate.Head`'s digests. Every path here ends in
the same bytes as a cold build: tests/test_incremental.py, test_buildserver.py and
test_resident.py compare them after every kind of change.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Set as AbstractSet
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .cache import BuildCache, code_version, digest, input_stamp
from .gitdates import git_dates
from ..core.config import Config
from ..core.parallel import run_parallel
from ..core.problems import FailpediaError
from .write import identity

if TYPE_CHECKING:
    from ..core.catalog import Catalog, ParseResult
    from .pages import Page
    from .reads import Made, Read, Reader
    from .reuse import Reuse
    from ..core.read import FileSig, Source
    from .render import Renderer

__all__ = ["Warm", "dates_at", "file_records", "keyed", "page_key", "page_plans", "parse_all", "parse_one", "file_key", "renderer_for", "unchanged_pages"]


@dataclass
class Warm:
    """What a process that runs one build after another (the build server, surfaces/buildserver.py)
    keeps from each to the next, in memory: the build cache as last saved (not loaded again while
    no other build has saved to its folder), the plan (reuse.Reuse: its pages and digests are
    taken over where their inputs are equal), the renderer (while the templates and settings
    stay) and the key of each file of plain content with the object it was made from. A build
    given a `Warm` leaves its cache save in `pending`, for the caller to run once it has
    answered (`settle`); the next build settles it first."""

    cache: BuildCache | None = None
    parsed: dict[tuple[str, str], ParseResult] | None = None  # (entry file, digest) → its parse result, from the cache
    reuse: Reuse | None = None
    renderer: tuple[str, Renderer] | None = None  # (the templates' stamp and the settings, the renderer)
    catalog: Catalog | None = None  # the last catalog, patched by the next build where it can be (build_catalog's `last`)
    plain: dict[str, tuple[str | bytes, str]] = field(default_factory=dict)  # a file of plain content → (the object written, its key)
    pending: Callable[[], None] | None = None

    def settle(self) -> None:
        pending, self.pending = self.pending, None
        if pending is not None:
            pending()

    def hold(self, parsed: dict[str, ParseResult], hashes: dict[str, str]) -> None:
        """Keep the parse results made from the cache for the next build, by path and digest
        (the others hold their pickle in memory; the next build finds them in the cache)."""
        self.parsed = {(path, hashes[path]): r for path, r in parsed.items() if r[0] is not None and r[0].body.elsewhere}

    def drop(self) -> None:
        """Forget everything (a build failed part way: what it held may be half made)."""
        self.cache = self.parsed = self.reuse = self.renderer = self.catalog = self.pending = None
        self.plain = {}


GIT_DATES = "git dates"  # their name in the memo store: ((git HEAD, the entries folder), the dates read then)


def dates_at(entries: Path, head: str, store: MutableMapping[str, Any] | None) -> dict[str, str]:
    """The entries' last-updated dates (gitdates.git_dates, a walk of the whole history), or the
    ones `store` (the catalog's memo store: the build cache's, or the dev server's) keeps from a
    build of the same entries folder at the same git HEAD (`head`): they come from commits, so
    they move only with it."""
    key = (head, os.path.realpath(entries))
    last = store.get(GIT_DATES) if store is not None else None
    if isinstance(last, tuple) and len(last) == 2 and last[0] == key:
        return cast("dict[str, str]", last[1])
    dates = git_dates(entries)
    if store is not None:
        store[GIT_DATES] = (key, dates)
    return dates


def parse_all(source: Source, hashes: dict[str, str], cache: BuildCache, jobs: int | None,
              held: Mapping[tuple[str, str], ParseResult] | None = None, kept: bool | None = None) -> dict[str, ParseResult]:
    """Every entry file's parse result (by display path): the one `held` has for its path and
    digest (what the last build in this process made), else the cache's for its digest, else
    parsed, in parallel when there are many. `kept`: whether the parse keeps each entry page's
    HTML fragments with the model (by default, when there is a cache to keep them in)."""
    from ..core.read import read_entry
    from ..core.validate import Body, Parsed

    results: dict[str, ParseResult] = {}
    misses = []
    for path, category, slug, raw in source.entries:
        key = hashes[path]
        if held is not None and (path, key) in held:
            results[path] = held[path, key]
            continue
        hit = cache.get(key)
        if hit is not None:
            (positions, head), blob = hit
            again = raw if raw is not None else partial(read_entry, source, category, slug)
            results[path] = (Parsed(Body.pickled(partial(_blob, blob, again, path, key)), positions, head), [])  # read when a page needs it
        else:
            misses.append((path, raw if raw is not None else read_entry(source, category, slug), key))
    kept = cache.enabled if kept is None else kept
    parsed = run_parallel(partial(parse_one, kept=kept), [(p, raw) for p, raw, _ in misses], jobs=jobs, min_items=64)
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


def file_records(source: Source, hashes: dict[str, str], cache: BuildCache, started: int) -> dict[str, tuple[FileSig, str]]:
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


def renderer_for(config: Config, templates: Path, cache: BuildCache, warm: Warm | None) -> Renderer:
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


def unchanged_pages(pages: Iterable[Page], plans: Mapping[str, str], reader: Reader, made: Mapping[str, Made],
                    written: Callable[[str], str | None], stale: AbstractSet[str | int] = frozenset(),
                    intact: Callable[[str], bool] = lambda _: True) -> tuple[dict[str, str], dict[str, Made]]:
    """The pages whose file may stay: the key their plan (`plans`) and look-ups give now is the
    key of the file written for them (`written`), and that file is still as written (`intact`).
    Returns their keys, and what each was made from (`made`, the last build's record); every
    other page of `pages` with a plan renders."""
    keys: dict[str, str] = {}
    made_from: dict[str, Made] = {}
    for page in pages:
        plan = plans.get(page.path)
        if plan is None:
            continue
        before, key_before = made.get(page.path), written(page.path)
        key = page_key(page, plan, reader, before, key_before, stale)
        if key is not None and key == key_before and intact(page.path):
            keys[page.path] = key
            if before is not None:  # the same plan: a changed one changes the key
                made_from[page.path] = before
    return keys, made_from


def file_key(key: str, path: str) -> str:
    """A page's key plus the identity of the file this build wrote for it (write.identity): what
    the cache records, so that a file changed since it was written is not kept."""
    try:
        return f"{key}:{identity(os.stat(path))}"
    except OSError:
        return key
