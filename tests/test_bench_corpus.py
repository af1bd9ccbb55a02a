"""bench/corpus.py makes the corpora every build figure in bench/README.md is measured on: they
must be valid, or the benchmark measures a failed build."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from generator.site.build import load_catalog

REPO = Path(__file__).resolve().parent.parent


def _corpus_module():
    spec = importlib.util.spec_from_file_location("bench_corpus", REPO / "bench" / "corpus.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_corpus"] = module
    spec.loader.exec_module(module)
    return module


def test_a_corpus_larger_and_one_smaller_than_the_seeds_are_valid(tmp_path: Path) -> None:
    make_corpus = _corpus_module().make_corpus
    seeds = len(list((REPO / "entries").glob("*/*.yaml")))
    for count in (seeds + 1, 30):
        out = tmp_path / str(count)
        make_corpus(REPO / "entries", count, out)
        catalog = load_catalog(out)  # raises BuildFailed with every problem
        assert len(catalog.records) == count
