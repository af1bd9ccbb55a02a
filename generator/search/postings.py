"""The search index as the browser reads it: `search/p/<n>.json` (the postings of a run of
terms, in term order) and `search/v/<key>.json` (a vocabulary shard: its terms, their idf and
the chunk of each one's postings).

`Postings.made` makes them from each entry's terms; `Postings.patched` brings the last build's
up to date after an edit, from the entries whose terms changed, without the terms of every
entry: it decodes only the chunks that hold a term the edit touched, and every other chunk
keeps its text. The build cache keeps a `Postings` between builds (a few bytes per posting:
the chunks' JSON text), so a fresh process patches as the build server does. Both give the
same files, byte for byte; so does `SearchIndex.build` (query.py), whose terms these are.

Pure: data in, data out.
"""

from __future__ import annotations

import json
from bisect import bisect_left, bisect_right, insort
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..core.parallel import checkpoint
from ..core.safejson import safe_json as _json
from .query import idf, vocabulary

__all__ = ["CHUNK_POSTINGS", "Postings"]

CHUNK_POSTINGS = 4000  # postings per chunk file, roughly (a common term has a chunk of its own)

Changes = Mapping[int, tuple[Mapping[str, int], Mapping[str, int]]]  # doc id → (its terms then, its terms now)


@dataclass(frozen=True)
class Postings:
    """docs: how many entries (doc ids 0..docs-1, the slugs in sorted order).
    stats: term → (idf × 100, how many entries hold it), in term order.
    chunks: each postings file's terms and its text: a JSON object of term → [doc, weight, doc
    gap, weight, ...] (ids as gaps keep the numbers short)."""

    docs: int
    stats: dict[str, tuple[int, int]]
    chunks: tuple[tuple[tuple[str, ...], str], ...]

    @classmethod
    def made(cls, per_entry: Sequence[Mapping[str, int]]) -> "Postings":
        """From each entry's terms (term → weight), by doc id."""
        flat: dict[str, list[int]] = {}
        last: dict[str, int] = {}
        for doc, terms in enumerate(per_entry):
            if doc % 256 == 0:
                checkpoint()
            for t, w in terms.items():
                p = flat.get(t)
                if p is None:
                    flat[t] = [doc, w]
                else:
                    p += (doc - last[t], w)
                last[t] = doc
        n = len(per_entry)
        encoded = {t: flat[t] for t in sorted(flat)}
        stats = {t: (idf(n, len(p) // 2), len(p) // 2) for t, p in encoded.items()}
        return cls(n, stats, tuple((c, _chunk_text(c, encoded)) for c in _chunked(stats)))

    def patched(self, changes: Changes) -> "Postings":
        """What `made` gives once the entries in `changes` hold their new terms (the number of
        entries is the same). Raises LookupError where this index lacks a posting that a change's
        terms then say it holds (the terms it was made from were not those)."""
        firsts = [terms[0] for terms, _ in self.chunks]  # the chunks hold the terms in order
        decoded: dict[int, dict[str, list[int]]] = {}

        def encoded(t: str) -> list[int]:
            i = bisect_right(firsts, t) - 1
            if i not in decoded:
                decoded[i] = json.loads(self.chunks[i][1])
            return decoded[i][t]

        touched: dict[str, list[tuple[int, int]]] = {}  # term → its postings as (doc, weight), changed

        def own(t: str) -> list[tuple[int, int]]:
            if t not in touched:
                touched[t] = _pairs(encoded(t)) if t in self.stats else []
            return touched[t]

        for doc, (before, after) in sorted(changes.items()):
            for t, w in before.items():
                if after.get(t) != w:
                    p = own(t)
                    i = bisect_left(p, (doc,))
                    if i == len(p) or p[i] != (doc, w):
                        raise LookupError(f"the index has no posting of {doc} for {t!r}")
                    del p[i]
            for t, w in after.items():
                if before.get(t) != w:
                    insort(own(t), (doc, w))
        stats = dict(self.stats)
        fresh: dict[str, list[int]] = {}
        for t, p in touched.items():
            if p:
                fresh[t] = _flat(p)
                stats[t] = (idf(self.docs, len(p)), len(p))
            else:
                stats.pop(t, None)
        if len(stats) != len(self.stats) or any(t not in self.stats for t in touched):  # terms came or went
            stats = dict(sorted(stats.items()))
        chunks = []
        for i, c in enumerate(_chunked(stats)):
            if i % 64 == 0:
                checkpoint()
            if i < len(self.chunks) and self.chunks[i][0] == c and not any(t in touched for t in c):
                chunks.append(self.chunks[i])
            else:
                chunks.append((c, _chunk_text(c, {t: fresh[t] if t in touched else encoded(t) for t in c})))
        return Postings(self.docs, stats, tuple(chunks))

    def files(self, vocab: Mapping[str, list[str]] | None = None) -> list[tuple[str, str]]:
        """(site path, JSON text) of the postings chunks and the vocabulary shards; `vocab`:
        `vocabulary(self.stats)`, where the caller has made it already."""
        out = [(f"search/p/{i}.json", text) for i, (_, text) in enumerate(self.chunks)]
        chunk_of = self._chunk_of()
        for key, terms in sorted((vocab if vocab is not None else vocabulary(self.stats)).items()):
            shard = {"t": terms, "f": [self.stats[t][0] for t in terms], "c": [chunk_of[t] for t in terms]}
            out.append((f"search/v/{key}.json", _json(shard)))
        return out

    def _chunk_of(self) -> dict[str, int]:
        """term → the number of the chunk that holds its postings."""
        return {t: i for i, (terms, _) in enumerate(self.chunks) for t in terms}

    def terms(self) -> dict[str, tuple[int, list[tuple[int, int]]]]:
        """term → (idf × 100, [(doc id, weight), ...]): SearchIndex.terms, decoded (for tests
        that hold the two engines' indexes to each other)."""
        out: dict[str, tuple[int, list[tuple[int, int]]]] = {}
        for terms, text in self.chunks:
            lists = json.loads(text)
            out.update((t, (self.stats[t][0], _pairs(lists[t]))) for t in terms)
        return out


def _chunked(stats: Mapping[str, tuple[int, int]]) -> list[tuple[str, ...]]:
    """The terms, in order, cut into runs of about CHUNK_POSTINGS postings."""
    chunks: list[tuple[str, ...]] = []
    run: list[str] = []
    size = 0
    for t, (_, count) in stats.items():
        if size and size + count > CHUNK_POSTINGS:
            chunks.append(tuple(run))
            run, size = [], 0
        run.append(t)
        size += count
    if run:
        chunks.append(tuple(run))
    return chunks


def _chunk_text(terms: tuple[str, ...], encoded: Mapping[str, list[int]]) -> str:
    return _json({t: encoded[t] for t in terms})


def _pairs(flat: list[int]) -> list[tuple[int, int]]:
    """[doc, weight, doc gap, weight, ...] → [(doc, weight), ...]."""
    out = []
    doc = 0
    for i in range(0, len(flat), 2):
        doc += flat[i]
        out.append((doc, flat[i + 1]))
    return out


def _flat(pairs: list[tuple[int, int]]) -> list[int]:
    """[(doc, weight), ...] → [doc, weight, doc gap, weight, ...]."""
    out: list[int] = []
    last = 0
    for doc, w in pairs:
        out += (doc - last, w)
        last = doc
    return out
