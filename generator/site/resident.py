"""The dev server's site, kept in memory between changes and patched on each one.

`ResidentSite` holds what its last good build made: every entry file's parse result (by the
digest of the file's bytes), the catalog's memo (catalog.Memo: similar entries, tag pairs, the
per-entry items of the site-wide files, each entry's search terms, the git dates), the plan
(reuse.Reuse: its pages and their digests), and the key of every file it wrote with what the
page looked up to make it (reads.py). A patch runs the stages `failpedia build` runs
(read_source, build_catalog, plan_pages, the renderer, SiteWriter) and the same functions of
incremental.py (parse_all, page_plans, unchanged_pages), with no disk cache: it parses only the files
whose bytes changed, plans again only the pages whose inputs changed, renders only the pages
whose key changed, and moves in only the files whose bytes changed, once all of them are
rendered. The search index (pages.search_pages) and the site-wide files (Page.site_wide) are
remade apart by `update_index`, which the dev server runs in the background (`Debounced`): an
edit's pages are served without waiting for the large JSON files those make.
After every kind of change and the index's update the site equals what a cold build of the same
inputs writes, byte for byte (tests/test_resident.py).

Everything kept is replaced, not added to, by each patch: the parse results of files that are
gone, the keys of pages that are gone and the memo's results for an older catalog go with it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from .build import rare_collections, render_pages
from .incremental import dates_at, keyed, page_plans, parse_all, unchanged_pages
from .cache import BuildCache, digest
from ..core.catalog import Catalog, ParseResult, build_catalog
from ..core.config import Config
from .gitdates import git_head
from .markdown import pygments_css
from .pages import Page, plan_pages, search_pages
from .reads import Known, Made, Read, Reader
from .reuse import Reuse
from ..core.parallel import checkpoint, giving_way
from ..core.read import FileSig, read_source
from .render import Renderer, static_files
from .write import SiteWriter

__all__ = ["Debounced", "Patched", "ResidentSite"]

NO_CACHE = BuildCache(None)  # the dev server keeps its state in memory (ResidentSite), not on disk

T = TypeVar("T")

GIVE_WAY_MAX = 30.0  # the longest an index update waits at one checkpoint for a patch to end


@dataclass(frozen=True)
class Patched:
    """What a patch did: the site paths it wrote or removed; and what `update_index` remakes the
    search index and the site-wide files from: the catalog it built, the plan's reader and its
    site-wide pages."""

    changed: tuple[str, ...]
    warnings: int
    catalog: Catalog
    full: bool  # a fresh site, its search index and site-wide files included
    reader: Reader
    site_wide: tuple[Page, ...]


class ResidentSite:
    def __init__(self, entries: Path, out: Path, config: Config, templates: Path, jobs: int | None = None) -> None:
        self.entries, self.out, self.config, self.templates, self.jobs = entries, out, config, templates, jobs
        self._parsed: dict[tuple[str, str], ParseResult] = {}  # (entry file, digest of its bytes) → its parse result
        self._sigs: dict[str, FileSig] = {}  # entry files parsed without error → their signature when read
        self._store: dict[str, Any] = {}  # the catalog's memo
        self._catalog: Catalog | None = None  # the last patch's, patched by the next where it can be (build_catalog's `last`)
        self._written: dict[str, str] = {}  # site path → key of its file (build.page_key, or the digest of its bytes)
        self._made: dict[str, Made] = {}  # rendered page → its plan and what it looked up when it rendered
        self._known: Known | None = None  # what the last patch's reader found, taken over where nothing changed
        self._reuse: Reuse | None = None  # the last patch's plan: its pages and their digests, taken over where their inputs are the same
        self._indexed: dict[str, str] = {}  # the search index's files → the digest of their bytes
        self._renderer: Renderer | None = None
        self._publish = threading.Lock()  # a patch and an index update move files in one at a time
        self._quiet = threading.Event()  # set while no patch runs: an index update waits for it (core.parallel.checkpoint)
        self._quiet.set()

    def patch(self, changed: Iterable[str] | None = None) -> Patched:
        """Bring the site up to date with its inputs. `changed`: the paths the watcher saw change,
        read again whatever their signature says (None: any file may have changed). Raises
        BuildFailed, with the site left as it was, where a build would fail."""
        self._quiet.clear()
        try:
            with rare_collections():
                return self._patch(None if changed is None else {os.path.realpath(p) for p in changed})
        finally:
            self._quiet.set()

    def _patch(self, changed: set[str] | None) -> Patched:
        templates = os.path.realpath(self.templates)
        if self._renderer is None or changed is None or any(p == templates or p.startswith(templates + os.sep) for p in changed):
            static_files.cache_clear()
            self._renderer = Renderer(self.config, self.templates)  # its template keys are read afresh
        renderer = self._renderer
        entries = os.path.realpath(self.entries)
        stale = {f"{self.entries}/{os.path.relpath(p, entries)}" for p in changed or ()}  # as read_source names them
        known = {path: sig for path, sig in self._sigs.items() if changed is not None and path not in stale}
        source = read_source(self.entries, known=known)
        last = dict(self._parsed.keys())  # entry file → the digest of its bytes when last read, from the keys of its result
        hashes = {path: digest(raw) if raw is not None else last[path] for path, _c, _s, raw in source.entries}
        # kept: each result holds its entry page's markdown and code as HTML (validate.Body), so a
        # page re-rendered for another entry's edit (a linked title) runs no markdown or Pygments.
        results = parse_all(source, hashes, NO_CACHE, self.jobs, self._parsed, kept=True)
        self._parsed = {(path, hashes[path]): results[path] for path in hashes}
        # a file that did not validate is read again each time: its cross-file checks need its bytes
        self._sigs = {path: source.signatures.get(path) or known[path] for path in hashes
                      if results[path][0] is not None and (path in source.signatures or path in known)}

        catalog = self._catalog = build_catalog(source, results, self._store, self._catalog)
        dates = dates_at(self.entries, git_head(self.entries), self._store)
        plan = plan_pages(catalog, self.config, dates, search=True, contents=hashes, before=self._known, reuse=Reuse(self._reuse))
        pages, reader = plan.pages, plan.reader
        full = not self._written or not self.out.is_dir()
        # Remade by update_index, after the pages an edit changed are moved in: the search index and
        # the files made of every entry (api/entries.json, api/fingerprints.json).
        site_wide = tuple(p for p in pages if p.site_wide)
        index = self._index_files(catalog, reader, site_wide, renderer) if full else {}
        plans = page_plans(pages, self.config, True, renderer, plan.reuse)
        fixed: dict[str, bytes] = {p.path: renderer.render_bytes(p, reader) for p in pages if p.path not in plans}
        fixed.update(static_files(self.templates))
        fixed["static/pygments.css"] = pygments_css().encode("utf-8")
        site_pages = [p for p in pages if p.path in plans and not p.site_wide]
        keys, made_from = ({}, {}) if full else unchanged_pages(site_pages, plans, reader, self._made, self._written.get, reader.stale())
        redo = [p for p in site_pages if p.path not in keys]  # pages to render
        with self._publish:
            if full:
                made = self._write_all(redo, {**fixed, **index}, renderer, reader)
            else:
                rendered = [renderer.render_read(p, reader) for p in redo]
                made = [page_reads for _, page_reads in rendered]
            for page, page_reads in zip(redo, made):
                keys[page.path], made_from[page.path] = keyed(page, plans[page.path], reader, page_reads)
            written = {**keys, **{path: digest(data) for path, data in fixed.items()}}
            if full:
                self._indexed = {path: digest(data) for path, data in index.items()}
                done = sorted({*written, *index})
            else:
                items = [(p.path, data) for p, (data, _) in zip(redo, rendered)]
                items += [(path, data) for path, data in fixed.items() if written[path] != self._written.get(path)]
                done = self._update(items, sorted(self._written.keys() - written.keys()))
            self._written, self._made = written, made_from
            self._known, self._reuse = reader.known(), plan.reuse
        return Patched(tuple(done), catalog.warning_count, catalog, full, reader, site_wide)

    def _write_all(self, todo: list[Page], fixed: dict[str, bytes], renderer: Renderer, reader: Reader) -> list[tuple[Read, ...]]:
        """A fresh site (the first patch, or the folder gone): every file, swapped in at once;
        returns what each page of `todo` looked up."""
        writer = SiteWriter(self.out)
        try:
            made = render_pages(renderer, reader, [(p, writer.reserve(p.path)) for p in todo], self.jobs)
            for path, data in fixed.items():
                writer.add(path, data)
        except BaseException:
            writer.abort()
            raise
        writer.commit()
        writer.finish()
        return made

    def _update(self, items: list[tuple[str, bytes]], removed: list[str]) -> list[str]:
        """Stage the files whose bytes differ from the site's, then move them in and delete the
        `removed` ones; returns the paths that changed."""
        writer = SiteWriter(self.out, update=True)
        try:
            for path, data in items:
                writer.add(path, data)  # the same bytes as the file there: left alone
        except BaseException:
            writer.abort()
            raise
        writer.commit(removed)
        return sorted({*writer.staged, *removed})

    @staticmethod
    def _index_files(catalog: Catalog, reader: Reader, site_wide: tuple[Page, ...], renderer: Renderer) -> dict[str, bytes]:
        """The search index's files and the site-wide files, by site path."""
        files = {p.path: renderer.render_bytes(p) for p in search_pages(catalog)}
        for p in site_wide:
            checkpoint()
            files[p.path] = renderer.render_bytes(p, reader)
        return files

    def update_index(self, patched: Patched) -> tuple[str, ...]:
        """Remake the search index's files and the site-wide files for a patch and move in the
        changed ones; returns their paths."""
        assert self._renderer is not None  # a patch made the catalog
        renderer = self._renderer
        # It gives way to a patch (an edit's pages come first): it waits at its checkpoints while one
        # runs, instead of halving the patch's share of the interpreter.
        with rare_collections(), giving_way(lambda: self._quiet.wait(GIVE_WAY_MAX)):
            files = self._index_files(patched.catalog, patched.reader, patched.site_wide, renderer)
            digests = {path: digest(data) for path, data in files.items()}
        with self._publish:
            if not self.out.is_dir():
                return ()
            done = self._update([(path, data) for path, data in files.items() if digests[path] != self._indexed.get(path)],
                                sorted(self._indexed.keys() - digests.keys()))
            self._indexed = digests
        return tuple(done)

class Debounced(Generic[T]):
    """Runs `work` on the latest value asked for, in a thread of its own: once no newer value has
    come for `quiet` seconds, or `most` seconds after the oldest one still waiting, whichever is
    sooner. A run is never abandoned for a newer value (that one runs next), so a steady stream
    of values still has each run finish, and the last value asked for always runs."""

    def __init__(self, work: Callable[[T], None], quiet: float, most: float) -> None:
        self.work, self.quiet, self.most = work, quiet, most
        self._cond = threading.Condition()
        self._value: tuple[T] | None = None  # the value waiting, if any
        self._first = self._last = 0.0
        self._stopping = False
        self._busy = False
        self._thread: threading.Thread | None = None  # started with the first value: until then, builds may fork

    def ask(self, value: T) -> None:
        with self._cond:
            now = time.monotonic()
            if self._value is None:
                self._first = now
            self._value, self._last = (value,), now
            self._cond.notify_all()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True)
                self._thread.start()

    def idle(self, timeout: float) -> bool:
        """Wait until nothing is waiting or running; False if that took longer than `timeout`."""
        with self._cond:
            return self._cond.wait_for(lambda: self._value is None and not self._busy, timeout)

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopping:
                    if self._value is None:
                        self._cond.wait()
                        continue
                    left = min(self._last + self.quiet, self._first + self.most) - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(left)
                if self._stopping or self._value is None:
                    return
                (value,), self._value, self._busy = self._value, None, True
            try:
                self.work(value)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()
