"""Render: pages → file contents (strings). Jinja2 with autoescape and strict undefined names."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from jinja2 import BytecodeCache, Environment, FileSystemLoader, StrictUndefined, select_autoescape
from jinja2.bccache import Bucket

from .cache import BuildCache
from .config import TEMPLATES, Config
from .pages import Page
from .schema import STACK_NAMES

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
        self.env.globals.update(site=config, stack_names={k.value: v for k, v in STACK_NAMES.items()})

    def render(self, page: Page) -> str:
        return self.render_bytes(page).decode("utf-8")

    def render_bytes(self, page: Page) -> bytes:
        """The page's file contents (the site-wide JSON files are assembled as UTF-8 already)."""
        if page.template is None:
            body = page.body() if callable(page.body) else page.body or ""
            return body if isinstance(body, bytes) else body.encode("utf-8")
        return self.env.get_template(page.template).render(page.full_context()).encode("utf-8")


@lru_cache(maxsize=None)
def static_files(templates: Path = TEMPLATES) -> tuple[tuple[str, bytes], ...]:
    """The static assets under templates/static, as (site path, bytes)."""
    root = templates / "static"
    return tuple(
        (f"static/{p.relative_to(root).as_posix()}", p.read_bytes()) for p in sorted(root.rglob("*")) if p.is_file()
    )
