"""An entry's searchable text by field, and the camelCase words in it (pure).

search.py ranks and indexes this text; validate.py keeps each entry's camelCase words in its
`Head`, so the corpus-wide vocabulary is known without loading every full entry again.
"""

from __future__ import annotations

import re

from .schema import Entry

__all__ = ["CAMEL_RE", "TOKEN_RE", "camel_words", "camel_words_in", "text_fields"]

TOKEN_RE = re.compile(r"[A-Za-z0-9_.:/=\-]+")  # identifier-ish runs
CAMEL_RE = re.compile(r"[a-z][A-Z]")
# The capital of each hump, found from the capitals: a search for a lower-case letter first
# stops at nearly every character (0.34 → 0.22 ms per entry).
_HUMP_RE = re.compile(r"[A-Z](?<=[a-z][A-Z])")


def text_fields(e: Entry) -> dict[str, list[str]]:
    """The entry's own text by search field (markdown source; punctuation is split anyway); the
    tags field is the catalog's, added by search.entry_texts."""
    body: list[str] = [s.why for s in e.symptoms]
    body += [*e.observe, e.mechanism, *e.affected, *e.confirm, e.fix.summary, *e.fix.steps]
    body += [x for c in e.fix.code for x in (c.caption or "", c.code)]
    body += [e.fix.verify.code, e.fix.verify.expect, *e.prevention]
    body += [x for f in e.faq for x in (f.q, f.a)]
    body += [x for d in e.dead_ends for x in (d.attempt, d.why)]
    body += [v.note for v in e.versions if v.note]
    return {
        "title": [e.title],
        "summary": [e.summary],
        "symptoms": [s.signal for s in e.symptoms] + [x for fp in e.fingerprints for x in fp.examples],
        "body": body,
    }


_RUN_RE = re.compile(r"[A-Za-z0-9_.:/=\-]*")  # TOKEN_RE's characters, from a position on


def camel_words(e: Entry) -> frozenset[str]:
    """The lower-cased tokens written in camelCase ('PyTorch' → 'pytorch'): alphanumeric, with a
    lower-to-upper hump."""
    return camel_words_in("\n".join(s for parts in text_fields(e).values() for s in parts))


def camel_words_in(text: str) -> frozenset[str]:
    """Every TOKEN_RE token of `text` that is alphanumeric and matches CAMEL_RE, lower-cased.

    Found from the humps outwards (a hump lies inside one token; the token runs as far as its
    characters do on both sides), so only the few tokens with a hump are looked at: 3× faster
    than testing all of an entry's tokens, which cost a sixth of parsing it. A test compares the
    two ways."""
    out: set[str] = set()
    end, backwards = -1, ""
    for m in _HUMP_RE.finditer(text):
        i = m.start() - 1
        if i < end:  # another hump of the token just taken
            continue
        backwards = backwards or text[::-1]
        start = len(text) - _RUN_RE.match(backwards, len(text) - 1 - i).end()
        end = _RUN_RE.match(text, i).end()
        token = text[start:end]
        if token.isalnum():
            out.add(token.lower())
    return frozenset(out)
