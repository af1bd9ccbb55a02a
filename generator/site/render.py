"""Render: pages → file contents (strings). Jinja2 with autoescape and strict undefined names."""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any, cast

from jinja2 import (
    BytecodeCache, Environment, FileSystemLoader, StrictUndefined, TemplateError, TemplateNotFound, TemplateSyntaxError, meta,
    select_autoescape,
)
from jinja2.bccache import Bucket
from markupsafe import Markup, escape

from .cache import BuildCache, digest
from ..core.config import TEMPLATES, Config
from .pages import Page
from .reads import Read, Reader
from ..core.problems import BuildFailed, Problem
from ..core.schema import STACK_NAMES

__all__ = ["TEMPLATES", "Renderer", "TemplateCache"]


class TemplateCache(BytecodeCache):
    """Compiled templates kept in the build cache, so that a rebuild does not compile them again.
    Loading bytecode runs it, so these files are signed like the rest of the cache; Jinja drops
    one compiled from another source or by another Python."""

    def __init__(self, cache: BuildCache) -> None:
        self.cache = cache

    def load_bytecode(self, bucket: Bucket) -> None:
        data = self.cache.read_file(f"templates-{bucket.key}.bin")
        if data is not None:
            bucket.bytecode_from_string(data)

    def dump_bytecode(self, bucket: Bucket) -> None:
        self.cache.write_file(f"templates-{bucket.key}.bin", bucket.bytecode_to_string())

    def references(self, name: str, source: str) -> tuple[str | None, ...] | None:
        """The templates a template of this name and source names (Renderer.template_key), as a
        build found them; None when none did."""
        data = self.cache.read_file(f"templates-refs-{digest(name, source)}.json")
        try:
            refs = json.loads(data) if data is not None else None
        except ValueError:
            return None
        return tuple(refs) if isinstance(refs, list) and all(r is None or isinstance(r, str) for r in refs) else None

    def keep_references(self, name: str, source: str, refs: tuple[str | None, ...]) -> None:
        self.cache.write_file(f"templates-refs-{digest(name, source)}.json", json.dumps(refs).encode())


def breakable(text: str) -> Markup:
    """Text with a line-break chance after each '_': on a phone, CUBLAS_STATUS_EXECUTION_FAILED
    wraps at its underscores, not in the middle of a word."""
    return Markup(str(escape(text)).replace("_", "_<wbr>"))


class Once:
    """The `once(macro, *args)` of the templates: what the macro gives for these arguments,
    rendered the first time only. A macro imported without context sees nothing but its
    arguments and the environment's globals (fixed for a Renderer), so equal arguments give
    equal output: a card listed on a tag page, its pages and its tag pairs is rendered once
    per link depth (`root`), not once per listing. Arguments are compared by value (dicts and
    lists by their items), so a card whose title changed is a new card; the store is bounded,
    emptied when full (the dev server keeps its renderer from edit to edit)."""

    LIMIT = 1 << 16

    def __init__(self) -> None:
        self._made: dict[Hashable, Any] = {}

    def __call__(self, macro: Callable[..., Any], *args: Any) -> Any:
        try:
            key = (macro, *map(_frozen, args))
            return self._made[key]
        except TypeError:  # an argument of no fixed value (unhashable)
            return macro(*args)
        except KeyError:
            pass
        if len(self._made) >= self.LIMIT:
            self._made.clear()
        made = self._made[key] = macro(*args)
        return made


_PLAIN = (str, type(None))


def _frozen(value: Any) -> Hashable:
    """A hashable value equal for equal values: a dict as its items (in order: equal dicts in
    another order are another key, rendered again), a list or tuple as a tuple of its items."""
    kind = type(value)
    if kind in _PLAIN:
        return cast(Hashable, value)
    if kind is dict:
        return (dict, *((_frozen(k), _frozen(v)) for k, v in value.items()))
    if kind is tuple or kind is list:
        return (kind, *map(_frozen, value))
    hash(value)  # raises TypeError for what has no fixed value
    return (kind, value)  # with its type: 1, 1.0 and True are equal, and so are Markup('<b>') and '<b>'


class Renderer:
    def __init__(self, config: Config, templates: Path = TEMPLATES, compiled: BytecodeCache | None = None) -> None:
        self.env = Environment(
            bytecode_cache=compiled,
            loader=FileSystemLoader(str(templates)),
            autoescape=select_autoescape(["html", "xml"], default_for_string=True, default=True),
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=True,
        )
        self.env.globals.update(site=config, stack_names={k.value: v for k, v in STACK_NAMES.items()}, once=Once())
        self.env.filters["breakable"] = breakable
        self._keys: dict[str, str] = {}

    def template_key(self, name: str) -> str:
        """The digest of the templates a page made with `name` depends on: its source and the
        sources of every template it extends, includes or imports, transitively (read off the
        parsed template, as Jinja resolves them). A template that names another by a variable
        depends on every template. An edit to entry.html thus re-renders the entry pages only."""
        if name not in self._keys:
            with _reported():
                self._keys[name] = self._key(name)
        return self._keys[name]

    def _key(self, name: str) -> str:
        sources: dict[str, tuple[str, str | None]] = {}  # name → (source, file)
        todo: list[tuple[str, str | None]] = [(name, None)]  # a template, and the one that names it
        while todo:
            current, parent = todo.pop()
            if current in sources:
                continue
            try:
                sources[current] = self._source(current)
            except TemplateNotFound:
                if parent is None:
                    raise
                text, path = sources[parent]
                line = text.count("\n", 0, max(0, text.find(current))) + 1
                raise BuildFailed([Problem(path or parent, line, 0, f"template error: {_missing(current)}")]) from None
            referenced = self._references(current, *sources[current])
            if None in referenced:  # a name computed at render time: it may be any file
                sources = {n: self._source(n) for n in self.env.list_templates()}
                break
            todo += [(n, current) for n in referenced if n is not None]
        return digest(*(part for n in sorted(sources) for part in (n, sources[n][0])))

    def _references(self, name: str, source: str, path: str | None) -> tuple[str | None, ...]:
        """What a template names (None for a name computed at render time): read off its parse,
        or as the build cache recorded it for the same source, so that a rebuild parses only
        the templates that changed."""
        compiled = self.env.bytecode_cache
        kept = compiled.references(name, source) if isinstance(compiled, TemplateCache) else None
        if kept is not None:
            return kept
        refs = tuple(meta.find_referenced_templates(self.env.parse(source, name, path)))
        if isinstance(compiled, TemplateCache):
            compiled.keep_references(name, source, refs)
        return refs

    def _source(self, name: str) -> tuple[str, str | None]:
        loader = self.env.loader
        assert loader is not None  # the Environment is made with a FileSystemLoader
        source, path, _ = loader.get_source(self.env, name)
        return source, path

    def load(self, name: str) -> None:
        """Compile a template now (before the render workers fork, so that each need not)."""
        with _reported():
            self.env.get_template(name)

    def render(self, page: Page, reader: Reader | None = None) -> str:
        return self.render_bytes(page, reader).decode("utf-8")

    def render_bytes(self, page: Page, reader: Reader | None = None) -> bytes:
        """The page's file contents (the site-wide JSON files are assembled as UTF-8 already);
        `reader`: the plan's, which a page that reads the catalog needs (Plan.reader)."""
        return self.render_read(page, reader)[0]

    def render_read(self, page: Page, reader: Reader | None = None) -> tuple[bytes, tuple[Read, ...]]:
        """The page's file contents, and what it looked up in the catalog to make them."""
        made, reads = page.made(reader)
        if page.template is None:
            assert not isinstance(made, dict)  # a body
            return (made if isinstance(made, bytes) else made.encode("utf-8")), reads
        assert isinstance(made, dict)  # a template's context
        with _reported(page.path):
            return self.env.get_template(page.template).render(made).encode("utf-8"), reads


def _missing(name: str) -> str:
    return f"no template named '{name}' in the templates folder"


@contextmanager
def _reported(page: str | None = None) -> Iterator[None]:
    """A template's error as a build problem (file, line, what went wrong), not a traceback."""
    try:
        yield
    except TemplateError as e:
        raise BuildFailed([_template_problem(e, page)]) from None


def _template_problem(e: TemplateError, page: str | None = None) -> Problem:
    """Where a template went wrong. A syntax error names its file and line; an error while
    rendering (an undefined name, a bad filter argument) is placed at the last template line in
    its traceback, which Jinja rewrites to point into the template's own source."""
    rendering = f" (rendering {page})" if page else ""
    if isinstance(e, TemplateSyntaxError):
        return Problem(e.filename or e.name or "templates", e.lineno or 0, 0, f"template error: {e.message}{rendering}")
    frames = [f for f in traceback.extract_tb(e.__traceback__) if not f.filename.endswith(".py")]
    path, line = (frames[-1].filename, frames[-1].lineno or 0) if frames else ("templates", 0)
    message = _missing(str(e.name)) if isinstance(e, TemplateNotFound) else e.message or type(e).__name__
    return Problem(path, line, 0, f"template error: {message}{rendering}")


@lru_cache(maxsize=None)
def static_files(templates: Path = TEMPLATES) -> tuple[tuple[str, bytes], ...]:
    """The static assets under templates/static, as (site path, bytes)."""
    root = templates / "static"
    return tuple(
        (f"static/{p.relative_to(root).as_posix()}", p.read_bytes()) for p in sorted(root.rglob("*")) if p.is_file()
    )
