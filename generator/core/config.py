"""Site settings from `[tool.failpedia]` in pyproject.toml, with command-line overrides."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

from .problems import FailpediaError, SetupError

__all__ = ["TEMPLATES", "Config", "load_config", "require_templates"]

from .locate import HOME

TEMPLATES = HOME / "templates"  # the default site templates: the wheel's copy, or the checkout's


def require_templates(folder: Path) -> None:
    """`build` and `serve` refuse a templates folder that is not there, before any work."""
    if not folder.is_dir():
        raise SetupError(f"{folder}: templates folder not found; pass --templates DIR")


@dataclass(frozen=True)
class Config:
    title: str = "Failpedia"
    tagline: str = "The open encyclopedia of ML-training failures"
    base_url: str = "http://localhost:8000/"  # absolute, ends with '/'; used for canonical URLs and feeds
    repo_url: str = ""  # for "Edit this entry" links; empty hides them
    branch: str = "main"
    page_size: int = 50  # entries per listing page (home, tags, tag pairs, categories)

    def with_base_url(self, url: str | None) -> "Config":
        if url is None:
            return self
        return replace(self, base_url=_check_base_url(url))


def _check_base_url(url: str) -> str:
    if not url.startswith(("http://", "https://")):
        raise FailpediaError(f"base URL {url!r} must start with http:// or https://")
    return url if url.endswith("/") else url + "/"


def load_config(project: Path) -> Config:
    """Read `[tool.failpedia]` from `project/pyproject.toml`; defaults when absent."""
    path = project / "pyproject.toml"
    if not path.is_file():
        return Config()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise SetupError(f"{path}: {e}") from None
    section = {k: v for k, v in data.get("tool", {}).get("failpedia", {}).items() if k != "verify"}  # verify.py reads its own table
    known = {f for f in Config.__dataclass_fields__}
    unknown = set(section) - known
    if unknown:
        raise SetupError(f"{path}: unknown [tool.failpedia] setting(s): {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}")
    for k, v in section.items():
        if k == "page_size":
            if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= 1000:
                raise SetupError(f"{path}: [tool.failpedia] page_size must be a whole number from 1 to 1000, not {v!r}")
        elif not isinstance(v, str):
            raise SetupError(f"{path}: [tool.failpedia] {k} must be a string")
    config = Config(**section)
    return replace(config, base_url=_check_base_url(config.base_url), repo_url=config.repo_url.rstrip("/"))
