"""Fingerprint patterns: a regex subset that Python and JavaScript read the same way.

`check_pattern(text)` returns None when the pattern is portable and free of catastrophic
backtracking, else a message saying what to change. `compile_pattern` compiles a checked
pattern for Python (ASCII semantics, like JavaScript without the `u` flag).

The subset: literal characters; escapes `\\d \\D \\w \\W \\s \\S \\b \\B` and escaped
punctuation; `.`; character classes `[...]` (ranges, escapes, leading `^`); groups `(...)` and
`(?:...)`; alternation `|`; anchors `^ $`; quantifiers `? * + {n} {n,} {n,m}`, optionally lazy
(`?` after). Refused: lookaround, backreferences, named groups, inline flags, unicode property
escapes, `\\A \\Z \\z`, and any quantified group that itself contains a quantifier or an
alternation (the shapes behind catastrophic backtracking, e.g. `(a+)+`, `(a|aa)*`).
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
import warnings
from dataclasses import dataclass
from typing import TypeGuard

__all__ = ["MAX_LINE", "check_pattern", "compile_line_filter", "compile_pattern", "plain_number", "required_literals"]

MAX_LINE = 4096  # the matchers look at this many characters of a line at most

_CLASS_ESCAPES = set("dDwWsS")
_ASSERT_ESCAPES = set("bB")
_SIMPLE_ESCAPES = set("tnrfv0")
_PUNCT = set(r"\.^$|?*+()[]{}/-_:;,'\"!@#%&=<>~`")
_MAX_UNBOUNDED = 12
_SET_OPERATORS = ("--", "&&", "~~", "||")  # in a class, Python warns that these will mean set operations
_MAX_WILD = 2  # unbounded repeats of '.', \S, \W, \D or [^...]: the source of polynomial blow-ups


class _Bad(Exception):
    pass


class _Reader:
    """A cursor over a pattern's text, shared by the parsers below."""

    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0

    def peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""


class _Parser(_Reader):
    """A recursive-descent reader of the subset that tracks quantifier nesting."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.unbounded = 0
        self.wild = 0

    def error(self, msg: str) -> _Bad:
        return _Bad(f"{msg} at offset {self.i}")

    def parse(self) -> None:
        self.alternation(depth=0)
        if self.i != len(self.s):
            raise self.error("unbalanced ')'")

    # Each parse function returns (contains_quantifier, contains_alternation).
    def alternation(self, depth: int) -> tuple[bool, bool]:
        q, alt = self.sequence(depth)
        while self.peek() == "|":
            self.i += 1
            q2, _ = self.sequence(depth)
            q, alt = q or q2, True
        return q, alt

    def sequence(self, depth: int) -> tuple[bool, bool]:
        has_q = has_alt = False
        while self.peek() and self.peek() not in "|)":
            run = _LITERAL_RUN.match(self.s, self.i)
            if run and run.end() - self.i > 1:  # plain characters: only the last can take a quantifier
                self.i = run.end() - 1
            start = self.i
            inner_q, inner_alt, quantifiable = self.atom(depth)
            atom = self.s[start : self.i]
            before = self.unbounded
            quant = self.quantifier()
            if self.unbounded > before and (atom in (".", "\\S", "\\W", "\\D") or atom.startswith("[^")):
                self.wild += 1
                if self.wild > _MAX_WILD:
                    raise self.error(
                        f"more than {_MAX_WILD} unbounded wildcards such as '.*' (slow on long lines); "
                        "use a bounded repeat like '.{0,80}' or a literal"
                    )
            if quant is not None:
                if not quantifiable:
                    raise self.error("quantifier after an anchor or nothing")
                if (inner_q or inner_alt) and quant:
                    raise self.error(
                        "a repeated group contains a quantifier or '|' (risk of catastrophic backtracking); "
                        "flatten it, e.g. write '(?:\\d+,)+' as '[\\d,]+'"
                    )
                has_q = True
            has_q = has_q or inner_q
            has_alt = has_alt or inner_alt
        return has_q, has_alt

    def quantifier(self) -> bool | None:
        """None when there is no quantifier; True when it repeats (can match 2+ times)."""
        c = self.peek()
        repeats: bool
        if not c:
            return None
        if c in "*+":
            self.i += 1
            repeats = True
            self.unbounded += 1
        elif c == "?":
            self.i += 1
            repeats = False
        elif c == "{":
            m = re.compile(r"\{(\d{1,4})(,(\d{0,4}))?\}").match(self.s, self.i)
            if not m:
                raise self.error("'{' must start a quantifier like {2} or {1,3}; write '\\{' for a literal")
            lo = int(m.group(1))
            hi = m.group(3)
            if m.group(2) and not hi:
                self.unbounded += 1
            elif hi and int(hi) < lo:
                raise self.error("quantifier {n,m} with m < n")
            repeats = (m.group(2) is not None) or lo > 1
            self.i = m.end()
        else:
            return None
        if self.peek() == "?":  # lazy
            self.i += 1
        if self.peek() in ("*", "+", "?", "{"):
            raise self.error("two quantifiers in a row (possessive or nested); keep one")
        if self.unbounded > _MAX_UNBOUNDED:
            raise self.error(f"more than {_MAX_UNBOUNDED} unbounded quantifiers (* + {{n,}}); be more specific")
        return repeats

    def atom(self, depth: int) -> tuple[bool, bool, bool]:
        c = self.peek()
        if c == "(":
            self.i += 1
            if self.s.startswith("?:", self.i):
                self.i += 2
            elif self.peek() == "?":
                raise self.error("only '(...)' and '(?:...)' groups are portable (no lookaround, named groups or flags)")
            if depth > 8:
                raise self.error("groups nested too deeply")
            q, alt = self.alternation(depth + 1)
            if self.peek() != ")":
                raise self.error("missing ')'")
            self.i += 1
            return q, alt, True
        if c == "[":
            self.char_class()
            return False, False, True
        if c in "^$":
            self.i += 1
            return False, False, False
        if c == "\\":
            return self.escape()
        if c in "*+?{":
            raise self.error(f"nothing to repeat before '{c}'; write '\\{c}' for a literal")
        if c in "]}":
            raise self.error(f"write '\\{c}' for a literal '{c}'")
        self.i += 1
        return False, False, True

    def escape(self) -> tuple[bool, bool, bool]:
        self.i += 1
        c = self.peek()
        if not c:
            raise self.error("pattern ends with '\\'")
        self.i += 1
        if c in _ASSERT_ESCAPES:
            return False, False, False
        if c in _CLASS_ESCAPES or c in _SIMPLE_ESCAPES or c in _PUNCT or c == "\\" or c == " ":
            return False, False, True
        if c == "x":
            if not re.fullmatch(r"[0-9a-fA-F]{2}", self.s[self.i : self.i + 2]):
                raise self.error("'\\x' needs two hex digits")
            self.i += 2
            return False, False, True
        raise self.error(f"'\\{c}' is not portable between Python and JavaScript")

    def char_class(self) -> None:
        self.i += 1
        if self.peek() == "^":
            self.i += 1
        first = True
        while True:
            c = self.peek()
            if not c:
                raise self.error("missing ']'")
            if c == "]" and not first:
                self.i += 1
                return
            if c == "]":
                raise self.error("empty character class; write '\\]' for a literal ']'")
            if c == "[":
                raise self.error("write '\\[' inside a character class")
            if c == "\\":
                self.i += 1
                e = self.peek()
                if not e:
                    raise self.error("pattern ends with '\\'")
                if e in _ASSERT_ESCAPES:
                    raise self.error(f"'\\{e}' inside a character class differs between engines")
                if not (e in _CLASS_ESCAPES or e in _SIMPLE_ESCAPES or e in _PUNCT or e == "\\" or e == " "):
                    raise self.error(f"'\\{e}' is not portable between Python and JavaScript")
            self.i += 1
            first = False


_PLAIN_NUMBER = re.compile(r"-?\d+(?:\.\d+)?", re.ASCII)


def plain_number(text: str | None) -> TypeGuard[str]:
    """Whether a captured group is a plain decimal (what numeric fingerprints compare; Python's
    float() and JavaScript's parseFloat() read these alike)."""
    return text is not None and _PLAIN_NUMBER.fullmatch(text) is not None


def check_pattern(text: str) -> str | None:
    """None when `text` is in the portable, backtracking-safe subset; otherwise why not."""
    if not (text.isascii() and text.isprintable()):  # printable ASCII: ' ' to '~'
        return "use printable ASCII only (escape anything else, e.g. '\\x27')"
    try:
        _Parser(text).parse()
    except _Bad as e:
        return str(e)
    try:
        if any(twice in text for twice in _SET_OPERATORS):
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # '--', '&&', '~~' or '||' in a class: set operations to come
                re.compile(text, re.ASCII)
        else:
            re.compile(text, re.ASCII)
    except re.error as e:
        return f"not a valid regular expression: {e}"
    except FutureWarning as e:
        return f"{e} (Python will read it differently); escape the repeated character, e.g. '\\-'"
    try:
        _SplitParser(text).alternation()
    except _Bad as e:
        return str(e)
    return None


def compile_pattern(text: str) -> re.Pattern[str]:
    """Compile a checked pattern with the semantics JavaScript gives it."""
    return re.compile(text, re.ASCII)


def compile_line_filter(text: str) -> re.Pattern[bytes] | None:
    """A quick test of raw lines for a checked pattern, or None when it has no bytes form.

    On a line that is ASCII and at most `MAX_LINE` bytes long, this matches whenever the pattern
    matches one of the line's `\\r`-separated segments (the per-segment rule of the matchers):
    ASCII bytes and characters read alike, and `^`/`$` also hold next to a carriage return or a
    newline (multiline), so it can test many such lines joined by newlines in one search. It may
    also match across a carriage return or a newline, so a line it matches still gets the exact
    test; a line it does not match needs no decoding, splitting or per-segment search."""
    out: list[str] = []
    i = 0
    in_class = False
    while i < len(text):
        c = text[i]
        if c == "\\":
            out.append(text[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if text.startswith("^", i + 1):  # negation, not an anchor
                c = "[^"
                i += 1
        elif c == "^":
            c = "(?:^|(?<=\\r))"
        elif c == "$":
            c = "(?=\\r|$)"
        out.append(c)
        i += 1
    try:
        return re.compile("".join(out).encode("ascii"), re.MULTILINE)
    except (re.error, UnicodeEncodeError):
        return None


# --- Competing repeats: the polynomial shapes of slow matching -------------------------------
#
# Two repeats that can take the same characters, with nothing between them that only one of them
# can take ('\d*\d*', '.*foo.*', '(\d+).*'), split one stretch of a line in very many ways, and
# a failed match tries every way: n**3 or worse steps for a line of n characters. Nesting is
# refused above; this pass refuses these too. Each repeat counts its number of possible lengths,
# and the product of those counts over a group of competing repeats must stay within a budget
# (so '.{0,80}x.{0,80}' passes and '.*x.*' does not). Character sets are bit masks: bit c for
# ASCII code point c, bit 128 for every non-ASCII character.


def _bits(*codes: int) -> int:
    return sum(1 << c for c in set(codes))


_ALL = (1 << 129) - 1
_NON_ASCII = 1 << 128
_DIGIT = _bits(*range(48, 58))
_WORD = _DIGIT | _bits(*range(65, 91), *range(97, 123), 95)
_SPACE = _bits(9, 10, 11, 12, 13, 32, 128)  # JavaScript's \s matches non-ASCII spaces too
_ESCAPED_SETS = {"d": _DIGIT, "w": _WORD, "s": _SPACE}
_SIMPLE_CODES = {"t": 9, "n": 10, "r": 13, "f": 12, "v": 11, "0": 0}
_LITERAL_RUN = re.compile(r"[^\\\[\](){}.*+?^$|]+")
_SPLIT_BUDGET = 4 * MAX_LINE  # ways one stretch of a line may be split between competing repeats
_MAX_REPEATS = 32  # repeats and optional parts in one sequence


def _negate(chars: int) -> int:
    return (_ALL ^ chars) | _NON_ASCII


@dataclass(frozen=True)
class _Item:
    """A part of a sequence: a run of literal text, a character (class), or a group as a whole."""

    text: str  # its pattern text, for messages
    at: int  # its offset in the pattern
    chars: int  # every character it can take
    least: int  # its shortest match
    ways: int  # how many lengths (or alternatives) it can match, at most MAX_LINE + 1
    alts: tuple[tuple[_Item, ...], ...] = ()  # a group's alternatives
    literal: bool = False  # a run of literal text: it takes every one of its characters

    def fits(self, chars: int) -> bool:
        """Can it match a non-empty text made only of `chars`?"""
        if self.literal:
            return not self.chars & ~chars
        if not self.alts:
            return bool(self.chars & chars)
        return any(all(x.fits(chars) for x in alt if x.least) and any(x.chars & chars for x in alt) for alt in self.alts)


class _SplitParser(_Reader):
    """Reads a checked pattern into sequences of items and refuses competing repeats in each."""

    def alternation(self) -> list[list[_Item]]:
        alts = [self.sequence()]
        while self.peek() == "|":
            self.i += 1
            alts.append(self.sequence())
        return alts

    def sequence(self) -> list[_Item]:
        items: list[_Item] = []
        while self.peek() and self.peek() not in "|)":
            run = _LITERAL_RUN.match(self.s, self.i)
            if run and len(run.group()) > 1:  # plain text up to the last character (it may be repeated)
                text = run.group()[:-1]
                items.append(_Item(text, self.i, _bits(*map(ord, text)), len(text), 1, literal=True))
                self.i += len(text)
            start = self.i
            atom = self.atom()
            lo, hi = self.quantifier()
            if atom is None:  # an anchor
                continue
            if (lo, hi) == (1, 1):
                items.extend(atom)
                continue
            chars = 0
            for x in atom:
                chars |= x.chars
            size = sum(x.least for x in atom)
            if hi == 1:  # optional: absent, or any way the atom matches
                ways = min(MAX_LINE + 1, 1 + math.prod(x.ways for x in atom))
            else:  # a repeated group holds no quantifier or '|' (refused above): a length per count
                ways = MAX_LINE + 1 if hi is None else min(MAX_LINE + 1, (hi - lo) * max(size, 1) + 1)
            alts = (tuple(atom),) if len(atom) > 1 or atom[0].alts else ()
            items.append(_Item(self.s[start : self.i], start, chars, size * lo, ways, alts))
        _refuse_competing(items)
        return items

    def quantifier(self) -> tuple[int, int | None]:
        c = self.peek()
        if c == "*":
            q: tuple[int, int | None] = (0, None)
        elif c == "+":
            q = (1, None)
        elif c == "?":
            q = (0, 1)
        elif c == "{":
            m = re.compile(r"\{(\d+)(,(\d*))?\}").match(self.s, self.i)
            assert m
            lo = int(m.group(1))
            q = (lo, lo if m.group(2) is None else int(m.group(3)) if m.group(3) else None)
            self.i = m.end() - 1
        else:
            return (1, 1)
        self.i += 1
        if self.peek() == "?":  # lazy: the same ways, tried in another order
            self.i += 1
        return q

    def atom(self) -> list[_Item] | None:
        """The items of one atom, or None for an anchor. A plain group lends its items to the
        enclosing sequence; a group with '|' or a quantifier becomes one item."""
        start = self.i
        c = self.peek()
        if c == "(":
            self.i += 1
            if self.s.startswith("?:", self.i):
                self.i += 2
            alts = self.alternation()
            self.i += 1  # ')'
            if len(alts) == 1 and self.peek() not in ("*", "+", "?", "{"):
                return alts[0]
            chars = 0
            for alt in alts:
                for x in alt:
                    chars |= x.chars
            least = min(sum(x.least for x in alt) for alt in alts)
            ways = min(MAX_LINE + 1, sum(math.prod(x.ways for x in alt) for alt in alts))
            return [_Item(self.s[start : self.i], start, chars, least, ways, tuple(tuple(alt) for alt in alts))]
        if c in "^$":
            self.i += 1
            return None
        if c == "[":
            chars = self.char_class()
        elif c == "\\":
            e = self.s[self.i + 1]
            self.i += 2
            if e in _ASSERT_ESCAPES:
                return None
            chars = self.escaped(e)
        else:
            self.i += 1
            chars = _ALL ^ (1 << 10) if c == "." else 1 << ord(c)
        return [_Item(self.s[start : self.i], start, chars, 1, 1)]

    def escaped(self, e: str) -> int:
        """The characters of the escape `\\e` (self.i is just past `e`)."""
        if e.lower() in _ESCAPED_SETS:
            base = _ESCAPED_SETS[e.lower()]
            return base if e.islower() else _negate(base)
        if e == "x":
            self.i += 2
            return 1 << int(self.s[self.i - 2 : self.i], 16)
        return 1 << _SIMPLE_CODES.get(e, ord(e))

    def char_class(self) -> int:
        self.i += 1
        negated = self.peek() == "^"
        self.i += negated
        chars = 0
        prev: int | None = None
        first = True
        while self.peek() != "]" or first:
            first = False
            if self.peek() == "-" and prev is not None and self.s[self.i + 1] != "]":
                self.i += 1
                top = self.class_char().bit_length() - 1
                chars |= ((1 << (top + 1)) - 1) ^ ((1 << prev) - 1)
                prev = None
                continue
            got = self.class_char()
            chars |= got
            prev = got.bit_length() - 1 if got & (got - 1) == 0 else None
        self.i += 1
        return _negate(chars) if negated else chars

    def class_char(self) -> int:
        c = self.s[self.i]
        self.i += 1
        if c != "\\":
            return 1 << min(ord(c), 128)
        self.i += 1
        return self.escaped(self.s[self.i - 1])


def _refuse_competing(items: list[_Item]) -> None:
    # A choice between fixed alternatives adds a constant factor, not a stretch to split: not a repeat.
    repeats = [k for k, x in enumerate(items) if x.ways > max(1, len(x.alts))]
    if len(repeats) < 2:
        return
    if len(repeats) > _MAX_REPEATS:
        raise _Bad(f"more than {_MAX_REPEATS} repeated or optional parts in a row; be more specific")
    root = {k: k for k in repeats}

    def find(k: int) -> int:
        while root[k] != k:
            k = root[k]
        return k

    pairs: list[tuple[int, int]] = []
    for n, a in enumerate(repeats):
        for b in repeats[n + 1 :]:
            shared = items[a].chars & items[b].chars
            if (
                shared
                and items[a].fits(shared)
                and items[b].fits(shared)
                and all(items[k].fits(shared) for k in range(a + 1, b) if items[k].least)
            ):
                pairs.append((a, b))
                root[find(b)] = find(a)
    splits: dict[int, int] = {}
    for k in repeats:
        splits[find(k)] = splits.get(find(k), 1) * items[k].ways
    for a, b in pairs:
        if splits[find(a)] > _SPLIT_BUDGET:
            first, second = items[a], items[b]
            raise _Bad(
                f"'{first.text}' at offset {first.at} and '{second.text}' at offset {second.at} can take the same "
                "characters, so a long line splits between them in very many ways and a failed match tries them "
                "all (slow); put text between them that only one can match, narrow one (e.g. '[^ ]*' for '.*'), "
                "or drop a leading or trailing '.*' (a search needs none)"
            )


# --- Literal covers: a fast prefilter that both diagnosis engines share -----------------------
#
# `required_literals(p)` returns strings such that every line `p` matches contains at least one
# of them (empty list: no such set, scan every line). The engines find candidate lines with a
# plain substring search and run the regex only there, so results equal a full per-line scan.

_MIN_LITERAL = 3
_Cover = list[str] | None


class _CoverParser(_Reader):
    def alternation(self) -> _Cover:
        covers = [self.sequence()]
        while self.peek() == "|":
            self.i += 1
            covers.append(self.sequence())
        if len(covers) == 1:
            return covers[0]
        if any(c is None for c in covers):
            return None
        return sorted({lit for c in covers for lit in c or []})

    def sequence(self) -> _Cover:
        options: list[list[str]] = []
        run = ""
        while self.peek() and self.peek() not in "|)":
            plain = _LITERAL_RUN.match(self.s, self.i)
            if plain and plain.end() - self.i > 1:  # plain characters but the last (it may be repeated) join the run
                run += self.s[self.i : plain.end() - 1]
                self.i = plain.end() - 1
            char, cover = self.atom()
            least = self.quantifier_min()
            if char is not None and least >= 1:
                run += char
                if self._repeats:  # the character may repeat: the run cannot go on past it
                    if len(run) >= _MIN_LITERAL:
                        options.append([run])
                    run = ""
                continue
            if len(run) >= _MIN_LITERAL:
                options.append([run])
            run = ""
            if cover is not None and least >= 1:
                options.append(cover)
        if len(run) >= _MIN_LITERAL:
            options.append([run])
        if not options:
            return None
        return max(options, key=lambda c: (min(len(x) for x in c), -len(c)))

    _repeats = False

    def quantifier_min(self) -> int:
        c = self.peek()
        self._repeats = False
        if c == "*":
            self.i += 1
            least = 0
            self._repeats = True
        elif c == "+":
            self.i += 1
            least = 1
            self._repeats = True
        elif c == "?":
            self.i += 1
            least = 0
        elif c == "{":
            m = re.compile(r"\{(\d+)(,(\d*))?\}").match(self.s, self.i)
            assert m
            self.i = m.end()
            least = int(m.group(1))
            self._repeats = m.group(2) is not None or least > 1
        else:
            return 1
        if self.peek() == "?":
            self.i += 1
        return least

    def atom(self) -> tuple[str | None, _Cover]:
        """(a literal character or None, the cover of a group or None)."""
        c = self.peek()
        if c == "(":
            self.i += 1
            if self.s.startswith("?:", self.i):
                self.i += 2
            cover = self.alternation()
            self.i += 1  # ')'
            return None, cover
        if c == "[":
            self.i += 1
            if self.peek() == "^":
                self.i += 1
            first = True
            while self.peek() != "]" or first:
                if self.peek() == "\\":
                    self.i += 1
                self.i += 1
                first = False
            self.i += 1
            return None, None
        if c == "\\":
            e = self.s[self.i + 1]
            self.i += 2
            if e == "x":
                value = chr(int(self.s[self.i : self.i + 2], 16))
                self.i += 2
                return value, None
            if e in _PUNCT or e == "\\" or e == " ":
                return e, None
            return None, None
        self.i += 1
        if c in ".^$":
            return None, None
        return c, None


def required_literals(pattern: str) -> list[str]:
    """Substrings one of which every match of a checked `pattern` contains ([] = none known)."""
    return list(_required_literals(pattern))


@lru_cache(maxsize=65536)
def _required_literals(pattern: str) -> tuple[str, ...]:
    cover = _CoverParser(pattern).alternation()
    return tuple(sorted(cover)) if cover else ()
