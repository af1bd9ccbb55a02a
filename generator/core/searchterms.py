"""Search terms: the identifiers, stemmed words and synonym spellings of a text, as search
indexes and matches them (the rules are in search.py's docstring; search.js has the same).

Text in, terms out: below the catalog, which checks the synonym spellings with `member_terms`.
"""

from __future__ import annotations

import re
from functools import lru_cache

from .entrytext import CAMEL_RE, TOKEN_RE

__all__ = ["ALNUM_RE", "IDENTIFIER_CANDIDATE_RE", "MAX_IDENTIFIER", "STOP", "WORD_RE", "clean_token", "edit1", "identifier_of", "identifier_terms", "identifier_variants", "identifiers", "is_identifier", "member_terms", "phrase_term", "stem", "words_of"]

MAX_IDENTIFIER = 80

_JOINED_RE = re.compile(r"[A-Za-z0-9][.:/=]+[A-Za-z0-9]")
_SEP_RE = re.compile(r"([.:/=]+)")
_PLAIN_RE = re.compile(r"[a-z]+|[A-Z][a-z]*|[A-Z]+|\d+")  # ordinary words and numbers: never identifiers
_ALNUM_ONE_RE = re.compile(r"[A-Za-z0-9]")
_LETTER_RE = re.compile(r"[A-Za-z]")
_DIGIT_RE = re.compile(r"\d")
_NEGATIVE_RE = re.compile(r"-\d+")
_OPTION_RE = re.compile(r"--[A-Za-z]")
_KEEP_DASH_RE = re.compile(r"-\d|--[A-Za-z]")
WORD_RE = re.compile(r"[a-z0-9]+")
ALNUM_RE = re.compile(r"[A-Za-z0-9]+")


# --- Identifiers ------------------------------------------------------------------------------


def clean_token(token: str) -> str:
    """A token without the punctuation around it (a leading '-' kept for -9 and --option)."""
    token = token.rstrip(".:/=-").lstrip(".:/=")
    if token.startswith("-") and not _KEEP_DASH_RE.match(token):
        token = token.lstrip("-")
    return token


def is_identifier(token: str) -> bool:
    """Whether a cleaned token is matched whole: it has `_`, a `.:/=` between alphanumerics,
    a camelCase hump, letters and digits (`c10d`, `fp16`), or is a negative number (`-9`) or
    a long option (`--foo`)."""
    if not 2 <= len(token) <= MAX_IDENTIFIER or _PLAIN_RE.fullmatch(token) or "://" in token or not _ALNUM_ONE_RE.search(token):
        return False
    return bool(
        "_" in token
        or _JOINED_RE.search(token)
        or CAMEL_RE.search(token)
        or (_LETTER_RE.search(token) and _DIGIT_RE.search(token))
        or _NEGATIVE_RE.fullmatch(token)
        or _OPTION_RE.match(token)
    )


def identifiers(text: str) -> list[str]:
    """The identifiers in `text`, in order, as written."""
    found = (identifier_of(token) for token in TOKEN_RE.findall(text))
    return [token for token in found if token]


@lru_cache(maxsize=1 << 17)
def identifier_of(token: str) -> str:
    """A raw token's identifier, or '' (words recur, so each spelling is judged once)."""
    if _PLAIN_RE.fullmatch(token):
        return ""
    token = clean_token(token)
    return token if is_identifier(token) else ""


# The raw tokens (TOKEN_RE runs) that may hold an identifier: those with a character of
# `_.:/=-`, a digit or a camelCase hump (is_identifier needs one). A whole run or nothing: the
# lookbehind starts a match only where a run starts, and the repeats reach its ends.
IDENTIFIER_CANDIDATE_RE = re.compile(r"(?<![A-Za-z0-9_.:/=\-])[A-Za-z0-9_.:/=\-]*?(?:[_.:/=\-0-9]|[a-z][A-Z])[A-Za-z0-9_.:/=\-]*")


@lru_cache(maxsize=1 << 17)
def identifier_terms(token: str) -> tuple[str, ...]:
    """The index terms a raw token adds beside its words: '=' + each form of its identifier
    that is not a plain word (none for a token that holds no identifier)."""
    ident = identifier_of(token)
    return tuple("=" + v for v in identifier_variants(ident) if not v.isalnum()) if ident else ()


@lru_cache(maxsize=1 << 16)
def identifier_variants(token: str) -> frozenset[str]:
    """The lower-case forms one identifier is found by: itself and each shorter run of its
    `.:/=`-separated parts that is still an identifier (`torch.cuda.OutOfMemoryError` →
    `cuda.outofmemoryerror`, `outofmemoryerror`, ...)."""
    out = {token.lower()}
    pieces = _SEP_RE.split(token)
    words, seps = pieces[0::2], pieces[1::2]
    n = len(words)
    if 2 <= n <= 8:
        for i in range(n):
            for j in range(i + 1, min(n, i + 4) + 1):
                if (i, j) == (0, n) or not words[i] or not words[j - 1]:
                    continue
                sub = "".join(w + (seps[k] if k < j - 1 else "") for k, w in enumerate(words[i:j], start=i))
                if is_identifier(sub):
                    out.add(sub.lower())
    return frozenset(out)


# --- Words ------------------------------------------------------------------------------------

# Words a query drops (an entry still indexes them, for phrases such as 'out of memory'): function
# words, and the words any question about a failure has ('error', 'getting', 'fix').
STOP = frozenset(
    "a an and are as at be but by can could do does did for from had has have how i if in into is it its "
    "me my of on or our so that the their then there this to was we what when where which while who why "
    "will with would you your error get got getting issue problem help fix solv "
    # and the words that only place or qualify a symptom ('loss explosion during training'), stemmed
    "dur after befor whil until only still just also even again som any every each all very too than "
    "using sometim alway suddenly randomly".split()
)
_PLURALS = (("ies", "y"), ("sses", "ss"), ("ches", "ch"), ("shes", "sh"), ("xes", "x"), ("zes", "z"))
_KEEP_S = ("ss", "us", "is")


@lru_cache(maxsize=1 << 17)
def stem(word: str) -> str:
    """A light English stemmer (search.js has the same): plural, then -ing/-ed, then a final e,
    then a doubled consonant; words with digits and words of 3 letters or fewer stay as they are.
    It maps the forms of one word together ('hangs', 'hanging' → 'hang'; 'explode', 'exploding'
    → 'explod'); it is not meant to make real words."""
    if len(word) <= 3 or not word.isalpha():
        return word
    w = word
    for suffix, repl in _PLURALS:
        if w.endswith(suffix):
            w = w[: -len(suffix)] + repl
            break
    else:
        if w.endswith("s") and not w.endswith(_KEEP_S):
            w = w[:-1]
    stripped = False
    for suffix in ("ing", "ed"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)]
            stripped = True
            break
    if w.endswith("e") and len(w) >= 4:
        w = w[:-1]
    if stripped and len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "lsz" and w[-1] not in "aeiou":
        w = w[:-1]
    return w


def words_of(text: str) -> list[str]:
    """The stemmed words of a text, in order."""
    return list(map(stem, WORD_RE.findall(text.lower())))


def edit1(a: str, b: str) -> bool:
    """Whether a and b differ by exactly one insertion, deletion, substitution or swap of two
    neighbours (search.js has the same)."""
    la, lb = len(a), len(b)
    if a == b or abs(la - lb) > 1:
        return False
    i = 0
    while i < min(la, lb) and a[i] == b[i]:
        i += 1
    if la == lb:
        if a[i + 1 :] == b[i + 1 :]:
            return True
        return i + 1 < la and a[i] == b[i + 1] and a[i + 1] == b[i] and a[i + 2 :] == b[i + 2 :]
    return a[i + 1 :] == b[i:] if la > lb else a[i:] == b[i + 1 :]


# --- Synonyms ---------------------------------------------------------------------------------


def member_terms(spelling: str) -> tuple[str, ...]:
    """What one synonym spelling is matched as: ('=ident',) for an identifier, else its stemmed
    words (one word, or a phrase)."""
    tokens = spelling.split()
    if len(tokens) == 1:
        ident = clean_token(tokens[0])
        if is_identifier(ident) and not ident.isalnum():
            return ("=" + ident.lower(),)
    return tuple(words_of(spelling))


def phrase_term(words: tuple[str, ...] | list[str]) -> str:
    """The term of a synonym phrase (its stemmed words): '^' + the words joined by '_'."""
    return "^" + "_".join(words)
