"""The search index's build side: the files search.js loads, and tag-pair pages.

- `search_files` → everything under search/: `meta.json` (tags, aliases, categories, synonyms,
  the ranking constants), `docs.json` (each entry's category and tags, by doc id: filters and
  facets), the index itself (`v/<key>.json`, a vocabulary shard: every term starting with one
  character, with its idf and the chunk of its postings; `p/<n>.json`, the postings of a run of
  terms), `doc/<id>.json` (what a result shows), and `fp/*.json`: the fingerprint patterns
  (`{"fingerprints": [[[doc id, ...], pattern, near, window, score], ...]}`) in shards keyed by a
  word every matching line contains, so a pasted line loads only the shards of its own words
  (`any.json`, for patterns without such a word, is always loaded).
- `tag_pairs` → the tag pairs shared by enough entries to deserve a static page.

A query loads meta.json and docs.json once, then one vocabulary shard per word and the chunks
holding the terms it matches, and the doc files of the results it shows.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Hashable
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from ..core.catalog import Catalog
from ..core.entrytext import text_fields
from ..core.parallel import checkpoint
from ..core.safejson import safe_json as _json
from .query import (CONFIDENT, EXACT, GROUP, LONG_PASTE, PREFIX, PREFIX_MAX, SLACK_PER, TYPO, TYPO_MIN, WEAK_NUDGE, SearchIndex, Synonyms,
                     doc_terms, entry_texts)
from ..core.searchterms import STOP

__all__ = ["PAIRS_ON_SEARCH_PAGE", "PAIR_MIN", "TagPair", "build_index", "fingerprint_files", "index_files", "index_sources", "search_files", "search_files_key", "shard_of", "tag_pairs"]

PAIR_MIN = 3  # a tag pair gets its own page when at least this many entries carry both tags
PAIRS_ON_SEARCH_PAGE = 24  # the most shared; every pair is linked from both of its tags' pages
FP_PER_SHARD = 64  # (entry, fingerprint) pairs per shard, roughly
FP_MAX_SHARDS = 256


@dataclass(frozen=True)
class TagPair:
    a: str
    b: str
    slugs: tuple[str, ...]  # entries with both tags, most about the pair first

    @property
    def name(self) -> str:
        return f"{self.a}+{self.b}"


def tag_pairs(catalog: Catalog, minimum: int = PAIR_MIN) -> list[TagPair]:
    """Pairs of tags that at least `minimum` entries share, sorted by name."""
    out = []
    used = sorted(catalog.used_tags())
    members = {t: set(catalog.by_tag[t]) for t in used}  # once per tag, not once per pair
    for a, b in combinations(used, 2):
        both = members[a] & members[b]
        if len(both) >= minimum:
            def rank(slug: str) -> tuple[int, str]:
                tags = catalog.records[slug].tags
                return tags.index(a) + tags.index(b), slug

            out.append(TagPair(a, b, tuple(sorted(both, key=rank))))
    return out


def fnv1a(text: str) -> int:
    """32-bit FNV-1a of the UTF-8 bytes (search.js computes the same)."""
    h = 0x811C9DC5
    for byte in text.encode("utf-8"):
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def shard_of(word: str, shards: int) -> int:
    return fnv1a(word.lower()) % shards


def _inner_words(literal: str) -> list[str]:
    """Words of a literal with a non-alphanumeric character on both sides inside it: such a word
    is a whole word (a maximal [A-Za-z0-9] run) of every line that contains the literal."""
    return [m.group().lower() for m in re.finditer(r"(?<=[^A-Za-z0-9])[A-Za-z0-9]{3,}(?=[^A-Za-z0-9])", literal)]


def _anchors(cover: tuple[str, ...]) -> list[str] | None:
    """One word per alternative of a pattern's literal cover (patterns.required_literals), or
    None when some alternative has no whole word (then the pattern goes to the shard every
    pasted line loads)."""
    if not cover:
        return None
    out = []
    for literal in cover:
        words = _inner_words(literal)
        if not words:
            return None
        out.append(max(words, key=lambda w: (len(w), w)))
    return sorted(set(out))


TERMS = "search terms"  # each entry's terms, in the catalog's memo
CHUNK_POSTINGS = 4000  # postings per chunk file, roughly (a common term has a chunk of its own)
EXCERPT_CHARS = 4000  # of an entry's text kept for the excerpts a result shows


def _syn_key(catalog: Catalog) -> str:
    return hashlib.sha256(repr(catalog.synonyms).encode()).hexdigest()


def _terms_inputs(catalog: Catalog) -> dict[str, Any]:
    """slug → what its terms are made of: its text, its tags and their aliases, the synonyms."""
    syn = _syn_key(catalog)
    return {
        slug: (rec.head.text_key, rec.tags, tuple(catalog.tags[t].aliases if t in catalog.tags else () for t in rec.tags), syn)
        for slug, rec in catalog.records.items()
    }


def search_files_key(catalog: Catalog, fingerprints: str) -> str:
    """Everything search_files reads: each entry's searchable text, tags and card, its
    fingerprints (their digest), the registries with their counts, the synonyms."""
    return hashlib.sha256(repr((
        fingerprints, sorted(_terms_inputs(catalog).items()),
        [(s, r.head.title, r.head.summary, r.category) for s, r in catalog.records.items()],
        [(t, len(catalog.by_tag[t])) for t in catalog.tags], sorted(catalog.aliases.items()),
        [(c.name, c.title, len(catalog.by_category[c.name])) for c in catalog.categories.values()],
    )).encode()).hexdigest()


def build_index(catalog: Catalog, jobs: int | None = 1) -> SearchIndex:
    """The search index, each entry's terms kept from the previous build while its inputs are
    unchanged; the others made in up to `jobs` workers. After an edit, in a process that made
    the last index (the build server, the dev server), that index is patched where the edited
    entries' terms changed instead of being made again from every entry's terms."""
    synonyms = Synonyms.of(catalog.synonyms)
    inputs = _terms_inputs(catalog)
    known = catalog.memo.kept(TERMS) if catalog.memo is not None else {}  # each entry's (inputs, terms) of the last build
    terms = catalog.derived_each(TERMS, inputs, lambda slug: doc_terms(entry_texts(catalog.records[slug], catalog), synonyms), jobs)
    by_slug = dict(zip(inputs, terms))
    slugs = sorted(inputs)

    def make(last: Any) -> tuple[list[str], dict[str, Hashable], dict[str, tuple[int, list[tuple[int, int]]]], dict[str, list[str]]]:
        """(doc ids' slugs, each entry's inputs, the index's terms and vocabulary): held for the
        next build without the catalog the index refers to."""
        changes = _changes_since(last, known, inputs, by_slug, slugs)
        index = None
        if changes is not None:
            try:
                index = SearchIndex.patched(catalog, slugs, last[2], changes)
            except LookupError:  # a posting the last index should hold is not there: made anew
                pass
        index = index or SearchIndex.build(catalog, per_entry=by_slug.__getitem__)
        return slugs, dict(inputs), index.terms, index.vocab

    _, _, held, vocab = catalog.derived_from_last("search index", make)
    return SearchIndex(catalog, synonyms, slugs, held, vocab)


def _changes_since(last: Any, known: dict[str, tuple[Hashable, Any]], inputs: dict[str, Hashable], now: dict[str, dict[str, int]],
                   slugs: list[str]) -> dict[int, tuple[dict[str, int], dict[str, int]]] | None:
    """What SearchIndex.patched needs to bring the held index `last` up to date (doc id → its
    terms then and now), or None where it must be made anew: no index held, other slugs (the
    doc ids moved), terms in the memo that are not the ones it was made from, or too many
    changes (a synonyms edit changes every entry's inputs)."""
    if not (isinstance(last, tuple) and last[0] == slugs and all(s in known and known[s][0] == key for s, key in last[1].items())):
        return None
    changes = {doc: (known[s][1], now[s]) for doc, s in enumerate(slugs) if inputs[s] != last[1][s]}
    return changes if len(changes) <= max(8, len(slugs) // 8) else None


def _plain(text: str) -> str:
    return re.sub(r"[`*]+", "", text)


def _doc_file(catalog: Catalog, slug: str) -> str:
    """What a result shows of an entry: title, quick answer, category, tags, and the text its
    excerpt is cut from."""
    rec = catalog.records[slug]
    fields = text_fields(rec.entry)
    text = " ".join(_plain(x).replace("\n", " ") for x in (*fields["symptoms"], *fields["body"]))
    return _json({"slug": slug, "title": rec.head.title, "summary": rec.head.summary, "category": _category_title(catalog, slug),
                  "tags": list(rec.tags), "text": " ".join(text.split())[:EXCERPT_CHARS]})


def _category_title(catalog: Catalog, slug: str) -> str:
    category = catalog.records[slug].category
    return catalog.categories[category].title if category in catalog.categories else category


def _postings(p: list[tuple[int, int]]) -> list[int]:
    """[doc, weight, doc gap, weight, ...]: ids as gaps keep the numbers short."""
    docs = [d for d, _ in p]
    gaps = [d - prev for d, prev in zip(docs, [0, *docs])]
    out = [0] * (2 * len(p))
    out[0::2] = gaps
    out[1::2] = [w for _, w in p]
    return out


def index_files(index: SearchIndex) -> list[tuple[str, str]]:
    """search/v/<key>.json (a vocabulary shard: its terms, their idf and chunk) and
    search/p/<n>.json (the postings of a run of terms, in term order)."""
    return [(path, text) for path, text, _ in index_sources(index)]


def index_sources(index: SearchIndex, last: Any = None) -> list[tuple[str, str, tuple[Any, ...]]]:
    """index_files' files, each with what it was made from. `last`: what this returned for the
    index this one was patched from (SearchIndex.patched keeps the postings list of every term
    it did not touch): a chunk of the same terms with the same postings lists, or a shard of
    the same content, keeps its text."""
    made_from = {path: (text, source) for path, text, source in last} if isinstance(last, list) else {}
    chunk_of: dict[str, int] = {}
    chunks: list[list[str]] = [[]]
    size = 0
    for n, (term, (_, p)) in enumerate(index.terms.items()):
        if n % 1024 == 0:
            checkpoint()
        if size and size + len(p) > CHUNK_POSTINGS:
            chunks.append([])
            size = 0
        chunks[-1].append(term)
        chunk_of[term] = len(chunks) - 1
        size += len(p)
    files: list[tuple[str, str, tuple[Any, ...]]] = []
    for i, c in enumerate(chunks):
        checkpoint()
        if c:
            path = f"search/p/{i}.json"
            lists = tuple(index.terms[t][1] for t in c)
            text, before = made_from.get(path, ("", ()))
            if before and before[0] == tuple(c) and all(a is b for a, b in zip(before[1], lists)):
                files.append((path, text, before))
            else:
                files.append((path, _json({t: _postings(p) for t, p in zip(c, lists)}), (tuple(c), lists)))
    for key, terms in sorted(index.vocab.items()):
        shard = {"t": terms, "f": [index.terms[t][0] for t in terms], "c": [chunk_of[t] for t in terms]}
        path = f"search/v/{key}.json"
        text, before = made_from.get(path, ("", ()))
        if before and before[0] == shard:
            files.append((path, text, before))
        else:
            files.append((path, _json(shard), (shard,)))
    return files


def fingerprint_files(catalog: Catalog) -> tuple[int, list[tuple[str, str]]]:
    """The number of fingerprint shards, and the files search/fp/*.json."""
    ids = {slug: i for i, slug in enumerate(sorted(catalog.records))}  # doc ids, as SearchIndex numbers them
    # One record per distinct matcher, with every entry that has it (entries share common ones).
    owners: dict[tuple[str, str, int, int], list[int]] = {}
    covers: dict[str, tuple[str, ...]] = {}
    for slug, rec in catalog.records.items():
        for fp in rec.head.fingerprints:
            if fp.metric:  # as search.fingerprint_scores: a metric line alone names no failure
                continue
            owners.setdefault((fp.pattern, fp.near or "", fp.window, fp.score), []).append(ids[slug])
            covers[fp.pattern] = fp.literals
    fps: list[tuple[list[Any], list[str] | None]] = [([sorted(set(docs)), *key], _anchors(covers[key[0]])) for key, docs in sorted(owners.items())]
    refs = sum(len(record[0]) for record, _ in fps)  # a record weighs as many entries as it names
    shards = max(1, min(FP_MAX_SHARDS, math.ceil(refs / FP_PER_SHARD)))
    buckets: list[list[list[Any]]] = [[] for _ in range(shards)]
    anywhere: list[list[Any]] = []
    for record, anchors in fps:
        if anchors is None:
            anywhere.append(record)
            continue
        for i in sorted({shard_of(w, shards) for w in anchors}):
            buckets[i].append(record)
    files = [("search/fp/any.json", _json({"fingerprints": anywhere}))]
    return shards, files + [(f"search/fp/{i}.json", _json({"fingerprints": b})) for i, b in enumerate(buckets)]


def search_files(catalog: Catalog, index: SearchIndex | None = None, fingerprints_key: str | None = None, jobs: int | None = 1) -> list[tuple[str, str]]:
    """(site path, JSON text) of every file search.js loads: meta.json (registries, synonyms,
    ranking constants), docs.json (each entry's category and tags, for filters and facets), the
    vocabulary and postings, doc/<id>.json (what a result shows), and the fingerprint shards
    (kept apart in the build cache under `fingerprints_key`: an edit of an entry's text leaves them).
    Each entry's terms and doc file are made in up to `jobs` workers."""
    index = index or build_index(catalog, jobs)
    shards, fp_files = catalog.derived("search fingerprint shards", fingerprint_files, fingerprints_key)
    tag_ids = {t: i for i, t in enumerate(catalog.tags)}
    cat_ids = {c: i for i, c in enumerate(catalog.categories)}
    meta = {
        "version": 2,
        "tags": [[t, len(catalog.by_tag[t])] for t in catalog.tags],
        "aliases": dict(sorted(catalog.aliases.items())),
        "categories": [[c.name, c.title, len(catalog.by_category[c.name])] for c in catalog.categories.values()],
        "fp_shards": shards,
        "docs": len(index.slugs),
        "vocab": sorted(index.vocab),
        "synonyms": index.synonyms.as_json(),
        "stop": sorted(STOP),
        "rank": {"exact": EXACT, "group": GROUP, "prefix": PREFIX, "typo": TYPO, "prefix_max": PREFIX_MAX, "typo_min": TYPO_MIN,
                 "confident": CONFIDENT, "long_paste": LONG_PASTE, "weak_nudge": WEAK_NUDGE, "slack_per": SLACK_PER},
    }
    docs = {
        "cat": [cat_ids.get(catalog.records[s].category, -1) for s in index.slugs],
        "tags": [[tag_ids[t] for t in catalog.records[s].tags] for s in index.slugs],
    }
    # After an edit, in a process that made the last index: the chunks and shards it left alone keep their text.
    made = catalog.derived_from_last("search index files", lambda last: index_sources(index, last))
    files = [("search/meta.json", _json(meta)), ("search/docs.json", _json(docs)), *fp_files, *((path, text) for path, text, _ in made)]
    texts = catalog.derived_each("search doc files", {s: (catalog.records[s].head.text_key, catalog.records[s].head.title, catalog.records[s].head.summary,
                                                          catalog.records[s].tags, _category_title(catalog, s)) for s in index.slugs},
                                 lambda slug: _doc_file(catalog, slug), jobs)
    files += [(f"search/doc/{i}.json", t) for i, t in enumerate(texts)]
    return files
