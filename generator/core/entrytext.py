"""An entry's searchable text by field (pure): search.py indexes it; validate.py keeps a digest
of it in each entry's `Head`, so a rebuild knows which entries' index terms changed."""

from __future__ import annotations

import re

from .schema import Entry

__all__ = ["CAMEL_RE", "TOKEN_RE", "text_fields"]

TOKEN_RE = re.compile(r"[A-Za-z0-9_.:/=\-]+")  # identifier-ish runs
CAMEL_RE = re.compile(r"[a-z][A-Z]")


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
