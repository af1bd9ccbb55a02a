"""Search: a query (free text and #tags) → ranked entries of the catalog; `failpedia search`.

The query language, shared with the browser (templates/static/search.js follows the same rules):

- `#tag` tokens filter: an entry must carry every one (`#ddp #oom`); aliases resolve through the
  tag registry (`#out-of-memory` → `oom`). An unknown tag is an error with a suggestion.
- The remaining words rank the entries that carry every word (title and quick answer weigh most,
  then tags, symptoms and fingerprint example lines, then the body). A word no entry contains is
  ignored, so a pasted log line still finds something.
- Identifiers (`NCCL_BUFFSIZE`, `torch.cuda.OutOfMemoryError`, `c10::DistBackendError`,
  `-9`, `--nproc_per_node`) match whole and exactly (case-insensitively), never split into parts.
  A dotted or `::` path also matches its shorter runs (`OutOfMemoryError` finds
  `torch.OutOfMemoryError`).
- A pasted error line is matched against every fingerprint; the entry whose fingerprint it is
  ranks first (a fingerprint whose `near` evidence is missing counts for less).

Pure functions over a `Catalog`, plus `cmd_search`, the CLI command.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import math
import re
import sys
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from .catalog import Catalog, Record, normalize_tag
from .entrytext import CAMEL_RE, TOKEN_RE, text_fields
from .patterns import MAX_LINE, compile_pattern
from .problems import BuildFailed, FailpediaError, UsageError

__all__ = [
    "Hit",
    "Query",
    "SearchIndex",
    "cmd_search",
    "entry_texts",
    "id_token",
    "identifier_variants",
    "identifiers",
    "is_identifier",
    "parse_query",
    "search",
    "suggest_tags",
]

MAX_IDENTIFIER = 80
# Field weights: the title and quick answer decide most of the ranking (the browser gives
# Pagefind the same emphasis).
WEIGHTS = {"title": 10.0, "summary": 5.0, "tags": 4.0, "symptoms": 3.0, "body": 1.0}
FINGERPRINT_BOOST = 10.0  # a confident fingerprint hit outranks any amount of word matching
CONFIDENT = 6  # strong or definitive, with its `near` evidence: the pasted text names the entry
NEAR_MISSING = 0.3  # a hit whose `near` evidence is not in the pasted text counts this much
LONG_PASTE = 8  # words: a pasted log line rather than a phrase; with a confident hit, it ranks alone

_JOINED_RE = re.compile(r"[A-Za-z0-9][.:/=]+[A-Za-z0-9]")
_SEP_RE = re.compile(r"([.:/=]+)")
_PLAIN_RE = re.compile(r"[a-z]+|[A-Z][a-z]*|[A-Z]+|\d+")  # ordinary words and numbers: never identifiers
_ALNUM_ONE_RE = re.compile(r"[A-Za-z0-9]")
_LETTER_RE = re.compile(r"[A-Za-z]")
_DIGIT_RE = re.compile(r"\d")
_NEGATIVE_RE = re.compile(r"-\d+")
_OPTION_RE = re.compile(r"--[A-Za-z]")
_KEEP_DASH_RE = re.compile(r"-\d|--[A-Za-z]")
_WORD_RE = re.compile(r"[a-z0-9]+")
_ALNUM_RE = re.compile(r"[A-Za-z0-9]+")
_ESCAPES = {"q": "qq", "_": "qu", ".": "qd", "-": "qh", ":": "qc", "/": "qs", "=": "qe"}
_ESCAPE_TABLE = str.maketrans(_ESCAPES)


# --- Identifiers ------------------------------------------------------------------------------


def _clean(token: str) -> str:
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
    found = (_identifier_of(token) for token in TOKEN_RE.findall(text))
    return [token for token in found if token]


@lru_cache(maxsize=1 << 17)
def _identifier_of(token: str) -> str:
    """A raw token's identifier, or '' (words recur, so each spelling is judged once)."""
    if _PLAIN_RE.fullmatch(token):
        return ""
    token = _clean(token)
    return token if is_identifier(token) else ""


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


def id_token(identifier: str) -> str:
    """The single alphanumeric word an identifier is indexed as, so Pagefind keeps it whole:
    'zx' + the lower-case identifier with q _ . - : / = spelled qq qu qd qh qc qs qe, + 'qz'.
    The end mark keeps Pagefind's prefix matching from finding '-98' for '-9'; the browser
    leaves it off only for the identifier still being typed."""
    return "zx" + identifier.lower().translate(_ESCAPE_TABLE) + "qz"


# --- The query --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    text: str  # as typed
    tags: tuple[str, ...]  # canonical tag names, in order
    free: str  # the text without the #tag tokens
    words: tuple[str, ...]  # plain words (lower case, identifiers left out)
    idents: tuple[str, ...]  # identifiers (lower case)


def suggest_tags(catalog: Catalog, words: tuple[str, ...] | list[str], limit: int = 6) -> list[str]:
    """Tags to try when nothing matches: those whose spellings resemble a query word, then the
    most used ones."""
    out: list[str] = []
    for spelling, name in sorted(catalog.aliases.items()):
        if catalog.by_tag.get(name) and name not in out:
            if any(len(w) > 2 and (w in spelling or spelling in w or difflib.SequenceMatcher(None, w, spelling).ratio() >= 0.8) for w in words):
                out.append(name)
    for t in sorted(catalog.used_tags(), key=lambda t: (-len(catalog.by_tag[t]), t)):
        if t not in out:
            out.append(t)
    return out[:limit]


def _suggest_tag(spelling: str, catalog: Catalog) -> str:
    close = difflib.get_close_matches(spelling, sorted(catalog.aliases), n=1, cutoff=0.6)
    if not close:
        close = [s for s in sorted(catalog.aliases) if spelling and (s.startswith(spelling) or spelling in s)][:1]
    if close:
        return f"; did you mean '#{catalog.aliases[close[0]]}'?"
    popular = suggest_tags(catalog, [], limit=8)
    return f"; tags in use include {', '.join('#' + t for t in popular)}" if popular else ""


def parse_query(text: str, catalog: Catalog) -> Query:
    """Split a query into #tags (resolved; unknown ones raise) and free text."""
    tags: list[str] = []
    free: list[str] = []
    for token in text.split():
        if token.startswith("#") and len(token) > 1:
            spelling = normalize_tag(token)
            name = catalog.resolve_tag(spelling)
            if name is None:
                raise FailpediaError(f"unknown tag '#{spelling}'{_suggest_tag(spelling, catalog)}")
            if name not in tags:
                tags.append(name)
        else:
            free.append(token)
    free_text = " ".join(free)
    idents = identifiers(free_text)
    plain = TOKEN_RE.sub(lambda m: " " if is_identifier(_clean(m.group())) else m.group(), free_text)
    words = [_stem(w) for w in _WORD_RE.findall(plain.lower()) if len(w) > 1 or w.isdigit()]
    return Query(text, tuple(tags), free_text, tuple(dict.fromkeys(words)), tuple(dict.fromkeys(i.lower() for i in idents)))


def _stem(word: str) -> str:
    """Plural to singular, enough for prefix matching ('timeouts' finds 'timeout')."""
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


# --- The index --------------------------------------------------------------------------------


def entry_texts(rec: Record) -> dict[str, list[str]]:
    """An entry's searchable text by field, its canonical tags included."""
    fields = text_fields(rec.entry)
    return {"title": fields["title"], "summary": fields["summary"], "tags": [" ".join(rec.tags)],
            "symptoms": fields["symptoms"], "body": fields["body"]}


@dataclass
class _Doc:
    words: dict[str, tuple[list[str], Counter[str]]]  # field → (sorted distinct words, counts)
    idents: Counter[str]  # every lower-case identifier variant → occurrences


@dataclass
class SearchIndex:
    """Per-entry words and identifiers. The corpus-wide part (the camelCase vocabulary) is built
    at once; an entry's own document only when asked for, so a build that renders a few pages
    does the work of a few entries."""

    catalog: Catalog
    camel: frozenset[str] = frozenset()  # words written in camelCase somewhere in the corpus
    _docs: dict[str, _Doc] = field(default_factory=dict)

    @classmethod
    def build(cls, catalog: Catalog) -> "SearchIndex":
        # A word written in camelCase anywhere is an identifier everywhere, so 'PyTorch' also
        # finds the entries that write 'pytorch'. Each entry's head carries its camelCase words.
        return cls(catalog, frozenset().union(*(rec.head.camel for rec in catalog.records.values())))

    def doc(self, slug: str) -> _Doc:
        found = self._docs.get(slug)
        if found is None:
            found = self._docs[slug] = self._make_doc(entry_texts(self.catalog.records[slug]))
        return found

    @property
    def docs(self) -> dict[str, _Doc]:
        """Every entry's document (the CLI's ranking needs them all)."""
        return {slug: self.doc(slug) for slug in self.catalog.records}

    def _make_doc(self, fields: dict[str, list[str]]) -> _Doc:
        words = {}
        for f, parts in fields.items():
            counts = Counter(_WORD_RE.findall("\n".join(parts).lower()))
            words[f] = (sorted(counts), counts)
        return _Doc(words, self._idents(fields))

    def _idents(self, fields: dict[str, list[str]]) -> Counter[str]:
        text = "\n".join(s for parts in fields.values() for s in parts)  # no token spans a newline
        idents: Counter[str] = Counter()
        for token, n in Counter(TOKEN_RE.findall(text)).items():
            ident = _identifier_of(token)
            if ident:
                for variant in identifier_variants(ident):
                    idents[variant] += n
        if self.camel:
            idents.update(w for w in _WORD_RE.findall(text.lower()) if w in self.camel)
        return idents

    def global_digest(self) -> str:
        """What, besides an entry itself, decides its identifier words: the corpus's camelCase
        vocabulary. A build cache keys entry pages on it."""
        return hashlib.sha256("\n".join(sorted(self.camel)).encode()).hexdigest()

    def id_tokens(self, slug: str, repeat: int = 1) -> list[str]:
        """The identifier words Pagefind indexes for one entry (repeated by use, at most `repeat`)."""
        found = self._docs.get(slug)
        idents = found.idents if found is not None else self._idents(entry_texts(self.catalog.records[slug]))  # no words needed
        return [id_token(i) for i, n in sorted(idents.items()) for _ in range(min(n, repeat))]


# --- Ranking ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hit:
    slug: str
    score: float
    fingerprint: bool = False  # found by a fingerprint of the pasted text


def _term_score(doc: _Doc, word: str) -> float:
    """Field-weighted, saturating count of the words that start with `word` (like Pagefind)."""
    score = 0.0
    for f, (keys, counts) in doc.words.items():
        tf = 0
        i = bisect_left(keys, word)
        while i < len(keys) and keys[i].startswith(word):
            tf += counts[keys[i]]
            i += 1
        if tf:
            score += WEIGHTS[f] * tf / (tf + 1.0)
    return score


def _looks_pasted(text: str) -> bool:
    """Worth matching against the fingerprints (search.js asks the same)."""
    return len(_ALNUM_RE.findall(text)) >= 3 or len(text) >= 24


def _fingerprint_scores(catalog: Catalog, text: str) -> dict[str, float]:
    lines = [line[:MAX_LINE] for line in text.splitlines() if line.strip()]
    if not lines:
        return {}
    out: dict[str, float] = {}
    for slug, rec in catalog.records.items():
        scores = []
        for fp in rec.head.fingerprints:
            pattern = compile_pattern(fp.pattern)
            hits = [i for i, line in enumerate(lines) if pattern.search(line)]
            if not hits:
                continue
            near = True
            if fp.near:
                near_re = compile_pattern(fp.near)
                near = any(near_re.search(line) and abs(i - h) <= fp.window for h in hits for i, line in enumerate(lines))
            scores.append(fp.score * (1.0 if near else NEAR_MISSING))
        if scores:
            scores.sort(reverse=True)
            # Weak hits (supporting, or `near` missing) only nudge the word ranking.
            boost = FINGERPRINT_BOOST if scores[0] >= CONFIDENT else 1.0
            out[slug] = boost * (scores[0] + 0.1 * sum(scores[1:]))
    return out


def _text_scores(index: SearchIndex, pool: list[str], query: Query) -> dict[str, float]:
    """Entries of the pool that hold every live word and identifier, with their scores. A word or
    identifier no entry holds is not live (it is ignored, as Pagefind ignores it)."""
    docs = index.docs
    n = max(len(docs), 1)
    terms: list[dict[str, float]] = []
    for w in query.words:
        found = {slug: s for slug, d in docs.items() if (s := _term_score(d, w))}
        terms += [{slug: s * math.log(1 + n / len(found)) for slug, s in found.items()}] if found else []
    for i in query.idents:
        found = {slug: min(d.idents[i], 3) / 3 for slug, d in docs.items() if i in d.idents}
        terms += [{slug: 8.0 * s * math.log(1 + n / len(found)) for slug, s in found.items()}] if found else []
    if not terms:
        return {}
    return {slug: sum(t[slug] for t in terms) for slug in pool if all(slug in t for t in terms)}


def search(index: SearchIndex, query: Query) -> list[Hit]:
    """Entries that carry every query tag, ranked best first (ties by slug)."""
    catalog = index.catalog
    pool = [s for s, r in catalog.records.items() if all(t in r.tags for t in query.tags)]
    fp = _fingerprint_scores(catalog, query.free) if _looks_pasted(query.free) else {}
    # A long pasted line that names its entries: its other words would only add noise.
    textual = not (len(_ALNUM_RE.findall(query.free)) >= LONG_PASTE and any(s >= FINGERPRINT_BOOST * CONFIDENT for s in fp.values()))

    scores: dict[str, float] = {}
    if textual and (query.words or query.idents):
        scores = _text_scores(index, pool, query)
    elif textual and query.tags:
        # Tags alone: entries where the tags come first in the tag list are the most about them.
        for slug in pool:
            tags = catalog.records[slug].tags
            scores[slug] = sum(1.0 / (1 + tags.index(t)) for t in query.tags)
    for slug, s in fp.items():
        if slug in pool:
            scores[slug] = scores.get(slug, 0.0) + s
    hits = [Hit(slug, round(s, 3), slug in fp) for slug, s in scores.items()]
    return sorted(hits, key=lambda h: (-h.score, h.slug))


# --- The command ------------------------------------------------------------------------------


def cmd_search(args: argparse.Namespace) -> int:
    """`failpedia search QUERY`: ranked entries; --json for tools. Exit 0 found, 1 none, 2 bad query, 3 no usable entries."""
    from .build import load_catalog
    from .config import load_config
    from .locate import locate
    from .pages import entry_url
    from .problems import SetupError

    text = " ".join(args.query).strip()
    if not text:
        raise UsageError("empty query: give words, #tags or a pasted error line, e.g. failpedia search '#ddp #oom bucket'")
    enc = locate(args.entries)
    try:
        catalog = load_catalog(enc.entries)
    except BuildFailed as e:
        errors = sum(p.severity == "error" for p in e.problems)
        raise SetupError(f"cannot search: the entries in {enc.entries} have {errors} error{'s' * (errors != 1)}; run 'failpedia check' to see them") from None
    config = load_config(enc.project)
    query = parse_query(text, catalog)
    hits = search(SearchIndex.build(catalog), query)[: args.top]
    results = [
        {"slug": h.slug, "title": catalog.records[h.slug].head.title, "url": config.base_url + entry_url(h.slug), "score": h.score, "tags": list(catalog.records[h.slug].tags)}
        for h in hits
    ]
    if args.json:
        print(json.dumps({"query": text, "results": results}, indent=2, ensure_ascii=False))
        return 0 if results else 1
    if not results:
        tags = ", ".join("#" + t for t in suggest_tags(catalog, [*query.words, *query.idents]) if t not in query.tags)
        print(f"no entries match '{text}': every #tag and every word must match; try fewer words, or a tag: {tags}", file=sys.stderr)
        return 1
    width = len(str(len(results)))
    for n, r in enumerate(results, 1):
        print(f"{n:>{width}}. {r['slug']}  {r['title']}")
        print(f"{'':>{width}}  {r['url']}")
    return 0
