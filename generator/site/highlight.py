"""Code highlighting: source text → HTML spans for the few token kinds that look different, and the
stylesheet that colours them in the light and the dark theme.

Pygments wraps every token in a span, but most tokens (names, punctuation, whitespace) look like
plain text in both styles. Folding every token into the nearest kind that looks different halves the
markup of a code example; one CSS rule per remaining kind, coloured through a custom property per
theme, keeps the stylesheet small. Colours come from one light and one dark Pygments style, checked
for WCAG AA contrast on the code background (tests/test_reader.py); weight and slant come from the
light style and stay the same in both themes, so switching theme never reflows code.
"""

from __future__ import annotations

import io
from functools import lru_cache
from typing import Any

from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.styles import get_style_by_name
from pygments.token import STANDARD_TYPES, Token, _TokenType, is_token_subtype

__all__ = ["DARK", "LIGHT", "THEMES", "looks", "stylesheet", "to_html"]

LIGHT, DARK = "default", "monokai"
# The code background and text colour per theme (the same as --panel and --fg in style.css).
THEMES = {LIGHT: ("#f6f8fa", "#1b1f24"), DARK: ("#161b22", "#e6e8eb")}

_Look = tuple[str | None, bool, bool, bool, str | None, str | None]


def _look(style: Any, ttype: _TokenType) -> _Look:
    s = style.style_for_token(ttype)
    color = f"#{s['color']}" if s["color"] else None
    bg = f"#{s['bgcolor']}" if s["bgcolor"] else None
    return (color, s["bold"], s["italic"], s["underline"], bg, s["border"])


# Shown as plain text whatever the styles say: whitespace is invisible anyway, and colouring every
# `.`, `=` and `,` is the noisiest and the heaviest part of the markup (a third of all spans).
_PLAIN = (Token.Text.Whitespace, Token.Operator)
_KEEP = (Token.Operator.Word,)  # `in`, `and`, `not`: words, highlighted like keywords


@lru_cache(maxsize=1)
def _representatives() -> dict[_TokenType, _TokenType]:
    """Every standard token type → the token type whose class it is rendered with: the nearest
    ancestor-or-self that looks different from how its parent is rendered, in either theme
    (Token itself, rendered without a span, for anything that looks like plain text)."""
    light, dark = get_style_by_name(LIGHT), get_style_by_name(DARK)

    def pair(t: _TokenType) -> tuple[_Look, _Look]:
        return _look(light, t), _look(dark, t)

    rep: dict[_TokenType, _TokenType] = {Token: Token}
    for ttype in sorted(STANDARD_TYPES, key=len):  # parents before children
        if ttype is Token:
            continue
        parent = ttype.parent
        assert parent is not None
        if any(is_token_subtype(ttype, p) for p in _PLAIN) and not any(is_token_subtype(ttype, k) for k in _KEEP):
            rep[ttype] = Token
        elif pair(ttype) == pair(rep[parent]):
            rep[ttype] = rep[parent]
        else:
            rep[ttype] = ttype
    return rep


def _representative(ttype: _TokenType) -> _TokenType:
    reps = _representatives()
    while ttype not in reps:  # a lexer's own subtype: fold into its standard parent
        assert ttype.parent is not None
        ttype = ttype.parent
    return reps[ttype]


_FORMATTER = HtmlFormatter(nowrap=True)


def to_html(code: str, lexer: Lexer) -> str:
    """Highlighted HTML of `code` (escaped by Pygments), without the <pre> wrapper."""
    out = io.StringIO()
    _FORMATTER.format(((_representative(t), v) for t, v in lexer.get_tokens(code)), out)
    return out.getvalue()


def looks() -> dict[str, tuple[_Look, _Look]]:
    """CSS class → (light look, dark look) of every kind that gets a span."""
    light, dark = get_style_by_name(LIGHT), get_style_by_name(DARK)
    kinds = sorted({r for r in _representatives().values() if r is not Token}, key=lambda t: STANDARD_TYPES[t])
    return {STANDARD_TYPES[t]: (_look(light, t), _look(dark, t)) for t in kinds}


def stylesheet() -> str:
    """One rule per token class, coloured through --hl-<class>, whose values follow the theme
    exactly like style.css's: light by default and in print, dark on screen for data-theme=dark,
    and dark under prefers-color-scheme unless the reader chose light."""
    table = looks()
    rules, light_vars, dark_vars = [], [], []
    for cls, (lt, dk) in table.items():
        decl = [f"color:var(--hl-{cls})"]
        light_vars.append(f"--hl-{cls}:{lt[0] or 'currentColor'}")
        dark_vars.append(f"--hl-{cls}:{dk[0] or 'currentColor'}")
        if lt[4] or dk[4]:
            decl.append(f"background-color:var(--hl-{cls}-bg)")
            light_vars.append(f"--hl-{cls}-bg:{lt[4] or 'transparent'}")
            dark_vars.append(f"--hl-{cls}-bg:{dk[4] or 'transparent'}")
        if lt[1]:
            decl.append("font-weight:bold")
        if lt[2]:
            decl.append("font-style:italic")
        if lt[3]:
            decl.append("text-decoration:underline")
        if lt[5]:
            decl.append(f"border:1px solid #{lt[5].removeprefix('#')}")
        rules.append(f".highlight .{cls}{{{';'.join(decl)}}}")
    (lbg, lfg), (dbg, dfg) = THEMES[LIGHT], THEMES[DARK]
    light = f"--hl-bg:{lbg};--hl-fg:{lfg};" + ";".join(light_vars)
    dark = f"--hl-bg:{dbg};--hl-fg:{dfg};" + ";".join(dark_vars)
    return (
        f"/* Generated from Pygments: light '{LIGHT}', dark '{DARK}' (generator/site/highlight.py). */\n"
        f":root{{{light}}}\n"
        f"@media screen{{:root[data-theme=dark]{{{dark}}}}}\n"
        f"@media screen and (prefers-color-scheme: dark){{:root:not([data-theme=light]){{{dark}}}}}\n"
        ".highlight{background:var(--hl-bg);color:var(--hl-fg)}\n"
        + "\n".join(rules)
        + "\n"
    )
