"""`failpedia search QUERY`: the catalog's entries ranked by search.py, printed or as JSON."""

from __future__ import annotations

import argparse
import json
import sys

from ...site.build import load_catalog
from ...core.config import load_config
from ...core.locate import locate
from ...site.pages import entry_url
from ...core.problems import BuildFailed, SetupError, UsageError
from ...search.query import SearchIndex, parse_query, search, suggest_tags

__all__ = ["cmd_search"]


def cmd_search(args: argparse.Namespace) -> int:
    """`failpedia search QUERY`: ranked entries; --json for tools. Exit 0 found, 1 none, 2 bad query, 3 no usable entries."""
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
    index = SearchIndex.build(catalog)
    query = parse_query(text, catalog, index.synonyms)
    hits = search(index, query)[: args.top]
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
