"""Render: pages → file contents (strings). Jinja2 with autoescape and strict undefined names."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from .config import TEMPLATES, Config
from .pages import Page
from .schema import STACK_NAMES

__all__ = ["TEMPLATES", "Renderer"]


class Renderer:
    def __init__(self, config: Config, templates: Path = TEMPLATES) -> None:
        self.env = Environment(
            loader=FileSystemLoader(str(templates)),
            autoescape=select_autoescape(["html", "xml"], default_for_string=True, default=True),
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=True,
        )
        self.env.globals.update(site=config, stack_names={k.value: v for k, v in STACK_NAMES.items()})

    def render(self, page: Page) -> str:
        if page.template is None:
            return page.body() if callable(page.body) else page.body or ""
        return self.env.get_template(page.template).render(page.full_context())


@lru_cache(maxsize=None)
def static_files(templates: Path = TEMPLATES) -> tuple[tuple[str, bytes], ...]:
    """The static assets under templates/static, as (site path, bytes)."""
    root = templates / "static"
    return tuple(
        (f"static/{p.relative_to(root).as_posix()}", p.read_bytes()) for p in sorted(root.rglob("*")) if p.is_file()
    )
