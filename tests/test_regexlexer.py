"""regexlexer.py tries, at each position, only the RegexLexer rules that can start with the
character there. The tokens must be Pygments' own, for every language a code example can use, on
every example and on strings made to break it; and the first characters read off a rule's regex
must include every character a match of it really starts with."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from pygments.lexer import RegexLexer
from pygments.lexers import get_lexer_by_name

from generator.site import markdown as md
from generator.site.build import load_catalog
from generator.site.regexlexer import _first, accelerate

REPO = Path(__file__).resolve().parent.parent
LANGUAGES = [n for n in sorted(set(md._LEXERS.values())) if type(get_lexer_by_name(n)).get_tokens_unprocessed is RegexLexer.get_tokens_unprocessed]
PIECES = [*"\"'`$#{}()[]<>\\\n\t :=,.-+*/%!@&|;~^?0123456789eEjJxX_", "rb", "Rb", "f", "F", "u", "br", "'''", '"""', "<<EOF",
          "<<-'END'", "EOF\n", "END\n", "f'{", "}'", "rb'", "${", "$((", "))", "\\\n", "# ", "def ", "class ", "lambda ", "async ",
          "await ", "match ", "case ", "@", "[[", "]]", "true", "1979-05-27T07:32:00Z", "0x1F", "1e-3", "inf", "nan", "é", "\u00a0",
          "\u212a", "\u017f", "\u0130", "\u0663", "\x1c", "import ", "from ", " as ", "print(", "if [[ ", "; then", "fi", "export A=",
          "key = ", "[table]", "#!", "\r\n"]


def _examples() -> list[str]:
    out = []
    for rec in load_catalog(REPO / "entries").records.values():
        out += [ex.code for ex in [*rec.entry.fix.code, rec.entry.fix.verify]]
    return out


def _texts(seed: int, made: int) -> list[str]:
    """Every code example, examples with pieces pushed in, and strings of pieces alone."""
    examples = _examples()
    rnd = random.Random(seed)
    texts = examples + ["".join(rnd.choice(PIECES) for _ in range(rnd.randint(0, 40))) for _ in range(made)]
    for example in rnd.sample(examples, 60):
        chars = list(example)
        for _ in range(rnd.randint(1, 8)):
            chars.insert(rnd.randint(0, len(chars)), rnd.choice(PIECES))
        texts.append("".join(chars))
    return texts


@pytest.mark.parametrize("name", LANGUAGES)
def test_tokens_are_pygments_own(name: str) -> None:
    plain = get_lexer_by_name(name, stripnl=False, ensurenl=True)
    fast = accelerate(get_lexer_by_name(name, stripnl=False, ensurenl=True))
    assert "get_tokens_unprocessed" in vars(fast)
    for text in _texts(20261130, 1500):
        assert list(fast.get_tokens_unprocessed(text)) == list(plain.get_tokens_unprocessed(text)), repr(text[:300])


@pytest.mark.parametrize("name", LANGUAGES)
def test_a_rule_matches_only_where_its_first_characters_are(name: str) -> None:
    """Soundness, rule by rule: wherever a rule's own regex matches in the test texts, the
    character there is one of the rule's first characters (or the rule is tried everywhere)."""
    lexer = get_lexer_by_name(name, stripnl=False, ensurenl=True)
    rules = {rule[0].__self__: rule[0] for state in lexer._tokens.values() for rule in state}
    firsts = {pattern: _first(match) for pattern, match in rules.items()}
    narrowed = [p for p, f in firsts.items() if f is not None]
    assert len(narrowed) > len(rules) * 0.8, "most rules start with known characters"
    texts = [t for t in _texts(7, 300) if len(t) < 2000]
    for pattern in narrowed:
        codes, other = firsts[pattern]  # type: ignore[misc]
        for text in texts:
            for pos in range(len(text)):
                if pattern.match(text, pos):
                    code = ord(text[pos])
                    assert (code in codes) if code < 128 else other, (pattern.pattern[:120], text[pos], text[max(0, pos - 20):pos + 20])


@pytest.mark.parametrize(("regex", "flags", "starts", "other"), [
    (r"(def)(\s+)", 0, "d", False),
    (r"\b(?:if|else)\b", 0, "ei", False),
    (r"[rRuUbB]{,2}'", 0, "rRuUbB'", False),  # an optional prefix: the quote can start it too
    (r"(?=x)y", 0, "y", False),  # a lookahead consumes nothing
    (r"\s+", 0, "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f ", True),
    (r"k", re.I, "kK", True),  # and the Kelvin sign
    (r"\u0130", re.I, "iI", True),  # İ folds to 'i' in Python's engine
    (r"[a-c]", re.I, "abcABC", True),
    (r"é", 0, "", True),
])
def test_first_characters_of_regexes(regex: str, flags: int, starts: str, other: bool) -> None:
    pattern = re.compile(regex, flags)
    first = _first(pattern.match)
    assert first == (frozenset(map(ord, starts)), other)
    for code in range(128):  # every ASCII character left out really cannot start a match
        if code not in first[0]:
            assert not any(pattern.match(chr(code) + rest) for rest in ("", "x", " ", "f", "e", "lse", "\n", "y")), chr(code)


@pytest.mark.parametrize("regex", ["", ".+", "[^a]", r"\S", "(a)?", "x*", r"(a)?\1", "(a)?(?(1)b|c)", r"[\u0100-\u0200]"])
def test_regexes_that_could_start_anywhere_are_tried_everywhere(regex: str) -> None:
    flags = re.I if regex.startswith("[\\u01") else 0
    assert _first(re.compile(regex, flags).match) is None


def test_other_lexers_are_left_as_they_are() -> None:
    json_lexer = get_lexer_by_name("json")
    assert accelerate(json_lexer) is json_lexer and "get_tokens_unprocessed" not in vars(json_lexer)
    assert "get_tokens_unprocessed" in vars(md._lexer("python"))
