"""Markdown and code rendering for untrusted content: text in, safe HTML strings out.

Raw HTML is off, images are off, and links keep only http, https, mailto and relative targets.
Code is highlighted by Pygments into classes (generator/site/highlight.py; the stylesheet is generated
at build time).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markupsafe import Markup, escape
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name

from ..core.prose import MENTION_RE, XREF_RE
from . import highlight
from .regexlexer import accelerate

__all__ = ["code_block", "inline", "block", "link_entries", "pygments_css", "safe_link"]

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
    md.validateLink = safe_link  # type: ignore[method-assign]  # markdown-it's documented hook is an attribute to replace
    md.inline.ruler.before("link", "xref", _xref_rule)
    md.add_render_rule("xref", lambda _self, tokens, idx, _options, _env: _xref_html(tokens[idx].content))
    return md


def _xref_rule(state: Any, silent: bool) -> bool:
    """`[[slug]]`: a token that `link_entries` turns into a link with the entry's title."""
    if not state.src.startswith("[[", state.pos):
        return False
    m = XREF_RE.match(state.src, state.pos)
    if not m:
        return False
    if not silent:
        state.push("xref", "", 0).content = m.group(1)
    state.pos = m.end()
    return True


def _xref_html(slug: str) -> str:
    return f'<a class="xref" href="../{slug}/">[[{slug}]]</a>'


_XREF_HTML_RE = re.compile(r'<a class="xref" href="\.\./([a-z0-9-]+)/">\[\[\1\]\]</a>')
_HTML_PART_RE = re.compile(r"(<[^>]*>)")
_SKIP_TAGS = {"a", "code", "pre", "h1", "h2", "h3", "h4"}


def link_entries(html: str, titles: Mapping[str, str], own: str) -> Markup:
    """Rendered entry text with entries named by slug made links showing their title: `[[slug]]`
    always (check refuses an unknown one), and a bare slug in prose when it is an entry's (not in
    code, a link or a heading; not the page's own slug). A slug is a hyphenated lower-case name no
    English sentence uses otherwise, so a bare one is a reference the writer meant."""
    if "xref" not in html and "-" not in html:
        return Markup(html)

    def title_link(slug: str) -> str:
        return f'<a class="xref" href="../{slug}/">{escapeHtml(titles[slug])}</a>'

    html = _XREF_HTML_RE.sub(lambda m: title_link(m.group(1)) if m.group(1) in titles else escapeHtml(m.group(1)), html)
    out: list[str] = []
    skip = 0
    for part in _HTML_PART_RE.split(html):
        if part.startswith("<"):
            name = part[1:].lstrip("/").split(" ", 1)[0].split(">", 1)[0].lower()
            if name in _SKIP_TAGS:
                skip += -1 if part.startswith("</") else 1
            out.append(part)
        elif skip or "-" not in part:
            out.append(part)
        else:
            out.append(MENTION_RE.sub(lambda m: title_link(m.group(0)) if m.group(0) in titles and m.group(0) != own else m.group(0), part))
    return Markup("".join(out))


# A one-line text that starts like prose is one paragraph (no list, heading, quote, fence, table
# or indented code can start with these), so only its inline markup needs the parser.
_PROSE_START_RE = re.compile(r"[A-Za-z`\"'(]")


def block(text: str) -> Markup:
    """Block markdown (paragraphs, lists, code) → safe HTML."""
    line = text.rstrip(" \t\n")
    if _PROSE_START_RE.match(line) and "\n" not in line and "\r" not in line and not line.startswith("```"):
        return Markup(f"<p>{inline(line.rstrip())}</p>\n")  # the paragraph drops trailing whitespace
    return Markup(_md().render(text))


# Text without any character that starts inline markup (code, emphasis, links, entities, escapes,
# strikethrough, line breaks) renders as itself, HTML-escaped: skip the parser for it.
_INLINE_MARKUP_RE = re.compile(r"[\\`*_\[\]<>&!~\n\r\x00]")


_TEXT_MARKUP_RE = re.compile(r"[\\*_\[\]<>&!~\n\r\x00]")  # the same, backticks left out
_CODE_MARKUP_RE = re.compile(r"[<>\n\r\x00]")  # inside a code span: what an autolink or a break needs
# Underscores between two ASCII letters or digits (snake_case, TORCH_NCCL_DEBUG) can neither open
# nor close emphasis (CommonMark's flanking rules for `_`): they are text.
_INTRAWORD_UNDERSCORES_RE = re.compile(r"(?<=[A-Za-z0-9])_+(?=[A-Za-z0-9])")


def inline(text: str) -> Markup:
    """Inline markdown (code spans, emphasis, links) → safe HTML without a wrapping <p>."""
    if not _INLINE_MARKUP_RE.search(text):
        return Markup(escapeHtml(text))
    simple = _simple_inline(text)
    if simple is not None:
        return Markup(simple)
    return Markup(_md().renderInline(text))


def _simple_inline(text: str) -> str | None:
    """Prose whose only markup is `code` spans and snake_case words (three in four of the texts
    in entries that have any markup): the spans' content escaped in <code>, one space stripped
    from both ends when it is on both ends and the content is not all spaces, as CommonMark says.
    None when anything else needs the parser: an odd or doubled backtick, other markup outside a
    span, or an autolink's brackets inside one."""
    parts = text.split("`")
    if len(parts) % 2 == 0 or "``" in text:
        return None
    out = []
    for i, part in enumerate(parts):
        if i % 2 == 0:
            if _TEXT_MARKUP_RE.search(part) and _TEXT_MARKUP_RE.search(_INTRAWORD_UNDERSCORES_RE.sub("", part)):
                return None
            out.append(escapeHtml(part))
        else:
            if not part or _CODE_MARKUP_RE.search(part):
                return None
            if part[0] == " " and part[-1] == " " and part.strip(" "):
                part = part[1:-1]
            out.append(f"<code>{escapeHtml(part)}</code>")
    return "".join(out)


# A fence may name any language, but only these lexers run on contributed code: many of Pygments'
# ~600 lexers hold regexes that backtrack badly on hostile text, and a name lookup would also load
# installed lexer plugins. Other names render as plain text.
_LEXERS = {"python": "python", "py": "python", "python3": "python", "bash": "bash", "sh": "bash", "shell": "bash",
           "yaml": "yaml", "yml": "yaml", "json": "json", "toml": "toml", "text": "text"}
MAX_HIGHLIGHT_LINE = 300  # longer lines show as plain text: some lexers are quadratic in a line's length


def code_block(code: str, language: str, *, wrap: bool = True) -> str:
    """Highlighted code as `<pre><code>`; Pygments escapes every token. The block is focusable so a
    keyboard can scroll its long lines."""
    name = _LEXERS.get(language.lower(), "text")
    if name != "text" and max(map(len, code.split("\n"))) > MAX_HIGHLIGHT_LINE:
        name = "text"
    body = highlight.to_html(code, _lexer(name))
    lang = escape(language)
    return f'<pre class="highlight" tabindex="0"><code class="language-{lang}">{body}</code></pre>' + ("\n" if wrap else "\n")


@lru_cache(maxsize=None)
def _lexer(name: str) -> Lexer:
    """One lexer per language (a lookup costs more than a short snippet's highlighting; a lexer
    keeps no state between get_tokens calls), trying at each character only the rules that can
    start there (regexlexer.py)."""
    return accelerate(get_lexer_by_name(name, stripnl=False, ensurenl=True))


def pygments_css() -> str:
    """Light and dark token colours, following the page's colour scheme."""
    return highlight.stylesheet()
