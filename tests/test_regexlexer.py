"""regexlexer.py joins a Pygments RegexLexer's rules into one regex per state: the tokens must be
Pygments' own, for every language a code example can use, on every example and on strings made
to break the joining (string prefixes, heredocs with backreferences, f-strings, TOML dates)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from pygments.lexer import RegexLexer
from pygments.lexers import get_lexer_by_name

from generator import markdown as md
from generator.build import load_catalog
from generator.regexlexer import WARMUP, _join, _States, _tokens, accelerate

REPO = Path(__file__).resolve().parent.parent
LANGUAGES = sorted(set(md._LEXERS.values()))
PIECES = [*"\"'`$#{}()[]<>\\\n\t :=,.-+*/%!@&|;~^?0123456789eEjJxX_", "rb", "Rb", "f", "F", "u", "br", "'''", '"""', "<<EOF",
          "<<-'END'", "EOF\n", "END\n", "f'{", "}'", "rb'", "${", "$((", "))", "\\\n", "# ", "def ", "class ", "lambda ", "async ",
          "await ", "match ", "case ", "@", "[[", "]]", "true", "1979-05-27T07:32:00Z", "0x1F", "1e-3", "inf", "nan", "é", "\u00a0",
          "import ", "from ", " as ", "print(", "if [[ ", "; then", "fi", "export A=", "key = ", "[table]", "#!", "\r\n"]


def _examples() -> list[str]:
    out = []
    for rec in load_catalog(REPO / "entries").records.values():
        out += [ex.code for ex in [*rec.entry.fix.code, rec.entry.fix.verify]]
    return out


def _joined(name: str) -> tuple[RegexLexer, _States]:
    lexer = get_lexer_by_name(name, stripnl=False, ensurenl=True)
    assert isinstance(lexer, RegexLexer)
    return lexer, _States(lexer._tokens)


@pytest.mark.parametrize("name", [n for n in LANGUAGES if type(get_lexer_by_name(n)).get_tokens_unprocessed is RegexLexer.get_tokens_unprocessed])
def test_joined_states_give_pygments_tokens(name: str) -> None:
    lexer, states = _joined(name)
    examples = _examples()
    rnd = random.Random(20261130)
    texts = examples + ["".join(rnd.choice(PIECES) for _ in range(rnd.randint(0, 40))) for _ in range(1500)]
    for example in rnd.sample(examples, 60):  # real code with a few pieces pushed in
        chars = list(example)
        for _ in range(rnd.randint(1, 8)):
            chars.insert(rnd.randint(0, len(chars)), rnd.choice(PIECES))
        texts.append("".join(chars))
    for text in texts:
        assert list(_tokens(lexer, states, text, ("root",))) == list(RegexLexer.get_tokens_unprocessed(lexer, text)), repr(text[:300])
    assert any(by is not None for matchers in states.values() for _, by, _ in matchers)  # something was joined


def test_rules_that_cannot_join_stay_alone_in_their_place() -> None:
    """Bash's heredoc rule uses a backreference: it is tried alone, between the runs before and
    after it, and a heredoc still lexes as Pygments lexes it."""
    lexer, states = _joined("bash")
    matchers = states["root"]
    alone = [rule[0].__self__.pattern for _, by, rule in matchers if by is None]
    assert any("\\2" in p for p in alone) and len(matchers) >= 3
    text = "cat <<'EOF' > x.sh\necho $HOME ${A:-b}\nEOF\necho done # ok\n"
    assert list(_tokens(lexer, states, text, ("root",))) == list(RegexLexer.get_tokens_unprocessed(lexer, text))
    flagged = get_lexer_by_name("python")._tokens["root"]  # (?i) string prefixes join as scoped flags
    joined = _join(flagged)
    assert len(joined) == 1 and joined[0][1] is not None and len(joined[0][1]) == len(flagged)


def test_a_lexer_joins_its_states_after_warming_up() -> None:
    """The first WARMUP blocks use Pygments' loop (a one-page rebuild skips the 0.1 s of regex
    compilation); later ones the joined states, each compiled when first entered."""
    lexer = accelerate(get_lexer_by_name("python", stripnl=False, ensurenl=True))
    states = lexer.get_tokens_unprocessed.__closure__  # the _States the lexer fills
    table = next(c.cell_contents for c in states if isinstance(c.cell_contents, _States))
    text = 'x = f"{a!r:>{w}}" + rb"\\d" # note\n'
    expected = list(RegexLexer.get_tokens_unprocessed(lexer, text))
    for _ in range(WARMUP):
        assert list(lexer.get_tokens_unprocessed(text)) == expected
    assert not table
    assert list(lexer.get_tokens_unprocessed(text)) == expected
    assert "root" in table and len(table) < len(lexer._tokens)


def test_other_lexers_are_left_as_they_are() -> None:
    json_lexer = get_lexer_by_name("json")
    assert accelerate(json_lexer) is json_lexer and "get_tokens_unprocessed" not in vars(json_lexer)
    assert md._lexer("python").get_tokens_unprocessed.__name__ == "get_tokens_unprocessed"
    assert "get_tokens_unprocessed" in vars(md._lexer("python"))
