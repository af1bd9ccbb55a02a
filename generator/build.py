"""The pipeline: read → catalog (load + validate + cross-entry) → pages → render → write.

`build()` reads like the house: each stage is a function in its own module, data flows one way.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .catalog import Catalog, build_catalog
from .config import Config
from .gitdates import git_dates
from .indexer import run_pagefind
from .markdown import pygments_css
from .pages import plan_pages
from .problems import Problem
from .read import read_source
from .render import TEMPLATES, Renderer, static_files
from .write import SiteWriter

__all__ = ["BuildResult", "build", "load_catalog"]


@dataclass(frozen=True)
class BuildResult:
    out: Path
    pages: int  # HTML pages
    files: int  # every file written
    warnings: tuple[Problem, ...]


def load_catalog(entries: Path) -> Catalog:
    """Read and validate every entry; raises BuildFailed with every problem."""
    return build_catalog(read_source(entries))


def build(entries: Path, out: Path, config: Config, templates: Path = TEMPLATES, search: bool = True) -> BuildResult:
    """The whole pipeline; `search=False` skips the Pagefind index (the search page finds nothing)."""
    catalog = load_catalog(entries)
    pages = plan_pages(catalog, config, git_dates(entries))
    renderer = Renderer(config, templates)
    writer = SiteWriter(out)
    try:
        for page in pages:
            writer.add(page.path, renderer.render(page))
        for path, data in static_files(templates):
            writer.add(path, data)
        writer.add("static/pygments.css", pygments_css())
        if search and catalog.records:
            run_pagefind(writer.tmp, expected_pages=len(catalog.records))
    except BaseException:
        writer.abort()
        raise
    writer.commit()
    html = sum(p.path.endswith(".html") for p in pages)
    return BuildResult(writer.out, html, len(writer.written), catalog.warnings)
