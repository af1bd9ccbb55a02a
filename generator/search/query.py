"""Search: a query (free text and #tags) → ranked entries of the catalog; `failpedia search`.

One ranking for both engines: `failpedia search` ranks with `SearchIndex` in memory, the browser
(templates/static/search.js) with the same index read from search/ (`files.py` and `postings.py` write it),
by the same rules, in integers, so both give the same order:

- `#tag` tokens filter: an entry must carry every one (`#ddp #oom`); aliases resolve through the
  tag registry (`#out-of-memory` → `oom`). An unknown tag is an error with a suggestion.
- The free text becomes clauses: identifiers, synonym phrases (entries/synonyms.yaml), and the
  other words, stemmed (`hangs` → `hang`), function words dropped. Every clause must match;
  when no entry matches them all, the entries that match the most of them rank.
- A clause's worth in an entry is the best of its matches: the word or phrase itself (6), a
  synonym's group (5), a longer word it starts (3), a word one typo away (2, for words of 5+ letters,
  only when the word itself is in no entry), each times the term's weight in the entry (title,
  by how much of it the term covers; then quick answer and tags, the first tag most; then
  symptoms and fingerprint examples; then the body) and its rarity (idf); a longer word's or a
  typo's rarity counts no more than the typed word's, a synonym's as the mean of its group's and
  the typed word's.
- Identifiers (`NCCL_BUFFSIZE`, `torch.cuda.OutOfMemoryError`, `c10::DistBackendError`,
  `-9`, `--nproc_per_node`) match whole and exactly (case-insensitively), never split into parts.
  A dotted or `::` path also matches its shorter runs (`OutOfMemoryError` finds
  `torch.OutOfMemoryError`).
- A pasted error line is matched against every fingerprint; the entry whose fingerprint it is
  ranks first (a fingerprint whose `near` evidence is missing counts for less).

Pure functions over a `Catalog` (the command is commands/search.py).
"""

from __future__ import annotations

import difflib
import math
from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.catalog import Catalog, Record, normalize_tag
from ..core.entrytext import TOKEN_RE, text_fields
from ..core.parallel import checkpoint
from ..core.patterns import MAX_LINE, compile_pattern
from ..core.problems import FailpediaError
from ..core.searchterms import (
    ALNUM_RE, IDENTIFIER_CANDIDATE_RE, STOP, WORD_RE, clean_token, edit1, identifier_terms, identifier_variants, identifiers, is_identifier, member_terms, phrase_term, stem, words_of,
)

__all__ = [
    "Hit",
    "Query",
    "SearchIndex",
    "Synonyms",
    "alternatives",
    "doc_terms",
    "edit1",
    "fingerprint_scores",
    "phrase_term",
    "query_clauses",
    "rank",
    "stem",
    "vocab_key",
    "entry_texts",
    "identifier_variants",
    "identifiers",
    "is_identifier",
    "member_terms",
    "parse_query",
    "search",
    "suggest_tags",
]


@dataclass(frozen=True)
class Synonyms:
    """The synonym groups of entries/synonyms.yaml, compiled: each spelling → its group's term
    ('~' + the group's first spelling's terms joined by '_'). A phrase is a term of its own too
    ('^' + its words joined by '_'), in `words` with its group, so that the entries that use the
    query's own phrase rank above those that say it another way, as for one word."""

    words: dict[str, str]  # one stemmed word or '=ident' → group term
    phrases: dict[tuple[str, ...], str]  # two or more stemmed words → group term
    longest: int  # words in the longest phrase

    @classmethod
    def of(cls, groups: tuple[tuple[str, ...], ...]) -> "Synonyms":
        words: dict[str, str] = {}
        phrases: dict[tuple[str, ...], str] = {}
        for group in groups:
            members = [m for m in (member_terms(s) for s in group) if m]
            if not members:
                continue
            term = "~" + "_".join(members[0]).lstrip("=")
            for m in members:
                if len(m) == 1:
                    words.setdefault(m[0], term)
                else:
                    phrases.setdefault(m, term)
                    words.setdefault(phrase_term(m), term)
        return cls(words, phrases, max((len(p) for p in phrases), default=0))

    def as_json(self) -> dict[str, Any]:
        return {"words": dict(sorted(self.words.items())), "phrases": sorted([list(p), t] for p, t in self.phrases.items()), "longest": self.longest}

    def in_words(self, words: list[str]) -> tuple[Counter[str], Counter[str]]:
        """Group terms and phrase terms of the phrases in a word sequence: how often each occurs, and how many
        words those occurrences cover."""
        out: Counter[str] = Counter()
        covered: Counter[str] = Counter()
        if not self.phrases:
            return out, covered
        firsts = {p[0] for p in self.phrases}
        for i, w in enumerate(words):
            if w in firsts:
                for n in range(2, self.longest + 1):
                    term = self.phrases.get(tuple(words[i : i + n]))
                    if term:
                        for t in (term, phrase_term(words[i : i + n])):
                            out[t] += 1
                            covered[t] += n
        return out, covered


# --- The query --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    text: str  # as typed
    tags: tuple[str, ...]  # canonical tag names, in order
    free: str  # the text without the #tag tokens
    words: tuple[str, ...]  # plain words (lower case, stemmed, identifiers left out)
    idents: tuple[str, ...]  # identifiers (lower case)
    clauses: tuple[tuple[str, str], ...] = ()  # ('w', stemmed word) | ('i', '=ident') | ('p', phrase term): each must match


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


def parse_query(text: str, catalog: Catalog, synonyms: Synonyms | None = None) -> Query:
    """Split a query into #tags (resolved; unknown ones raise) and free text, and the free text
    into clauses: identifiers, synonym phrases, and the other words but function words."""
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
    clauses = query_clauses(free_text, synonyms or Synonyms({}, {}, 0))
    idents = tuple(dict.fromkeys(t[1:] for k, t in clauses if k == "i"))
    words = tuple(dict.fromkeys(t for k, t in clauses if k == "w"))
    return Query(text, tuple(tags), free_text, words, idents, clauses)


def query_clauses(free: str, synonyms: Synonyms) -> tuple[tuple[str, str], ...]:
    """The clauses of a query's free text (search.js's queryClauses is the same)."""
    seq: list[tuple[str, str]] = []  # ('i', '=ident') or ('w', stemmed word), in order
    pos = 0
    for m in TOKEN_RE.finditer(free):
        seq += [("w", stem(w)) for w in WORD_RE.findall(free[pos : m.start()].lower())]
        pos = m.end()
        tok = clean_token(m.group())
        if is_identifier(tok) and not tok.isalnum():
            seq.append(("i", "=" + tok.lower()))
        else:
            seq += [("w", stem(w)) for w in WORD_RE.findall(m.group().lower())]
    seq += [("w", stem(w)) for w in WORD_RE.findall(free[pos:].lower())]
    seq = [(k, t) for k, t in seq if k == "i" or len(t) > 1 or t.isdigit()]
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(seq):
        for n in range(min(synonyms.longest, len(seq) - i), 1, -1):
            part = seq[i : i + n]
            term = synonyms.phrases.get(tuple(t for _, t in part)) if all(k == "w" for k, _ in part) else None
            if term:
                out.append(("p", phrase_term([t for _, t in part])))
                i += n
                break
        else:
            out.append(seq[i])
            i += 1
    if any(k != "w" or t not in STOP for k, t in out):
        out = [(k, t) for k, t in out if k != "w" or t not in STOP]
    return tuple(dict.fromkeys(out))


# --- The index --------------------------------------------------------------------------------


def entry_texts(rec: Record, catalog: Catalog) -> dict[str, list[str]]:
    """An entry's searchable text by field. The title field holds the slug's words too (the
    entry's short name says what it is about: `device-mismatch`); the tags field, its tags'
    names and aliases, one line per tag, in the entry's order."""
    fields = text_fields(rec.entry)
    spellings = [" . ".join(s.replace("-", " ") for s in (t, *(catalog.tags[t].aliases if t in catalog.tags else ()))) for t in rec.tags]
    return {"title": [*fields["title"], rec.slug.replace("-", " ")], "summary": fields["summary"], "tags": spellings,
            "symptoms": fields["symptoms"], "body": fields["body"]}


FIELDS = ("title", "summary", "tags", "symptoms", "body")
# What a match in each field is worth: the title, the quick answer and the tags say what an entry
# is about; the body only mentions things. The title counts most, by how much of it the term
# covers: the entry about a thing ('CUDA out of memory') outranks those whose titles add
# qualifiers to it ('DDP OOM during allreduce').
WEIGHTS = {"title": 20, "summary": 6, "tags": 6, "symptoms": 3, "body": 1}
EXACT, GROUP, PREFIX, TYPO = 6, 5, 3, 2  # what a clause's match is worth, by kind
PREFIX_MAX = 16  # terms a word's prefix expands to at most (the most common ones)
TAG_FIRST, TAG_OTHER = 1.0, 0.5  # a term's worth in the tags field (times its weight): in the first tag, in another
TYPO_MIN = 5  # letters a word needs before a typo in it is forgiven


def doc_terms(fields: dict[str, list[str]], synonyms: Synonyms) -> dict[str, int]:
    """One entry's terms → its weight for each (field-weighted, saturating, titles by coverage)."""
    out: dict[str, float] = {}
    get = out.get
    for f in FIELDS:
        text = "\n".join(fields[f])  # no token spans a newline
        seq = words_of(text)
        counts: Counter[str] = Counter(seq)
        for token, n in Counter(IDENTIFIER_CANDIDATE_RE.findall(text)).items():
            for term in identifier_terms(token):
                counts[term] += n
        groups, covered = synonyms.in_words(seq)
        if synonyms.words and not synonyms.words.keys().isdisjoint(counts):
            for t, n in list(counts.items()):
                g = synonyms.words.get(t)
                if g:
                    groups[g] += n
                    covered[g] += n
        for t, n in groups.items():
            counts[t] += n
        weight = WEIGHTS[f]
        if f == "title":
            covered.update(seq)  # each word covers itself
            length = max(len(seq), 1)
            for t, n in counts.items():
                out[t] = get(t, 0.0) + weight * (0.25 + 0.75 * min(1.0, covered[t] / length))
        elif f == "tags":
            # An entry's first tag names what it is about ('oom' for cuda-out-of-memory, 'ddp' for
            # ddp-oom-during-allreduce): a term there counts more than one in a later tag.
            first_tag = set(doc_terms({**{k: [] for k in FIELDS}, "title": fields[f][:1]}, synonyms)) if fields[f] else set()
            for t in counts:
                out[t] = get(t, 0.0) + weight * (TAG_FIRST if t in first_tag else TAG_OTHER)
        else:  # saturating: a second mention adds less than the first
            for t, n in counts.items():
                out[t] = get(t, 0.0) + weight * (n / (n + 1.0))
    return {t: round(100 * v) for t, v in out.items()}


def vocab_key(term: str) -> str:
    """Which vocabulary shard holds a term: its first character for a word (so that its
    prefixes and its one-typo neighbours share the shard), 'i'/'g' + the code of the next
    character for an identifier or a group."""
    if term[0].isalnum():
        return term[0]
    return ("i" if term[0] == "=" else "g") + format(ord(term[1]), "x")


@dataclass
class SearchIndex:
    """The search index both engines rank with: `failpedia search` holds it in memory, the
    browser reads the same data from search/ (`files.py` and `postings.py` write it).

    docs: doc id → slug (sorted), with its category and tags (in the entry's order) for filters.
    terms: term → (idf × 100, [(doc id, weight), ...] by doc id)."""

    catalog: Catalog
    synonyms: Synonyms
    slugs: list[str]
    terms: dict[str, tuple[int, list[tuple[int, int]]]]
    vocab: dict[str, list[str]]  # vocab_key → its terms, sorted

    @classmethod
    def build(cls, catalog: Catalog, per_entry: Callable[[str], dict[str, int]] | None = None) -> "SearchIndex":
        synonyms = Synonyms.of(catalog.synonyms)
        slugs = sorted(catalog.records)
        make = per_entry or (lambda slug: doc_terms(entry_texts(catalog.records[slug], catalog), synonyms))
        postings: defaultdict[str, list[tuple[int, int]]] = defaultdict(list)
        for doc, slug in enumerate(slugs):
            if doc % 256 == 0:
                checkpoint()
            for t, w in make(slug).items():
                postings[t].append((doc, w))
        n = len(slugs)
        terms = {t: (idf(n, len(p)), p) for t, p in sorted(postings.items())}
        return cls(catalog, synonyms, slugs, terms, vocabulary(terms))


def idf(docs: int, having: int) -> int:
    """A term's inverse document frequency × 100, as the index stores it."""
    return round(100 * math.log(1 + docs / having))


def vocabulary(terms: dict[str, Any]) -> dict[str, list[str]]:
    """vocab_key → its terms, in the order of `terms` (sorted)."""
    vocab: dict[str, list[str]] = {}
    for t in terms:
        vocab.setdefault(vocab_key(t), []).append(t)
    return vocab


# --- Ranking ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hit:
    slug: str
    score: int
    fingerprint: bool = False  # found by a confident fingerprint of the pasted text


def alternatives(clause: tuple[str, str], synonyms: Synonyms, vocab: list[str], has: Callable[[str], bool]) -> list[tuple[str, int]]:
    """The terms a clause matches, with what each is worth (search.js's alternatives is the same).
    `vocab`: the sorted terms of the clause's vocabulary shard."""
    kind, term = clause
    out: list[tuple[str, int]] = [(term, EXACT)] if has(term) else []
    group = synonyms.words.get(term)
    if group and has(group):
        out.append((group, GROUP))
    if kind == "w":
        if len(term) >= 3:
            i = bisect_left(vocab, term)
            longer = []
            while i < len(vocab) and vocab[i].startswith(term):
                if vocab[i] != term:
                    longer.append(vocab[i])
                i += 1
            out += [(t, PREFIX) for t in longer[:PREFIX_MAX]]
        if not out and len(term) >= TYPO_MIN and term.isalpha():
            out += [(t, TYPO) for t in vocab if len(t) >= TYPO_MIN - 1 and edit1(term, t)][:PREFIX_MAX]
    return out


def clause_scores(index: SearchIndex, clause: tuple[str, str]) -> dict[int, int]:
    """doc id → what the clause is worth in it (the best of its alternatives)."""
    vocab = index.vocab.get(vocab_key(clause[1]), [])
    out: dict[int, int] = {}
    # A longer word or a typo's neighbour is worth no more than the word typed, however rare it is
    # ('tensor' must not rank 'tensorflow' entries above those about tensors). Another spelling of
    # the word counts as rare as the mean of the word's and its group's rarity: the group, all its
    # spellings together, is commoner than any of them ('timeout' is everywhere), and rated alone it
    # would let 'ddp hangs' find every DDP entry that mentions a timeout before the one about hangs.
    own = index.terms[clause[1]][0] if clause[1] in index.terms else None
    for term, factor in alternatives(clause, index.synonyms, vocab, index.terms.__contains__):
        idf, postings = index.terms[term]
        if factor in (PREFIX, TYPO) and own is not None:
            idf = min(idf, own)
        elif factor == GROUP and own is not None:
            idf = (idf + own) // 2
        for doc, w in postings:
            s = factor * w * idf
            if s > out.get(doc, 0):
                out[doc] = s
    return out


def _looks_pasted(text: str) -> bool:
    """Worth matching against the fingerprints (search.js asks the same)."""
    return len(ALNUM_RE.findall(text)) >= 3 or len(text) >= 24


def fingerprint_scores(catalog: Catalog, text: str) -> dict[str, tuple[int, bool]]:
    """slug → (score, confident) of the entries whose fingerprints match the pasted text: each
    hit is worth 10 × its strength's score (3 × when its `near` evidence is missing); an entry,
    10 × its best hit + its others. Confident: the best is strong or definitive, with its near."""
    lines = [line[:MAX_LINE] for line in text.splitlines() if line.strip()]
    if not lines:
        return {}
    out: dict[str, tuple[int, bool]] = {}
    for slug, rec in catalog.records.items():
        scores = []
        for fp in rec.head.fingerprints:
            if fp.metric:  # a metric line (loss: 2.3) says nothing on its own; diagnose reads its trend
                continue
            pattern = compile_pattern(fp.pattern)
            hits = [i for i, line in enumerate(lines) if pattern.search(line)]
            if not hits:
                continue
            near = True
            if fp.near:
                near_re = compile_pattern(fp.near)
                near = any(near_re.search(line) and abs(i - h) <= fp.window for h in hits for i, line in enumerate(lines))
            scores.append(fp.score * (10 if near else 3))
        if scores:
            scores.sort(reverse=True)
            out[slug] = (10 * scores[0] + sum(scores[1:]), scores[0] >= 10 * CONFIDENT)
    return out


CONFIDENT = 6  # strength score of strong: a hit this strong, with its `near`, names the entry
LONG_PASTE = 8  # words: a pasted log line rather than a phrase; with a confident hit, it ranks alone
SLACK_PER = 4  # live clauses per clause an entry may miss (a query of 5 to 8 may miss 1)
WEAK_NUDGE = 300  # a weak fingerprint hit adds its score times this to the word score (a few % of a good word match)


def rank(index: SearchIndex, clauses: tuple[tuple[str, str], ...], pool: list[int], fps: dict[int, tuple[int, bool]], tag_rank: dict[int, int] | None) -> list[tuple[int, int, int]]:
    """(doc, confident fingerprint score, word score) best first; search.js's rank is the same.

    Every live clause must match (a clause no entry matches is not live), but one in SLACK_PER
    may be missed by an entry, whose score is then scaled by the share of the clauses' worth it
    matches; when no entry
    matches them all, the entries that match the most of them. Confident fingerprint hits come first."""
    allowed = set(pool)
    found = [s for s in (clause_scores(index, c) for c in clauses) if s]
    scores: dict[int, int] = {}
    if found:
        cover: dict[int, int] = {}
        for s in found:
            for doc, v in s.items():
                if doc in allowed:
                    cover[doc] = cover.get(doc, 0) + 1
                    scores[doc] = scores.get(doc, 0) + v
        # A long query (a pasted title, a sentence) may name a word its entry does not use
        # ('terminated', 'attempting'): an entry may miss one clause in four, and counts for
        # less by the share it misses. A clause's share is what it is worth to the entry it suits
        # best, so missing the query's product name ('vllm') costs more than missing a filler
        # word. Per mille, so that search.js's doubles stay exact. A short query keeps every word.
        best = max(cover.values(), default=0)
        need = best - (len(found) - 1) // SLACK_PER
        tops = [max(s.values()) for s in found]
        total = sum(tops)

        def share(doc: int) -> int:
            return sum(t for t, s in zip(tops, found) if doc in s) * 1000 // total

        scores = {d: v * share(d) // 1000 for d, v in scores.items() if cover[d] >= need}
    elif tag_rank is not None:
        scores = {d: tag_rank[d] for d in pool}
    for doc, (score, confident) in fps.items():
        if doc in allowed and not confident:
            scores[doc] = scores.get(doc, 0) + score * WEAK_NUDGE
    rows = [(doc, fps[doc][0] if doc in fps and fps[doc][1] else 0, v) for doc, v in scores.items()]
    rows += [(doc, s, 0) for doc, (s, confident) in fps.items() if confident and doc in allowed and doc not in scores]
    return sorted(rows, key=lambda r: (-r[1], -r[2], r[0]))


def search(index: SearchIndex, query: Query) -> list[Hit]:
    """Entries that carry every query tag, ranked best first (ties by slug)."""
    catalog = index.catalog
    ids = {slug: i for i, slug in enumerate(index.slugs)}
    pool = [ids[s] for s in index.slugs if all(t in catalog.records[s].tags for t in query.tags)]
    fp = fingerprint_scores(catalog, query.free) if _looks_pasted(query.free) else {}
    fps = {ids[s]: v for s, v in fp.items()}
    # A long pasted line that names its entries: its other words would only add noise.
    textual = not (len(ALNUM_RE.findall(query.free)) >= LONG_PASTE and any(c for _, c in fp.values()))
    clauses = query.clauses if textual else ()
    tag_rank = None
    if textual and query.tags and not query.clauses:
        # Tags alone: entries where the tags come first in the tag list are the most about them.
        tag_rank = {d: sum(1000 // (1 + catalog.records[index.slugs[d]].tags.index(t)) for t in query.tags) for d in pool}
    rows = rank(index, clauses, pool, fps, tag_rank)
    return [Hit(index.slugs[d], c * 10**9 + v if c else v, bool(c)) for d, c, v in rows]
