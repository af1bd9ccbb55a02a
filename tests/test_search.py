"""Search: the query language, identifiers, ranking, `failpedia search`, and what the build emits
for the browser (tag-pair pages, the search page, the index under search/)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import CATEGORIES, TAGS, valid_entry, write_tree
from sitecheck import broken_links, parse_page

WATCHDOG = "[rank1]:[E ProcessGroupNCCL.cpp:607] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE) ran for 600001 milliseconds"
PASTED = "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 milliseconds before timing out."


def _files() -> dict[str, object]:
    """Five entries: three share #ddp + #oom (a tag-pair page), identifiers spread among them."""
    return {
        "tags.yaml": TAGS,
        "categories.yaml": CATEGORIES,
        "distributed/ddp-oom.yaml": valid_entry(
            title="DDP OOM during allreduce",
            summary="DDP runs out of memory while all-reducing gradient buckets; shrink bucket_cap_mb and NCCL_BUFFSIZE.",
            tags=["ddp", "oom", "nccl"],
            mechanism="The Reducer fills buckets of `bucket_cap_mb` MiB; NCCL adds `NCCL_BUFFSIZE` buffers per peer.\n",
            related=["gpu-oom", "nccl-hang", "ddp-unused"],
        ),
        "memory/gpu-oom.yaml": valid_entry(
            title="GPU OOM",
            summary="The step needs more GPU memory than the card has; torch.cuda.OutOfMemoryError is raised.",
            tags=["oom", "memory"],
            mechanism="The caching allocator raises `torch.cuda.OutOfMemoryError` when a block cannot be found.\n",
            related=["ddp-oom"],
        ),
        "distributed/nccl-hang.yaml": valid_entry(
            title="NCCL watchdog timeout",
            summary="A rank waited in a collective longer than the timeout; the c10d watchdog aborts the process with SIGABRT.",
            tags=["nccl", "ddp"],
            mechanism="The ProcessGroupNCCL watchdog (c10d) aborts; torchrun then reports exit code -6, and the scheduler may SIGKILL stragglers.\n",
            fingerprints=[{"pattern": r"Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=\d+", "strength": "definitive", "examples": [WATCHDOG]}],
            related=["ddp-oom"],
        ),
        "distributed/ddp-unused.yaml": valid_entry(
            title="DDP unused parameters",
            summary="Some parameters got no gradient, so DDP's reducer never finished; a bucket of 9 parameters waited forever.",
            tags=["oom", "memory", "ddp"],
            mechanism="Killed with signal -9 by the OOM killer when the reducer kept buckets alive (bucket cap and mb are separate words here).\n",
            related=["ddp-oom"],
        ),
        "distributed/ddp-slow.yaml": valid_entry(
            title="DDP runs slowly",
            summary="Gradient synchronisation dominates the step; a watchdog is not involved, this entry talks about buckets.",
            tags=["ddp", "oom"],
            mechanism="Bucket sizes decide how well communication overlaps with backward.\n",
            related=["ddp-oom"],
        ),
    }


@pytest.fixture
def entries(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "entries", _files())


@pytest.fixture
def catalog(entries: Path):
    from generator.site.build import load_catalog

    return load_catalog(entries)


def _search(run_cli, entries: Path, *query: str) -> tuple[int, dict, str]:
    code, out, err = run_cli("search", "--entries", str(entries), "--json", *query)
    return code, (json.loads(out) if out else {}), err


def _slugs(run_cli, entries: Path, *query: str) -> list[str]:
    code, data, err = _search(run_cli, entries, *query)
    assert code in (0, 1), err
    return [r["slug"] for r in data["results"]]


# --- Identifiers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("NCCL_BUFFSIZE", True), ("bucket_cap_mb", True), ("torch.cuda.OutOfMemoryError", True), ("c10d", True),
        ("c10::DistBackendError", True), ("-9", True), ("--nproc_per_node", True), ("OutOfMemoryError", True),
        ("SIGKILL", False), ("watchdog", False), ("out-of-memory", False), ("137", False), ("https://x.org/a_b", False),
    ],
)
def test_identifier_rules(token: str, expected: bool) -> None:
    from generator.search.query import is_identifier

    assert is_identifier(token) is expected


def test_identifiers_are_found_whole_and_by_their_shorter_runs() -> None:
    from generator.search.query import identifier_variants, identifiers

    text = "raise torch.cuda.OutOfMemoryError: (NCCL_BUFFSIZE=4194304), exit code -9, c10::DistBackendError."
    assert identifiers(text) == ["torch.cuda.OutOfMemoryError", "NCCL_BUFFSIZE=4194304", "-9", "c10::DistBackendError"]
    assert identifier_variants("torch.cuda.OutOfMemoryError") == {
        "torch.cuda.outofmemoryerror", "cuda.outofmemoryerror", "torch.cuda", "outofmemoryerror",
    }
    assert "nccl_buffsize" in identifier_variants("NCCL_BUFFSIZE=4194304")
    assert "c10" in identifier_variants("c10::DistBackendError")


# --- The command ------------------------------------------------------------------------------


def test_tags_filter_with_and_rank_the_entries_most_about_them_first(run_cli, entries: Path) -> None:
    code, data, _ = _search(run_cli, entries, "#ddp #oom")
    assert code == 0
    assert [r["slug"] for r in data["results"]][0] == "ddp-oom"  # ddp and oom are its first two tags
    assert {r["slug"] for r in data["results"]} == {"ddp-oom", "ddp-unused", "ddp-slow"}
    assert all({"ddp", "oom"} <= set(r["tags"]) for r in data["results"])


def test_remaining_words_rank_within_the_tags(run_cli, entries: Path) -> None:
    # "watchdog" is in ddp-slow's quick answer only; nccl-hang has it in the title but lacks #oom.
    assert _slugs(run_cli, entries, "#ddp #oom watchdog") == ["ddp-slow"]
    assert _slugs(run_cli, entries, "watchdog")[0] == "nccl-hang"  # the title weighs more


def test_tag_aliases_resolve(run_cli, entries: Path) -> None:
    assert _slugs(run_cli, entries, "#out-of-memory") == _slugs(run_cli, entries, "#oom") == _slugs(run_cli, entries, "#OOM")
    assert _slugs(run_cli, entries, "#distributed-data-parallel #oom") == _slugs(run_cli, entries, "#ddp #oom")


def test_unknown_tag_is_a_clear_error_with_a_suggestion(run_cli, entries: Path) -> None:
    code, out, err = run_cli("search", "--entries", str(entries), "#dpp bucket")
    assert (code, out) == (1, "")
    assert err == "failpedia: error: unknown tag '#dpp'; did you mean '#ddp'?\n"
    code, _, err = run_cli("search", "--entries", str(entries), "#zzzzzz")
    assert code == 1 and "unknown tag '#zzzzzz'; tags in use include #ddp, #oom" in err


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("NCCL_BUFFSIZE", ["ddp-oom"]),
        ("bucket_cap_mb", ["ddp-oom"]),  # ddp-unused has "bucket", "cap" and "mb" as separate words
        ("torch.cuda.OutOfMemoryError", ["gpu-oom"]),
        ("cuda.OutOfMemoryError", ["gpu-oom"]),  # a shorter run of a dotted path
        ("c10d", ["nccl-hang"]),
        ("SIGKILL", ["nccl-hang"]),
        ("-9", ["ddp-unused"]),  # not ddp-unused's "9 parameters" elsewhere, not "-6"
        ("nccl_buffsize", ["ddp-oom"]),  # case does not matter
    ],
)
def test_identifiers_match_exactly(run_cli, entries: Path, query: str, expected: list[str]) -> None:
    assert _slugs(run_cli, entries, query) == expected


def test_identifier_search_finds_no_entry_that_only_has_its_parts(run_cli, entries: Path) -> None:
    assert "ddp-unused" in _slugs(run_cli, entries, "bucket cap mb")
    assert _slugs(run_cli, entries, "NCCL_BUFFSIZE_X") == []


def test_a_pasted_error_line_finds_the_entry_whose_fingerprint_it_is(run_cli, entries: Path) -> None:
    code, data, _ = _search(run_cli, entries, PASTED)
    assert code == 0 and data["results"][0]["slug"] == "nccl-hang"
    # and within a tag that the entry does not carry, it is filtered out like any other result
    assert _slugs(run_cli, entries, "#oom", PASTED) == []


def test_json_output_is_for_tools(run_cli, entries: Path) -> None:
    code, data, _ = _search(run_cli, entries, "#ddp", "bucket")
    assert code == 0
    assert list(data) == ["query", "results"] and data["query"] == "#ddp bucket"
    first = data["results"][0]
    assert list(first) == ["slug", "title", "url", "score", "tags"]
    assert first["url"] == f"https://failpedia.github.io/failpedia/{first['slug']}/"
    scores = [r["score"] for r in data["results"]]
    assert scores == sorted(scores, reverse=True)


def test_text_output_and_no_results(run_cli, entries: Path) -> None:
    code, out, _ = run_cli("search", "--entries", str(entries), "watchdog")
    assert code == 0
    assert out.splitlines()[:2] == ["1. nccl-hang  NCCL watchdog timeout", "   https://failpedia.github.io/failpedia/nccl-hang/"]
    code, out, err = run_cli("search", "--entries", str(entries), "zzzzqqq")
    assert (code, out) == (1, "")
    assert "no entries match 'zzzzqqq'" in err and "#ddp" in err


def test_usage_errors_and_broken_entries(run_cli, entries: Path) -> None:
    code, _, err = run_cli("search", "--entries", str(entries), "  ")
    assert code == 2 and "empty query" in err
    (entries / "memory/gpu-oom.yaml").write_text("title: [broken\n")
    code, _, err = run_cli("search", "--entries", str(entries), "oom")
    assert code == 3  # a setup error, not "no results"
    assert err.startswith("failpedia: error: cannot search: the entries in") and "run 'failpedia check'" in err
    assert "Traceback" not in err


# --- Words, synonyms, typos ---------------------------------------------------------------------


def test_word_forms_stem_together_and_one_typo_is_forgiven() -> None:
    from generator.search.query import edit1, stem

    assert stem("hang") == stem("hangs") == stem("hanging") == "hang"
    assert stem("explode") == stem("exploding") == stem("explodes") == "explod"
    assert stem("timeouts") == "timeout" and stem("losses") == "loss" and stem("batches") == "batch"
    assert stem("padding") == stem("padded") == "pad" and stem("killed") == "kill"
    assert stem("fp16") == "fp16" and stem("oom") == "oom" and stem("status") == "status"
    assert edit1("gardient", "gradient") and edit1("wachdog", "watchdog") and edit1("bucket", "buckets")
    assert edit1("bucket", "bocket") and not edit1("bucket", "bucket") and not edit1("bucket", "bkcuet")


def test_the_identifier_candidates_are_every_token_that_can_hold_one() -> None:
    """doc_terms looks for identifiers only in the tokens IDENTIFIER_CANDIDATE_RE finds: on
    random text over the characters that decide it, those are exactly the whole TOKEN_RE runs
    with a character of `_.:/=-`, a digit or a camelCase hump, and no other run yields an
    identifier term."""
    import random

    from generator.core.entrytext import TOKEN_RE
    from generator.core.searchterms import IDENTIFIER_CANDIDATE_RE, identifier_terms

    rnd = random.Random(7)
    alphabet = "aZbYc_.:/=-09 \n,()"
    for _ in range(20_000):
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 40)))
        runs = TOKEN_RE.findall(text)
        expected = [t for t in runs if re.search(r"[_.:/=\-0-9]|[a-z][A-Z]", t)]
        assert IDENTIFIER_CANDIDATE_RE.findall(text) == expected, text
        assert not any(identifier_terms(t) for t in runs if t not in expected), text
    assert IDENTIFIER_CANDIDATE_RE.findall("see torch.cuda.OutOfMemoryError and getRank, not Hello") == ["torch.cuda.OutOfMemoryError", "getRank"]


def test_prefixes_synonyms_and_typos_find_entries(run_cli, entries: Path) -> None:
    (entries / "synonyms.yaml").write_text("synonyms:\n  - words: [stall, watchdog]\n  - words: [oom, out of memory]\n")
    assert _slugs(run_cli, entries, "watchd")[0] == "nccl-hang"  # a word being typed
    assert _slugs(run_cli, entries, "wachdog")[0] == "nccl-hang"  # one typo in a long word
    assert _slugs(run_cli, entries, "stall")[0] == "nccl-hang"  # a synonym
    assert _slugs(run_cli, entries, "zzqq wachdog") == _slugs(run_cli, entries, "wachdog")  # a word no entry has is dropped
    # the entries that say "OOM" are found by the phrase, and the one that says "out of memory" by the word
    assert set(_slugs(run_cli, entries, "out of memory")) >= {"ddp-oom", "gpu-oom"}
    assert "ddp-oom" in _slugs(run_cli, entries, "oom") and "ddp-oom" in _slugs(run_cli, entries, "runs out of memory")
    assert _slugs(run_cli, entries, "NCCL_BUFSIZE") == []  # identifiers match whole: no typo, no prefix


def test_the_entry_about_a_thing_outranks_those_that_mention_it(run_cli, entries: Path) -> None:
    # "bucket": ddp-oom has it in its quick answer, ddp-slow in its quick answer and body, ddp-unused in the body only
    slugs = _slugs(run_cli, entries, "bucket")
    assert slugs.index("ddp-unused") > min(slugs.index("ddp-oom"), slugs.index("ddp-slow"))
    assert _slugs(run_cli, entries, "unused parameters")[0] == "ddp-unused"  # title and slug


def test_a_long_query_may_be_missed_by_its_entry_in_one_word_of_four(run_cli, tmp_path: Path) -> None:
    files = _files()
    files["memory/worker-killed.yaml"] = valid_entry(
        title="DataLoader worker killed by signal",
        summary="A DataLoader worker process was killed by a signal, usually the OOM killer when host RAM ran out.",
        tags=["oom", "memory"],
        related=["gpu-oom"],
    )
    files["distributed/child-killed.yaml"] = valid_entry(
        title="torchrun child killed by signal",
        summary="torchrun reports that a worker was killed by a signal or terminated by the scheduler.",
        tags=["nccl"],
        mechanism="Any process can be the one killed, a dataloader one included.\n",
        related=["gpu-oom"],
    )
    entries = write_tree(tmp_path / "entries", files)
    # five live words: the entry about DataLoader workers never says "terminated", and still comes first
    assert _slugs(run_cli, entries, "DataLoader worker is killed by signal: Terminated")[:2] == ["worker-killed", "child-killed"]
    # two words: each must match
    assert _slugs(run_cli, entries, "worker terminated") == ["child-killed"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("synonyms:\n  - words: [oom, out of memory]\n  - words: [hang, OOM]\n", "synonyms.yaml:3:5: error: synonym 'OOM' is already in the group of 'oom'"),
        ("synonyms:\n  - words: [hang, hangs]\n", "synonyms.yaml:2:5: error: synonym 'hangs' repeats 'hang': search stems words"),
        ("synonyms:\n  - words: [hang, '!!']\n", "synonyms.yaml:2:5: error: synonym '!!' has no word or identifier search could match"),
        ("synonyms:\n  - words: [hang]\n", "synonyms.yaml:2:12"),
        ("words: [a, b]\n", "synonyms.yaml:1:1: error: expected a mapping with a single key 'synonyms' holding a list"),
    ],
)
def test_the_synonyms_registry_is_checked(run_cli, entries: Path, text: str, message: str) -> None:
    (entries / "synonyms.yaml").write_text(text)
    code, out, err = run_cli("check", "--entries", str(entries))
    assert code == 1 and message in out + err, out + err


# --- What the build emits ---------------------------------------------------------------------


@pytest.fixture
def site(run_cli, entries: Path, tmp_path: Path) -> Path:
    out = tmp_path / "site"
    code, _, err = run_cli("build", "--entries", str(entries), "--out", str(out))
    assert code == 0, err
    return out


def test_tag_pair_pages_filter_without_javascript(site: Path) -> None:
    pair = site / "tags/ddp+oom/index.html"
    html = pair.read_text()
    cards = re.findall(r'<h3><a href="\.\./\.\./([a-z0-9-]+)/">', html)
    assert cards == ["ddp-oom", "ddp-slow", "ddp-unused"]  # the most about the pair first
    assert not (site / "tags/nccl+oom").exists()  # shared by one entry only
    for tag in ("ddp", "oom"):
        assert 'href="../../tags/ddp+oom/"' in (site / f"tags/{tag}/index.html").read_text()
    assert 'href="../tags/ddp+oom/"' in (site / "search/index.html").read_text()
    assert broken_links(site) == []


def test_every_tag_is_two_clicks_from_every_page(site: Path) -> None:
    used = {p.parent.name for p in (site / "tags").glob("*/index.html") if "+" not in p.parent.name}
    index = {href.rstrip("/").rsplit("/", 1)[-1] for _, href in parse_page(site / "tags/index.html").links}
    assert used <= index  # with registry tags used by no entry too
    for page in site.rglob("*.html"):
        if page.name == "404.html":
            continue
        links = [href for _, href in parse_page(page).links]
        assert any(h.endswith("tags/") for h in links), page
        # and the search box on every page (the search page has its own)
        html = page.read_text()
        assert re.search(r'<form class="site-search" role="search" action="[./]*search/" method="get">', html) or 'id="search-q"' in html, page


def test_the_site_carries_the_index_search_js_reads(site: Path) -> None:
    html = (site / "ddp-oom/index.html").read_text()
    assert "data-pagefind" not in html and "search-doc" not in html and not (site / "pagefind").exists()
    meta = json.loads((site / "search/meta.json").read_text())
    assert meta["aliases"]["out-of-memory"] == "oom" and meta["tags"][0] == ["ddp", 4]
    assert meta["docs"] == 5 and set(meta["rank"]) >= {"exact", "group", "prefix", "typo"}
    docs = json.loads((site / "search/docs.json").read_text())
    slugs = sorted(["ddp-oom", "gpu-oom", "nccl-hang", "ddp-unused", "ddp-slow"])
    first = json.loads((site / "search/doc/0.json").read_text())
    assert first["slug"] == slugs[0] and first["title"] and first["text"] and len(docs["tags"]) == len(docs["cat"]) == 5
    # every term of every vocabulary shard has its postings in the chunk the shard names
    for key in meta["vocab"]:
        shard = json.loads((site / f"search/v/{key}.json").read_text())
        for term, chunk in zip(shard["t"], shard["c"]):
            assert term in json.loads((site / f"search/p/{chunk}.json").read_text()), term
    bucket = json.loads((site / "search/v/b.json").read_text())
    assert "bucket" in bucket["t"] and "=bucket_cap_mb" in json.loads((site / "search/v/i62.json").read_text())["t"]


def test_every_fingerprint_is_in_a_shard_its_lines_load(tmp_path: Path) -> None:
    """search.js loads any.json and the shard of each word of the pasted text: the shards must
    hold every fingerprint for every line it matches (its examples stand for those lines)."""
    from generator.site.build import load_catalog
    from generator.search.files import search_files, shard_of

    files = _files()
    base = [
        {"pattern": r"CUDA out of memory\. Tried to allocate \d+", "examples": ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB."]},
        {"pattern": r"NCCL WARN (Failed to CUDA calloc|Cuda failure .out of memory.)", "examples": ["x [1] include/alloc.h:103 NCCL WARN Failed to CUDA calloc 4194304 bytes"]},
        {"pattern": r"(CUDA_ERROR_OUT_OF_MEMORY|cudaErrorMemoryAllocation)", "examples": ["error: cudaErrorMemoryAllocation here"]},
        {"pattern": r"exitcode\s*:\s*-9", "examples": ["exitcode  : -9 (pid: 1234)"]},
    ]
    # enough fingerprints for several shards (fresh objects: the YAML writer would alias repeats)
    # distinct patterns (identical ones share a record) that match the same lines
    fps = [{"pattern": f["pattern"] + f"x{{0,{k + 1}}}", "examples": list(f["examples"]), "strength": "strong"} for k in range(45) for f in base]
    files["memory/gpu-oom.yaml"] = {**files["memory/gpu-oom.yaml"], "fingerprints": fps[:20]}  # type: ignore[dict-item]
    for i in range(8):
        files[f"memory/extra-{i}.yaml"] = valid_entry(title=f"Extra {i}", fingerprints=fps[20 + i * 20 : 40 + i * 20], related=["gpu-oom"])
    catalog = load_catalog(write_tree(tmp_path / "e", files))
    data = {path: json.loads(text) for path, text in search_files(catalog)}
    shards = data["search/meta.json"]["fp_shards"]
    assert shards > 1
    ids = {slug: i for i, slug in enumerate(sorted(catalog.records))}  # the records name entries by doc id
    for slug, rec in catalog.records.items():
        for fp in rec.entry.fingerprints:
            if fp.metric:  # not in the search's fingerprint shards: a metric line alone names nothing
                continue
            for line in fp.examples:
                words = {w.lower() for w in re.findall(r"[A-Za-z0-9]+", line)}
                loaded = ["search/fp/any.json"] + [f"search/fp/{shard_of(w, shards)}.json" for w in words]
                held = {(s, r[1]) for path in loaded for r in data[path]["fingerprints"] for s in r[0]}
                assert (ids[slug], fp.pattern) in held, (slug, fp.pattern, line)


def test_no_search_skips_the_index(run_cli, entries: Path, tmp_path: Path) -> None:
    out = tmp_path / "quick"
    code, _, err = run_cli("build", "--entries", str(entries), "--out", str(out), "--no-search")
    assert code == 0, err
    assert (out / "search/index.html").is_file() and not (out / "search/meta.json").exists()


def test_the_index_made_in_workers_is_the_one_made_in_one_process() -> None:
    """A cold build makes each entry's terms and doc file in forked workers (`jobs`): the files
    are the same as one process makes, and a memo keeps what the workers made for the next build.
    In a process of its own: `run_parallel` does not fork while other threads run, as threads
    other tests leave behind in this one would."""
    import subprocess
    import sys

    from generator.core.parallel import worker_count

    if worker_count() < 2:
        pytest.skip("one core: run_parallel runs a plain loop")
    script = """
import dataclasses, os, sys
from pathlib import Path
from generator.site.build import load_catalog
from generator.core.catalog import Memo
from generator.search.files import search_files
catalog = load_catalog(Path(sys.argv[1]))
assert len(catalog.records) >= 64  # enough for run_parallel to fork
pids = catalog.derived_each("pids", {s: s for s in catalog.records}, lambda _: os.getpid(), jobs=2)
assert set(pids) - {os.getpid()}, "no worker ran"  # so the comparisons below are not one loop against itself
serial = search_files(catalog, jobs=1)
assert search_files(catalog, jobs=2) == serial, "workers made other files"
store = {}
catalog = dataclasses.replace(catalog, memo=Memo(store, "shape"))
assert search_files(catalog, jobs=2) == serial, "workers with a memo made other files"
kept = store["search terms"]
assert isinstance(kept, dict) and len(kept) == len(catalog.records)
calls = []
again = catalog.derived_each("search terms", {s: k for s, (k, _) in kept.items()}, lambda s: calls.append(s) or {}, jobs=2)
assert again == [v for _, v in kept.values()] and calls == [], "kept results were remade"
print("ok")
"""
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-c", script, str(root / "entries")], cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
