"""The browser search's build side: what entry pages carry for Pagefind, the small JSON files the
search page loads, and tag-pair pages.

- `search_doc` → the hidden block an entry page carries: Pagefind filters (tag, category), meta
  (summary, tags), the quick answer again with a high weight, and one `id_token` word per
  identifier so Pagefind finds `NCCL_BUFFSIZE` whole instead of splitting it.
- `search_files` → `search/meta.json` (tags, aliases, categories) and `search/fp/*.json`: the
  fingerprint patterns (`{"fingerprints": [[[slug, ...], pattern, near, window, score], ...]}`) in
  shards keyed by a word every matching line contains, so a pasted line loads only the shards
  of its own words (`any.json`, for patterns without such a word, is always loaded).
- `tag_pairs` → the tag pairs shared by enough entries to deserve a static page.

Running Pagefind over the written site is `indexer.py`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from .safejson import safe_json as _json
from .catalog import Catalog, Record
from .search import SearchIndex, id_token

__all__ = ["PAIRS_ON_SEARCH_PAGE", "PAIR_MIN", "SENTINEL", "TagPair", "entry_token", "search_doc", "search_files", "shard_of", "tag_pairs"]

PAIR_MIN = 3  # a tag pair gets its own page when at least this many entries carry both tags
PAIRS_ON_SEARCH_PAGE = 24  # the most shared; every pair is linked from both of its tags' pages
SENTINEL = "zxsearchdoc"  # starts the hidden block; the browser cuts excerpts there
FP_PER_SHARD = 64  # (entry, fingerprint) pairs per shard, roughly
FP_MAX_SHARDS = 256


def entry_token(slug: str) -> str:
    """The word only this entry's page contains (the browser fetches a fingerprint hit by it)."""
    return id_token(f"entry:{slug}:")


def search_doc(index: SearchIndex, rec: Record, category_title: str) -> dict[str, Any]:
    """What base.html renders in an entry page's hidden search block."""
    return {
        "sentinel": SENTINEL,
        "category": rec.category,
        "category_title": category_title,
        "tags": list(rec.tags),
        "summary": rec.head.summary,
        "tokens": " ".join([entry_token(rec.slug), *index.id_tokens(rec.slug, repeat=1)]),
    }


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


def search_files(catalog: Catalog) -> list[tuple[str, str]]:
    """(site path, JSON text) of every file search.js loads besides Pagefind's own."""
    # One record per distinct matcher, with every entry that has it (entries share common ones).
    owners: dict[tuple[str, str, int, int], list[str]] = {}
    covers: dict[str, tuple[str, ...]] = {}
    for slug, rec in catalog.records.items():
        for fp in rec.head.fingerprints:
            owners.setdefault((fp.pattern, fp.near or "", fp.window, fp.score), []).append(slug)
            covers[fp.pattern] = fp.literals
    fps = [([sorted(set(slugs)), *key], _anchors(covers[key[0]])) for key, slugs in sorted(owners.items())]
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
    meta = {
        "version": 1,
        "tags": [[t, len(catalog.by_tag[t])] for t in catalog.tags],
        "aliases": dict(sorted(catalog.aliases.items())),
        "categories": [[c.name, c.title, len(catalog.by_category[c.name])] for c in catalog.categories.values()],
        "fp_shards": shards,
        "sentinel": SENTINEL,
    }
    files = [("search/meta.json", _json(meta)), ("search/fp/any.json", _json({"fingerprints": anywhere}))]
    files += [(f"search/fp/{i}.json", _json({"fingerprints": b})) for i, b in enumerate(buckets)]
    return files


