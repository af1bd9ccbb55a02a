"""Search: the query language, identifiers, ranking, `failpedia search`, and what the build emits
for the browser (tag-pair pages, the search page, Pagefind's index and its failures)."""

from __future__ import annotations

import json
import re
import stat
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
    from generator.build import load_catalog

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
    from generator.search import is_identifier

    assert is_identifier(token) is expected


def test_identifiers_are_found_whole_and_by_their_shorter_runs() -> None:
    from generator.search import id_token, identifier_variants, identifiers

    text = "raise torch.cuda.OutOfMemoryError: (NCCL_BUFFSIZE=4194304), exit code -9, c10::DistBackendError."
    assert identifiers(text) == ["torch.cuda.OutOfMemoryError", "NCCL_BUFFSIZE=4194304", "-9", "c10::DistBackendError"]
    assert identifier_variants("torch.cuda.OutOfMemoryError") == {
        "torch.cuda.outofmemoryerror", "cuda.outofmemoryerror", "torch.cuda", "outofmemoryerror",
    }
    assert "nccl_buffsize" in identifier_variants("NCCL_BUFFSIZE=4194304")
    assert "c10" in identifier_variants("c10::DistBackendError")
    # One alphanumeric word each, distinct for distinct identifiers, and never a prefix of another.
    assert re.fullmatch(r"zx[a-z0-9]+", id_token("c10::DistBackendError"))
    assert id_token("a_b") != id_token("aub") != id_token("a.b")
    assert not id_token("entry:ab:").startswith(id_token("entry:a:"))
    assert not id_token("-98").startswith(id_token("-9"))  # Pagefind matches prefixes


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


def test_entry_pages_carry_what_pagefind_indexes(site: Path) -> None:
    from generator.search import id_token

    html = (site / "ddp-oom/index.html").read_text()
    assert '<main id="main" data-pagefind-body>' in html
    for attr in ('data-pagefind-filter="category:distributed"', 'data-pagefind-filter="tag:ddp"', 'data-pagefind-meta="tags:ddp oom nccl"'):
        assert attr in html
    assert id_token("NCCL_BUFFSIZE") in html and id_token("bucket_cap_mb") in html
    assert "data-pagefind-body" not in (site / "tags/ddp/index.html").read_text()
    assert (site / "pagefind/pagefind.js").is_file() and (site / "pagefind/pagefind-entry.json").is_file()
    meta = json.loads((site / "search/meta.json").read_text())
    assert meta["aliases"]["out-of-memory"] == "oom" and meta["tags"][0] == ["ddp", 4]


def test_every_fingerprint_is_in_a_shard_its_lines_load(tmp_path: Path) -> None:
    """search.js loads any.json and the shard of each word of the pasted text: the shards must
    hold every fingerprint for every line it matches (its examples stand for those lines)."""
    from generator.build import load_catalog
    from generator.searchindex import search_files, shard_of

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
    for slug, rec in catalog.records.items():
        for fp in rec.entry.fingerprints:
            for line in fp.examples:
                words = {w.lower() for w in re.findall(r"[A-Za-z0-9]+", line)}
                loaded = ["search/fp/any.json"] + [f"search/fp/{shard_of(w, shards)}.json" for w in words]
                held = {(s, r[1]) for path in loaded for r in data[path]["fingerprints"] for s in r[0]}
                assert (slug, fp.pattern) in held, (slug, fp.pattern, line)


def test_no_search_skips_the_index(run_cli, entries: Path, tmp_path: Path) -> None:
    out = tmp_path / "quick"
    code, _, err = run_cli("build", "--entries", str(entries), "--out", str(out), "--no-search")
    assert code == 0, err
    assert (out / "search/index.html").is_file() and not (out / "pagefind").exists()


def _fake_pagefind(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, script: str) -> None:
    exe = tmp_path / "fake-pagefind"
    exe.write_text("#!/bin/sh\n" + script)
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    import pagefind_bin

    monkeypatch.setattr(pagefind_bin, "get_executable", lambda: exe)


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ("echo 'Error: could not parse the site' >&2\nexit 3\n", "search indexing failed: Pagefind exited with status 3:\nError: could not parse the site"),
        ("echo 'Indexed 2 pages'\nexit 0\n", "search indexing failed: Pagefind indexed 2 pages, expected 5 entries"),
    ],
)
def test_a_failed_index_fails_the_build_and_keeps_the_old_site(
    run_cli, entries: Path, site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str, message: str
) -> None:
    from sitecheck import tree_digest

    before = tree_digest(site)
    _fake_pagefind(monkeypatch, tmp_path, script)
    # a real change, so that no build cache can skip the work
    (entries / "distributed/ddp-slow.yaml").write_text((entries / "distributed/ddp-slow.yaml").read_text().replace("overlaps", "overlaps well"))
    code, _, err = run_cli("build", "--entries", str(entries), "--out", str(site))
    assert code == 1
    assert err.startswith("failpedia: error: " + message)
    assert "Traceback" not in err
    assert tree_digest(site) == before
    assert not [p for p in site.parent.iterdir() if p.name.startswith(".site-")]


def test_an_unknown_pagefind_format_is_a_clear_error(site: Path) -> None:
    from generator.indexer import canonicalize
    from generator.problems import FailpediaError

    chunk = next((site / "pagefind/filter").iterdir())
    chunk.write_bytes(b"not gzip")
    with pytest.raises(FailpediaError, match=r"cannot make Pagefind's output deterministic \(.*\.pf_filter: .*\); .*--no-search"):
        canonicalize(site / "pagefind")


def test_camel_words_are_exactly_the_alphanumeric_tokens_with_a_hump() -> None:
    """camel_words_in finds tokens from their humps outwards; it must give the same set as
    testing every token (the definition) on every entry's text and on 20,000 made-up strings."""
    import random

    from generator.entrytext import CAMEL_RE, TOKEN_RE, camel_words_in

    def definition(text: str) -> frozenset[str]:
        return frozenset(t.lower() for t in TOKEN_RE.findall(text) if t.isalnum() and CAMEL_RE.search(t))

    texts = [p.read_text(encoding="utf-8") for p in sorted((Path(__file__).resolve().parent.parent / "entries").glob("*/*.yaml"))]
    rnd = random.Random(8)
    alphabet = "aAbBzZ09_.:/=- \n\té\u0130ǅ"
    texts += ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 40))) for _ in range(20_000)]
    assert camel_words_in("use torch.cuda.OutOfMemoryError, not PyTorch's DeepSpeed_v2 or fooBar-baz") == {"pytorch"}
    assert [t for t in texts if camel_words_in(t) != definition(t)] == []
