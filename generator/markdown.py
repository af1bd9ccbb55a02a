"""Markdown and code rendering for untrusted content: text in, safe HTML strings out.

Raw HTML is off, images are off, and links keep only http, https, mailto and relative targets.
Code is highlighted by Pygments into classes (the stylesheet is generated at build time).
"""

from __future__ import annotations

import re
from functools import lru_cache

from markdown_it import MarkdownIt
from markupsafe import Markup, escape
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

__all__ = ["code_block", "inline", "block", "pygments_css", "safe_link"]

_SCHEME_RE = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):")
_ALLOWED_SCHEMES = {"http", "https", "mailto"}


def safe_link(url: str) -> bool:
    """http(s), mailto and scheme-less relative links only (after stripping control characters)."""
    cleaned = re.sub(r"[\x00-\x20\x7f]", "", url)
    m = _SCHEME_RE.match(cleaned)
    if m:
        return m.group(1).lower() in _ALLOWED_SCHEMES
    return not cleaned.startswith("//") and not cleaned.startswith("\\")


def _highlight(code: str, lang: str, _attrs: str) -> str:
    return code_block(code, lang or "text", wrap=False)


@lru_cache(maxsize=1)
def _md() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False, "highlight": _highlight})
    md.enable("table")
    md.enable("strikethrough")
    md.disable("image")
    md.validateLink = safe_link  # type: ignore[method-assign]
    return md


def block(text: str) -> Markup:
    """Block markdown (paragraphs, lists, code) → safe HTML."""
    return Markup(_md().render(text))


def inline(text: str) -> Markup:
    """Inline markdown (code spans, emphasis, links) → safe HTML without a wrapping <p>."""
    return Markup(_md().renderInline(text))


_FORMATTER = HtmlFormatter(nowrap=True)


def code_block(code: str, language: str, *, wrap: bool = True) -> str:
    """Highlighted code as `<pre><code>`; Pygments escapes every token."""
    try:
        lexer = get_lexer_by_name(language, stripnl=False, ensurenl=True)
    except ClassNotFound:
        lexer = get_lexer_by_name("text", stripnl=False, ensurenl=True)
    body = highlight(code, lexer, _FORMATTER)
    lang = escape(language)
    return f'<pre class="highlight"><code class="language-{lang}">{body}</code></pre>' + ("\n" if wrap else "\n")


def pygments_css() -> str:
    """Light and dark token colours, scoped by the page's colour scheme."""
    light = HtmlFormatter(style="default").get_style_defs(".highlight")
    dark = HtmlFormatter(style="monokai").get_style_defs(":root[data-theme=dark] .highlight")
    dark_auto = HtmlFormatter(style="monokai").get_style_defs(":root:not([data-theme=light]) .highlight")
    return (
        "/* Generated from Pygments: light 'default', dark 'monokai'. */\n"
        + light
        + "\n"
        + dark
        + "\n@media (prefers-color-scheme: dark) {\n"
        + dark_auto
        + "\n}\n"
    )
