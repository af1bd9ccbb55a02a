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
import pickle
import re
from collections.abc import Hashable
from dataclasses import dataclass
from itertools import combinations
from typing import Any, cast

from ..core.catalog import Catalog
from ..core.entrytext import text_fields
from ..core.safejson import safe_json as _json
from .postings import Postings
from .query import (CONFIDENT, EXACT, GROUP, LONG_PASTE, PREFIX, PREFIX_MAX, SLACK_PER, TYPO, TYPO_MIN, WEAK_NUDGE, Synonyms, doc_terms,
                    entry_texts, vocabulary)
from ..core.searchterms import STOP

__all__ = ["PAIRS_ON_SEARCH_PAGE", "PAIR_MIN", "TagPair", "fingerprint_files", "index_postings", "search_files", "shard_of", "tag_pairs"]

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
EXCERPT_CHARS = 4000  # of an entry's text kept for the excerpts a result shows


def _syn_key(catalog: Catalog) -> str:
    return hashlib.sha256(repr(catalog.synonyms).encode()).hexdigest()


def _terms_inputs(catalog: Catalog) -> dict[str, Any]:
    """slug → what its terms are made of: its text, its tags and their aliases, the synonyms."""
    syn = _syn_key(catalog)
    aliases = {name: tag.aliases for name, tag in catalog.tags.items()}
    return {slug: (rec.head.text_key, rec.tags, tuple(aliases.get(t, ()) for t in rec.tags), syn) for slug, rec in catalog.records.items()}


def index_postings(catalog: Catalog, jobs: int | None = 1) -> Postings:
    """The index's postings and vocabulary files (Postings), each entry's terms kept from the
    previous build while its inputs are unchanged; the others made in up to `jobs` workers.
    Where the previous build's index is known (the build cache keeps it; the build server and
    the dev server hold it) and few entries changed, it is patched instead of made anew."""
    synonyms = Synonyms.of(catalog.synonyms)
    inputs = _terms_inputs(catalog)
    known = catalog.memo.kept(TERMS) if catalog.memo is not None else {}  # each entry's (inputs, terms) of the last build
    # Each entry's terms are kept pickled: a patch unpickles only the changed entries' terms,
    # not every entry's (the largest part of loading the cache, on a large site).
    terms = catalog.derived_each(TERMS, inputs, lambda slug: _pickled(doc_terms(entry_texts(catalog.records[slug], catalog), synonyms)), jobs)
    by_slug = dict(zip(inputs, terms))
    slugs = sorted(inputs)

    def make(last: Any) -> tuple[list[str], dict[str, Hashable], Postings]:
        """(doc ids' slugs, each entry's inputs, the postings)."""
        changes = _changes_since(last, known, inputs, by_slug, slugs)
        if changes == {}:
            return cast(tuple[list[str], dict[str, Hashable], Postings], last)
        if changes is not None:
            try:
                return slugs, dict(inputs), last[2].patched(changes)
            except LookupError:  # a posting the last index should hold is not there: made anew
                pass
        return slugs, dict(inputs), Postings.made([pickle.loads(by_slug[s]) for s in slugs])

    return catalog.derived_from_last("search postings", make)[2]


def _changes_since(last: Any, known: dict[str, tuple[Hashable, Any]], inputs: dict[str, Hashable], now: dict[str, bytes],
                   slugs: list[str]) -> dict[int, tuple[dict[str, int], dict[str, int]]] | None:
    """What Postings.patched needs to bring the last index up to date (doc id → its terms then
    and now), or None where it must be made anew: no index kept, other slugs (the doc ids
    moved), terms in the memo that are not the ones it was made from, or too many changes (a
    synonyms edit changes every entry's inputs)."""
    if not (isinstance(last, tuple) and len(last) == 3 and isinstance(last[2], Postings) and last[0] == slugs
            and all(s in known and known[s][0] == key for s, key in last[1].items())):
        return None
    changed = [(doc, s) for doc, s in enumerate(slugs) if inputs[s] != last[1][s]]
    if len(changed) > max(8, len(slugs) // 8):
        return None
    return {doc: (pickle.loads(known[s][1]), pickle.loads(now[s])) for doc, s in changed}


def _pickled(terms: dict[str, int]) -> bytes:
    return pickle.dumps(terms, protocol=pickle.HIGHEST_PROTOCOL)


_MARKS = str.maketrans({"`": None, "*": None, "\n": " "})  # markdown's code and emphasis marks go; lines join


def _plain(text: str) -> str:
    return text.translate(_MARKS)


def _doc_file(catalog: Catalog, slug: str) -> str:
    """What a result shows of an entry: title, quick answer, category, tags, and the text its
    excerpt is cut from."""
    rec = catalog.records[slug]
    fields = text_fields(rec.entry)
    text = " ".join(_plain(x) for x in (*fields["symptoms"], *fields["body"]))
    return _json({"slug": slug, "title": rec.head.title, "summary": rec.head.summary, "category": _category_title(catalog, slug),
                  "tags": list(rec.tags), "text": " ".join(text.split())[:EXCERPT_CHARS]})


def _category_title(catalog: Catalog, slug: str) -> str:
    category = catalog.records[slug].category
    return catalog.categories[category].title if category in catalog.categories else category


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


def search_files(catalog: Catalog, fingerprints_key: str | None = None, jobs: int | None = 1) -> list[tuple[str, str]]:
    """(site path, JSON text) of every file search.js loads: meta.json (registries, synonyms,
    ranking constants), docs.json (each entry's category and tags, for filters and facets), the
    vocabulary and postings, doc/<id>.json (what a result shows), and the fingerprint shards
    (kept apart in the build cache under `fingerprints_key`: an edit of an entry's text leaves them).
    Each entry's terms and doc file are made in up to `jobs` workers."""
    postings = index_postings(catalog, jobs)
    vocab = vocabulary(postings.stats)
    slugs = sorted(catalog.records)  # doc id → slug
    shards, fp_files = catalog.derived("search fingerprint shards", fingerprint_files, fingerprints_key)
    tag_ids = {t: i for i, t in enumerate(catalog.tags)}
    cat_ids = {c: i for i, c in enumerate(catalog.categories)}
    meta = {
        "version": 2,
        "tags": [[t, len(catalog.by_tag[t])] for t in catalog.tags],
        "aliases": dict(sorted(catalog.aliases.items())),
        "categories": [[c.name, c.title, len(catalog.by_category[c.name])] for c in catalog.categories.values()],
        "fp_shards": shards,
        "docs": postings.docs,
        "vocab": sorted(vocab),
        "synonyms": Synonyms.of(catalog.synonyms).as_json(),
        "stop": sorted(STOP),
        "rank": {"exact": EXACT, "group": GROUP, "prefix": PREFIX, "typo": TYPO, "prefix_max": PREFIX_MAX, "typo_min": TYPO_MIN,
                 "confident": CONFIDENT, "long_paste": LONG_PASTE, "weak_nudge": WEAK_NUDGE, "slack_per": SLACK_PER},
    }
    docs = {
        "cat": [cat_ids.get(catalog.records[s].category, -1) for s in slugs],
        "tags": [[tag_ids[t] for t in catalog.records[s].tags] for s in slugs],
    }
    files = [("search/meta.json", _json(meta)), ("search/docs.json", _json(docs)), *fp_files, *postings.files(vocab)]
    inputs = {s: (catalog.records[s].head.text_key, catalog.records[s].head.title, catalog.records[s].head.summary,
                  catalog.records[s].tags, _category_title(catalog, s)) for s in slugs}
    texts = catalog.derived_each("search doc files", inputs, lambda slug: _doc_file(catalog, slug), jobs)
    files += [(f"search/doc/{i}.json", t) for i, t in enumerate(texts)]
    return files
