"""`failpedia search` on the query set (tests/queries/queries.yaml): what people type, and the
entry that must come first. `pytest -s` prints the accuracy table; the browser's is in
test_search_browser.py, whose parity test holds the two engines to the same order."""

from __future__ import annotations

from collections import Counter

import pytest

from browser import REPO
from searchqueries import FLOOR, ISSUE_21, SOURCES, SPLITS, accuracy_table, labelled_queries


@pytest.fixture(scope="module")
def engine():
    from generator.site.build import load_catalog
    from generator.search.query import SearchIndex

    catalog = load_catalog(REPO / "entries")
    return catalog, SearchIndex.build(catalog)


def test_the_query_set_is_well_formed(engine) -> None:
    catalog, _ = engine
    queries = labelled_queries()
    assert len(queries) >= 200
    assert {x.split for x in queries} == set(SPLITS)
    assert Counter(x.split for x in queries)["heldout"] >= 60
    dupes = [q for q, n in Counter(x.q.lower() for x in queries).items() if n > 1]
    assert not dupes, dupes
    assert {x.src for x in queries} <= SOURCES
    assert not [x for x in queries if x.slug not in catalog.records]
    assert sum(x.src == ISSUE_21 for x in queries) == 6


def test_first_result_accuracy_in_the_terminal(engine) -> None:
    from generator.search.query import parse_query, search

    catalog, index = engine
    queries = labelled_queries()
    firsts = {}
    for x in queries:
        hits = search(index, parse_query(x.q, catalog, index.synonyms))
        firsts[x.q] = hits[0].slug if hits else None
    table, accuracy, wrong = accuracy_table("failpedia search", firsts, queries)
    print("\n" + table)
    assert not [x for x in wrong if x.src == ISSUE_21]
    assert accuracy >= FLOOR, table
