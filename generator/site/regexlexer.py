"""Pygments' RegexLexer, trying at each position only the rules that can start with its character.

A RegexLexer state is an ordered list of rules, and at each position Pygments tries them in
order, one regex call each, until one matches: up to 56 calls per token in Python's root state.
But a rule can only match where the text starts with one of its possible first characters:
`(def)(\\s+)` at a 'd', a string at a quote or a prefix letter. Those characters are read off
each rule's parsed regex (by `re`'s own parser) when the lexer first enters the state, and the
lexer then tries, in the same order, only the rules that can start with the character at hand:
2 to 6 of Python's 56. The first rule that matches is the same rule, so the tokens are the same;
lexing our code examples takes a fraction of the time (bench/README.md).

A rule whose regex could match without consuming a character (an optional prefix, a lookahead
alone, an empty default) or could start with anything (`.`, `[^x]`), or one whose regex the
reading does not understand, is tried at every position, as Pygments tries it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import lru_cache, partial
from re import _constants as sre, _parser  # type: ignore[attr-defined]  # re's own parser (Python 3.11+)
from typing import Any

from pygments.lexer import Lexer, RegexLexer
from pygments.token import Error, Whitespace, _TokenType

__all__ = ["accelerate"]

_Rule = tuple[Callable[..., Any], Any, Any]  # (the rule's regex match, action, new state), as Pygments keeps it
_Starts = tuple[set[int], bool, bool]  # ASCII codes a match can start with, whether also others, whether it can be empty

_OTHER = 128  # the index for any non-ASCII character, and for the end of the text
_CATEGORIES = {
    category: frozenset(c for c in range(_OTHER) if re.match(rx, chr(c)))
    for category, rx in ((sre.CATEGORY_DIGIT, r"\d"), (sre.CATEGORY_SPACE, r"\s"), (sre.CATEGORY_WORD, r"\w"))
}


def accelerate(lexer: Lexer) -> Lexer:
    """`lexer`, trying only the rules that can match at each position; other kinds of lexer
    (JSON's is hand-written, YAML's keeps a context) are returned as they are."""
    if type(lexer).get_tokens_unprocessed is RegexLexer.get_tokens_unprocessed:
        lexer.get_tokens_unprocessed = partial(_tokens, lexer, _States(lexer._tokens))  # type: ignore[attr-defined,method-assign]  # Pygments' per-lexer state table, no public API
    return lexer


class _States(dict[str, "_State"]):
    """State name → its rules by first character, each state read when the lexer first enters it."""

    def __init__(self, rules: dict[str, list[_Rule]]) -> None:
        super().__init__()
        self.rules = rules

    def __missing__(self, name: str) -> _State:
        state = self[name] = _State(self.rules[name])
        return state


class _State:
    __slots__ = ("by_code", "firsts", "rules")

    def __init__(self, rules: list[_Rule]) -> None:
        self.rules = rules
        self.firsts = [_first(rule[0]) for rule in rules]
        self.by_code: list[list[_Rule] | None] = [None] * (_OTHER + 1)  # filled on first use

    def rules_at(self, code: int) -> list[_Rule]:
        """The rules, in order, that can match where the text starts with character `code`
        (_OTHER: a non-ASCII character, or the end)."""
        found = self.by_code[code]
        if found is None:
            found = self.by_code[code] = [
                rule for rule, first in zip(self.rules, self.firsts)
                if first is None or (first[1] if code == _OTHER else code in first[0])
            ]
        return found


def _first(match: Callable[..., Any]) -> tuple[frozenset[int], bool] | None:
    """The ASCII codes a match of the rule's regex starts with, and whether it can start with a
    non-ASCII character; None when it could start anywhere."""
    pattern = getattr(match, "__self__", None)
    if not isinstance(pattern, re.Pattern) or not isinstance(pattern.pattern, str):
        return None
    try:
        starts = _starts(_parser.parse(pattern.pattern, pattern.flags), pattern.flags)
    except Exception:  # a shape of parse tree this reading does not know: try the rule everywhere
        return None
    if starts is None or starts[2]:
        return None
    return frozenset(starts[0]), starts[1]


def _starts(items: Any, flags: int) -> _Starts | None:
    """What a sequence of parsed regex items can start with: the union over its leading items
    up to the first that cannot be empty. None: anything."""
    codes: set[int] = set()
    other = False
    for op, av in items:
        step = _starts_item(op, av, flags)
        if step is None:
            return None
        codes |= step[0]
        other = other or step[1]
        if not step[2]:
            return codes, other, False
    return codes, other, True


def _starts_item(op: Any, av: Any, flags: int) -> _Starts | None:
    if op is sre.LITERAL:
        return set(_codes(av, flags)), av >= _OTHER or bool(flags & re.I), False
    if op is sre.IN:
        return _starts_set(av, flags)
    if op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):  # \b, ^, lookarounds: they consume nothing
        return set(), False, True
    if op is sre.SUBPATTERN:
        _group, add, remove, sub = av
        return _starts(sub, (flags | add) & ~remove)
    if op is sre.ATOMIC_GROUP:
        return _starts(av, flags)
    if op is sre.BRANCH:
        codes: set[int] = set()
        other = empty = False
        for alternative in av[1]:
            step = _starts(alternative, flags)
            if step is None:
                return None
            codes |= step[0]
            other, empty = other or step[1], empty or step[2]
        return codes, other, empty
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
        low, _high, sub = av
        step = _starts(sub, flags)
        return None if step is None else (step[0], step[1], step[2] or low == 0)
    return None  # '.', a negated literal, a backreference, a conditional: anything


def _starts_set(items: Any, flags: int) -> _Starts | None:
    """A character class: [abc], [a-z], \\s, \\d, \\w and mixes of them."""
    codes: set[int] = set()
    other = bool(flags & re.I)  # a letter also matches non-ASCII letters that fold to it (K, ſ)
    for kind, value in items:
        if kind is sre.LITERAL:
            codes |= _codes(value, flags)
            other = other or value >= _OTHER
        elif kind is sre.RANGE:
            low, high = value
            if high >= _OTHER and flags & re.I:  # a non-ASCII letter in it may fold to an ASCII one
                return None
            for code in range(low, min(high, _OTHER - 1) + 1):
                codes |= _codes(code, flags)
            other = other or high >= _OTHER
        elif kind is sre.CATEGORY and value in _CATEGORIES:
            codes |= _CATEGORIES[value]
            other = True
        else:  # a negated set or category
            return None
    return codes, other, False


@lru_cache(maxsize=None)
def _codes(code: int, flags: int) -> frozenset[int]:
    """The ASCII codes a literal character matches: itself, and with IGNORECASE every ASCII
    character the regex engine folds to it (İ matches 'i', the Kelvin sign 'k')."""
    if not flags & re.I:
        return frozenset({code}) if code < _OTHER else frozenset()
    literal = re.compile(re.escape(chr(code)), flags & (re.I | re.A))
    return frozenset(c for c in range(_OTHER) if literal.fullmatch(chr(c)))


def _tokens(lexer: Lexer, states: _States, text: str, stack: tuple[str, ...] = ("root",)) -> Iterator[tuple[int, Any, str]]:
    """RegexLexer.get_tokens_unprocessed (Pygments 2.x), line for line, trying only the rules
    that can start with the character at `pos`."""
    pos = 0
    end = len(text)
    statestack = list(stack)
    state = states[statestack[-1]]
    while True:
        code = min(ord(text[pos]), _OTHER) if pos < end else _OTHER
        rules = state.by_code[code]
        if rules is None:
            rules = state.rules_at(code)
        for rexmatch, action, new_state in rules:
            m = rexmatch(text, pos)
            if m:
                if action is not None:
                    if type(action) is _TokenType:
                        yield pos, action, m.group()
                    else:
                        yield from action(lexer, m)
                pos = m.end()
                if new_state is not None:
                    if isinstance(new_state, tuple):
                        for name in new_state:
                            if name == "#pop":
                                if len(statestack) > 1:
                                    statestack.pop()
                            elif name == "#push":
                                statestack.append(statestack[-1])
                            else:
                                statestack.append(name)
                    elif isinstance(new_state, int):
                        if abs(new_state) >= len(statestack):
                            del statestack[1:]
                        else:
                            del statestack[new_state:]
                    elif new_state == "#push":
                        statestack.append(statestack[-1])
                    else:
                        raise AssertionError(f"wrong state def: {new_state!r}")
                    state = states[statestack[-1]]
                break
        else:
            try:
                if text[pos] == "\n":  # at the end of a line, back to "root"
                    statestack = ["root"]
                    state = states["root"]
                    yield pos, Whitespace, "\n"
                    pos += 1
                    continue
                yield pos, Error, text[pos]
                pos += 1
            except IndexError:
                break
