"""The build cache is only an optimisation: after every kind of change, an incremental build
equals a cold build byte for byte, and a no-op rebuild touches nothing."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

from conftest import sample_files, valid_entry, write_tree
from generator.site.build import build
from generator.core.config import Config
from generator.site.render import TEMPLATES
from sitecheck import tree_digest

CONFIG = Config(base_url="https://example.org/")
PAGED = Config(base_url="https://example.org/", page_size=1)  # every listing spans pages


@pytest.fixture
def project(tmp_path: Path) -> dict[str, Path]:
    templates = tmp_path / "templates"
    shutil.copytree(TEMPLATES, templates)
    entries = write_tree(tmp_path / "entries", sample_files())
    return {"entries": entries, "templates": templates, "cache": tmp_path / "cache", "site": tmp_path / "site", "cold": tmp_path / "cold"}


def incremental(p: dict[str, Path], config: Config = CONFIG):
    return build(p["entries"], p["site"], config, p["templates"], search=False, cache_dir=p["cache"], jobs=1)


def assert_same_as_cold(p: dict[str, Path], config: Config = CONFIG) -> None:
    build(p["entries"], p["cold"], config, p["templates"], search=False, cache_dir=None, jobs=1)
    assert tree_digest(p["site"]) == tree_digest(p["cold"])


def edit_entry(p, rel: str, **changes) -> None:
    path = p["entries"] / rel
    data = yaml.safe_load(path.read_text())
    data.update(changes)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


CHANGES = {
    "entry text": lambda p: edit_entry(p, "memory/gpu-oom.yaml", summary="A new quick answer for the GPU OOM entry, in two sentences."),
    "entry title (shown on linked pages)": lambda p: edit_entry(p, "distributed/nccl-hang.yaml", title="NCCL hang, renamed"),
    "entry tags": lambda p: edit_entry(p, "memory/gpu-oom.yaml", tags=["oom", "nccl"]),
    "entry links (similar entries change)": lambda p: edit_entry(p, "memory/gpu-oom.yaml", related=[], often_causes=[]),
    "entry fingerprints (search shards change)": lambda p: edit_entry(p, "distributed/ddp-oom.yaml", fingerprints=[
        {"pattern": r"Reducer bucket \d+ stalled", "strength": "definitive", "examples": ["Reducer bucket 7 stalled"]}]),
    "new entry": lambda p: write_tree(p["entries"], {"memory/host-oom.yaml": valid_entry(title="Host OOM", related=["gpu-oom"])}),
    "removed entry": lambda p: (p["entries"] / "distributed/nccl-hang.yaml").unlink()
    or edit_entry(p, "memory/gpu-oom.yaml", often_causes=[])
    or edit_entry(p, "distributed/ddp-oom.yaml", related=["gpu-oom"]),
    "tag registry": lambda p: (p["entries"] / "tags.yaml").write_text(
        (p["entries"] / "tags.yaml").read_text().replace("Out-of-memory failures of every kind.", "Running out of memory.")
    ),
    "category registry": lambda p: (p["entries"] / "categories.yaml").write_text(
        (p["entries"] / "categories.yaml").read_text().replace("title: Memory", "title: Memory and allocation")
    ),
    "tag aliases (every entry's tags may resolve anew)": lambda p: (p["entries"] / "tags.yaml").write_text(
        (p["entries"] / "tags.yaml").read_text().replace("out-of-memory", "oom-error")
    ),
    "category description": lambda p: (p["entries"] / "categories.yaml").write_text(
        (p["entries"] / "categories.yaml").read_text().replace("Multi-GPU and multi-node failures.", "Failures across GPUs and nodes.")
    ),
    "template": lambda p: (p["templates"] / "entry.html").write_text(
        (p["templates"] / "entry.html").read_text().replace("Quick answer", "The quick answer")
    ),
    "imported template (macros)": lambda p: (p["templates"] / "_macros.html").write_text(
        (p["templates"] / "_macros.html").read_text().replace('<ul class="links">', '<ul class="links linked">')
    ),
    "base template": lambda p: (p["templates"] / "base.html").write_text(
        (p["templates"] / "base.html").read_text().replace("Atom feed", "Atom feed of updates")
    ),
}


@pytest.mark.parametrize("config", [CONFIG, PAGED], ids=["one page per list", "paginated lists"])
@pytest.mark.parametrize("change", list(CHANGES))
def test_incremental_build_equals_cold_build(project, change: str, config: Config) -> None:
    first = incremental(project, config)
    per_entry_json = len(list((project["site"] / "api/entries").glob("*.json")))
    # cold: every templated page, sitemap.xml, feed.xml, fingerprints.json, the entries API (index + one file each)
    assert per_entry_json == 3 and first.rendered == first.pages + 4 + per_entry_json
    CHANGES[change](project)
    result = incremental(project, config)
    assert not result.unchanged
    assert_same_as_cold(project, config)
    if change in ("entry text", "entry title (shown on linked pages)"):
        assert 0 < result.rendered < first.rendered  # only the pages that show it


def test_one_entry_changed_renders_only_the_list_pages_that_show_it(project) -> None:
    incremental(project, PAGED)
    site = project["site"]
    before = {p: p.stat().st_ino for p in site.rglob("*.html")}
    CHANGES["entry text"](project)  # gpu-oom: category memory, tags oom and cuda
    incremental(project, PAGED)
    redone = {p.relative_to(site).as_posix() for p, ino in before.items() if p.stat().st_ino != ino}
    lists = {p for p in redone if p.startswith(("tags/", "categories/"))}
    assert lists and all("gpu-oom" in (site / p).read_text() for p in lists)
    assert (site / "tags/oom/page/2/index.html").is_file()  # the tag spans pages; only gpu-oom's page changed
    assert_same_as_cold(project, PAGED)


def test_noop_rebuild_touches_nothing(project) -> None:
    incremental(project)
    before = {p: p.stat().st_mtime_ns for p in project["site"].rglob("*")}
    result = incremental(project)
    assert result.unchanged and result.rendered == 0
    assert {p: p.stat().st_mtime_ns for p in project["site"].rglob("*")} == before


def test_unchanged_pages_are_linked_not_rewritten(project) -> None:
    incremental(project)
    page = "categories/distributed/index.html"  # lists ddp-oom and nccl-hang, not gpu-oom
    inode = (project["site"] / page).stat().st_ino
    CHANGES["entry text"](project)  # gpu-oom changes
    incremental(project)
    assert (project["site"] / page).stat().st_ino == inode


def test_a_damaged_cache_is_ignored(project) -> None:
    incremental(project)
    for f in project["cache"].iterdir():
        f.write_bytes(b"\x00garbage")
    CHANGES["entry text"](project)
    incremental(project)
    assert_same_as_cold(project)


@pytest.mark.parametrize("jobs", [1, None], ids=["one job: scanned in-process", "every core: scanned in a forked process when no other thread runs"])
@pytest.mark.parametrize("how", ["replaced", "rewritten in place", "deleted"])
def test_a_replaced_output_file_is_rendered_again_not_trusted(project, how: str, jobs) -> None:
    build(project["entries"], project["site"], CONFIG, project["templates"], search=False, cache_dir=project["cache"], jobs=jobs)
    planted = project["site"] / "categories/distributed/index.html"
    if how != "rewritten in place":
        planted.unlink()
    if how != "deleted":
        planted.write_text("<script>planted</script>")  # e.g. a checkout that commits site/
    CHANGES["entry text"](project)  # not shown on that page: its key does not change
    build(project["entries"], project["site"], CONFIG, project["templates"], search=False, cache_dir=project["cache"], jobs=jobs)
    assert "planted" not in planted.read_text()
    assert_same_as_cold(project)


def test_similar_entries_are_reused_only_while_every_tag_and_link_stands(project) -> None:
    from generator.core.catalog import build_catalog
    from generator.core.read import read_source

    store: dict = {}
    first = build_catalog(read_source(project["entries"]), store=store)
    CHANGES["entry text"](project)
    assert build_catalog(read_source(project["entries"]), store=store).similar is first.similar
    CHANGES["entry links (similar entries change)"](project)
    third = build_catalog(read_source(project["entries"]), store=store)
    assert third.similar is not first.similar and third.similar != first.similar
    assert third.similar == build_catalog(read_source(project["entries"])).similar


def test_one_changed_entry_rewrites_one_parsed_shard(project) -> None:
    incremental(project)
    shards = sorted(project["cache"].glob("parsed-*.pickle"))
    before = {p.name: p.stat().st_mtime_ns for p in shards}
    CHANGES["entry text"](project)
    incremental(project)
    after = {p.name: p.stat().st_mtime_ns for p in project["cache"].glob("parsed-*.pickle")}
    changed = [name for name in after if after[name] != before.get(name)]
    assert len(changed) <= 2  # the new version's shard, and the old version's if it differs
    assert len(after) == len(before)
    assert_same_as_cold(project)


def test_an_update_that_fails_leaves_the_site_as_it_was(project) -> None:
    """Incremental builds update the site in place: a render error must not leave it half-updated."""
    incremental(project)
    before = tree_digest(project["site"])
    CHANGES["entry text"](project)
    tpl = project["templates"] / "tag.html"
    tpl.write_text(tpl.read_text().replace("{{ tag.description }}", "{{ tag.no_such_field.deeper }}"))
    with pytest.raises(Exception) as failure:
        incremental(project)
    assert not isinstance(failure.value, AssertionError), failure.value
    assert tree_digest(project["site"]) == before
    assert not [p for p in project["site"].parent.iterdir() if p.name.startswith(".site-")]  # no staging left behind
    tpl.write_text((TEMPLATES / "tag.html").read_text())
    incremental(project)
    assert_same_as_cold(project)


@pytest.mark.parametrize("jobs", [1, None], ids=["one job: scanned in-process", "every core: scanned in a forked process when no other thread runs"])
def test_an_update_removes_files_the_site_no_longer_has(project, jobs) -> None:
    build(project["entries"], project["site"], CONFIG, project["templates"], search=False, cache_dir=project["cache"], jobs=jobs)
    (project["site"] / "stray.html").write_text("not ours")
    (project["site"] / "old-folder").mkdir()
    (project["site"] / "old-folder/index.html").write_text("gone")
    (project["site"] / "empty-folder/deeper").mkdir(parents=True)
    (project["site"] / "tags/empty").mkdir()
    CHANGES["removed entry"](project)
    build(project["entries"], project["site"], CONFIG, project["templates"], search=False, cache_dir=project["cache"], jobs=jobs)
    for gone in ("stray.html", "old-folder", "empty-folder", "tags/empty", "nccl-hang"):
        assert not (project["site"] / gone).exists(), gone
    assert_same_as_cold(project)


def test_an_edit_to_an_entry_body_leaves_the_site_wide_json_alone(project) -> None:
    """api/entries.json and api/fingerprints.json hold titles, summaries, tags and fingerprints:
    a changed mechanism rewrites neither (each is a full pass over every entry at 10,000)."""
    incremental(project)
    site = project["site"]
    before = {name: (site / name).stat().st_ino for name in ("api/entries.json", "api/fingerprints.json", "gpu-oom/index.html")}
    edit_entry(project, "memory/gpu-oom.yaml", mechanism="A rewritten mechanism paragraph that explains the failure in new words.")
    incremental(project)
    after = {name: (site / name).stat().st_ino for name in before}
    assert after["gpu-oom/index.html"] != before["gpu-oom/index.html"]
    assert after["api/entries.json"] == before["api/entries.json"] and after["api/fingerprints.json"] == before["api/fingerprints.json"]
    assert_same_as_cold(project)


def test_an_edit_to_an_entry_body_re_renders_only_its_own_files(project) -> None:
    """Pages that list an entry show its card (title, summary, tags); a body edit leaves them."""
    incremental(project)
    before = {p: p.stat().st_ino for p in project["site"].rglob("*") if p.is_file()}
    edit_entry(project, "memory/gpu-oom.yaml", mechanism="A rewritten mechanism paragraph that explains the failure in new words.")
    incremental(project)
    redone = sorted(p.relative_to(project["site"]).as_posix() for p, ino in before.items() if p.stat().st_ino != ino)
    assert redone == ["api/entries/gpu-oom.json", "gpu-oom/index.html"]
    assert_same_as_cold(project)


def _redone(project, change) -> set[str]:
    """The files a rebuild after `change` wrote anew (the others kept their inode)."""
    incremental(project)
    before = {p: p.stat().st_ino for p in project["site"].rglob("*") if p.is_file()}
    change(project)
    incremental(project)
    assert_same_as_cold(project)
    return {p.relative_to(project["site"]).as_posix() for p, ino in before.items() if p.stat().st_ino != ino}


STATIC = {"static/pygments.css"} | {f"static/{p.name}" for p in (TEMPLATES / "static").iterdir()}  # written by every build


def test_a_tag_description_re_renders_only_the_pages_that_show_it(project) -> None:
    redone = _redone(project, CHANGES["tag registry"])  # oom's description
    assert redone - STATIC == {"tags/index.html", "tags/oom/index.html"} | {p for p in redone if p.startswith("tags/oom+") or "+oom/" in p}


def test_a_category_description_re_renders_only_the_pages_that_show_it(project) -> None:
    redone = _redone(project, CHANGES["category description"])  # distributed's description
    # the home page lists the categories with their descriptions in its context
    assert redone - STATIC == {"categories/index.html", "categories/distributed/index.html", "index.html"}


def test_a_template_edit_re_renders_only_the_pages_made_with_it(project) -> None:
    redone = _redone(project, CHANGES["template"])  # entry.html
    assert redone - STATIC == {"ddp-oom/index.html", "gpu-oom/index.html", "nccl-hang/index.html"}


def test_an_edit_to_an_imported_template_re_renders_the_pages_that_import_it(project) -> None:
    importers = {p.name for p in project["templates"].glob("*.html") if '"_macros.html"' in p.read_text()}
    assert {"entry.html", "tag.html", "category.html", "home.html"} <= importers
    redone = _redone(project, CHANGES["imported template (macros)"])
    made_with = {"entry.html": "gpu-oom/index.html", "tag.html": "tags/oom/index.html", "category.html": "categories/memory/index.html",
                 "home.html": "index.html", "tags.html": "tags/index.html", "search.html": "search/index.html", "404.html": "404.html"}
    assert {made_with[t] for t in importers if t in made_with} <= redone
    assert not {made_with[t] for t in set(made_with) - importers} & redone
    assert not {p for p in redone if p.startswith("api/")}


def test_a_template_edit_re_renders_the_entry_pages_from_their_kept_fragments(project, monkeypatch) -> None:
    """An entry page's markdown and highlighted code are kept with the parsed entry in the cache:
    a template edit renders the entry pages again without running markdown or Pygments."""
    import generator.site.markdown as md

    incremental(project)
    calls: list[str] = []
    for name in ("block", "inline", "code_block"):
        monkeypatch.setattr(md, name, lambda *a, _real=getattr(md, name), _name=name, **k: calls.append(_name) or _real(*a, **k))
    CHANGES["template"](project)
    assert incremental(project).rendered == 3 and calls == []
    CHANGES["entry text"](project)  # an edited entry is parsed again: its fragments are made anew
    incremental(project)
    assert "block" in calls and "code_block" in calls
    assert_same_as_cold(project)


def test_a_template_that_names_another_by_a_variable_depends_on_every_template(project) -> None:
    from generator.site.render import Renderer

    def key_after_feed_edit(name: str) -> tuple[str, str]:
        before = Renderer(CONFIG, project["templates"]).template_key(name)
        feed = project["templates"] / "feed.xml"
        feed.write_text(feed.read_text() + "\n")
        return before, Renderer(CONFIG, project["templates"]).template_key(name)

    before, after = key_after_feed_edit("tags.html")
    assert before == after  # tags.html uses base.html only
    tags = project["templates"] / "tags.html"
    tags.write_text(tags.read_text().replace("{% block main %}", "{% block main %}{% if false %}{% include page_path %}{% endif %}"))
    before, after = key_after_feed_edit("tags.html")
    assert before != after


def test_template_keys_come_from_the_cache_without_parsing_and_follow_an_added_include(project, monkeypatch) -> None:
    """What each template names is kept in the build cache by its source: a rebuild's renderer
    parses no template to key the pages, its keys are the ones parsing gives, and a template whose
    source changes (an include added) is parsed again, so its key follows the included file."""
    import jinja2

    from generator.site.cache import BuildCache
    from generator.site.render import Renderer, TemplateCache

    names = ["entry.html", "tags.html", "tag.html", "home.html", "feed.xml"]

    def keys(cached: bool) -> list[str]:
        compiled = TemplateCache(BuildCache.open(project["cache"])) if cached else None
        renderer = Renderer(CONFIG, project["templates"], compiled)
        return [renderer.template_key(n) for n in names]

    plain = keys(cached=False)
    assert keys(cached=True) == plain  # parsed, and kept
    parsed: list[str] = []
    real = jinja2.Environment.parse
    monkeypatch.setattr(jinja2.Environment, "parse", lambda self, source, name=None, filename=None: parsed.append(name) or real(self, source, name, filename))
    assert keys(cached=True) == plain and parsed == []
    tags = project["templates"] / "tags.html"
    (project["templates"] / "_note.html").write_text("<p>note</p>\n")
    tags.write_text(tags.read_text().replace("{% block main %}", '{% block main %}{% include "_note.html" %}'))
    with_include = keys(cached=True)
    assert sorted(parsed) == ["_note.html", "tags.html"] and with_include[1] != plain[1] and with_include[0] == plain[0]
    (project["templates"] / "_note.html").write_text("<p>another note</p>\n")
    assert keys(cached=True)[1] != with_include[1]


def test_entries_cached_by_other_generator_code_are_parsed_again(project, monkeypatch) -> None:
    import generator.site.cache
    import generator.site.incremental

    incremental(project)
    parsed: list[str] = []
    real = generator.site.incremental.parse_one
    monkeypatch.setattr(generator.site.incremental, "parse_one", lambda item, kept: parsed.append(item[0]) or real(item, kept))
    CHANGES["entry text"](project)
    incremental(project)
    assert len(parsed) == 1  # same code: only the edited entry
    monkeypatch.setattr(generator.site.cache, "code_version", lambda: "a schema rule was added")
    CHANGES["entry title (shown on linked pages)"](project)
    incremental(project)
    assert len(parsed) == 1 + 3  # other code: every entry, since its rules may differ
    assert_same_as_cold(project)


def test_the_fingerprint_file_is_the_matcher_spec_and_its_list_is_reused_until_a_fingerprint_changes(project) -> None:
    """api/fingerprints.json is assembled from a memoized fingerprint list; it must stay the very
    text of safe_json(matcher_spec(...)) after every kind of edit."""
    from generator.core.catalog import build_catalog
    from generator.diagnosis.matcher import matcher_spec
    from generator.site.pages import fingerprint_data, fingerprints_file
    from generator.core.read import read_source
    from generator.core.safejson import safe_json

    store: dict = {}

    def check() -> str:
        catalog = build_catalog(read_source(project["entries"]), store=store)
        text = fingerprints_file(catalog)
        assert text == safe_json(matcher_spec(fingerprint_data(catalog))).encode("utf-8")
        return store["fingerprints.json"][0]

    from generator.site.pages import plan_pages

    pages = plan_pages(build_catalog(read_source(project["entries"]), store=store), CONFIG).pages
    # rendered in the build's own process (render_pages), since render workers' memos are lost
    assert {p.path for p in pages if p.site_wide} == {"api/entries.json", "api/fingerprints.json"}
    first = check()
    CHANGES["entry text"](project)  # a summary: in the file, but not in the fingerprint list
    assert check() == first
    data = yaml.safe_load((project["entries"] / "memory/gpu-oom.yaml").read_text())
    data["fingerprints"][0]["strength"] = "supporting" if data["fingerprints"][0].get("strength") != "supporting" else "strong"
    edit_entry(project, "memory/gpu-oom.yaml", fingerprints=data["fingerprints"])
    assert check() != first


@pytest.mark.parametrize("change", [k for k in CHANGES if k.startswith(("entry", "new", "removed", "tag"))])
def test_the_site_wide_json_files_are_assembled_from_reused_items_and_equal_one_dump(project, change: str) -> None:
    """api/entries.json and the entries map of api/fingerprints.json are joined from per-entry
    items kept between builds; after any entry or registry change they must still be the very
    text of one safe_json dump, and an entry the change did not touch keeps its item object."""
    from generator.core.catalog import build_catalog
    from generator.diagnosis.matcher import matcher_spec
    from generator.site.pages import entries_index, entry_url, fingerprint_data, fingerprints_file, plan_pages
    from generator.core.read import read_source
    from generator.core.safejson import safe_json

    store: dict = {}

    def check():
        catalog = build_catalog(read_source(project["entries"]), store=store)
        plan_pages(catalog, CONFIG)
        assert fingerprints_file(catalog) == safe_json(matcher_spec(fingerprint_data(catalog))).encode("utf-8")
        assert entries_index(catalog).decode("utf-8") == safe_json({"entries": [
            {"slug": r.slug, "category": r.category, "url": entry_url(r.slug), "title": r.head.title, "summary": r.head.summary,
             "tags": list(r.tags), "data": f"api/entries/{r.slug}.json"} for r in catalog.records.values()]})
        return {name: {slug: value for slug, (_, value) in store[name].items()} for name in ("entries.json items", "fingerprints.json entries")}

    before = check()
    CHANGES[change](project)
    after = check()
    for name in before:
        kept = [slug for slug in after[name] if slug in before[name] and after[name][slug] is before[name][slug]]
        assert kept, name  # some items were reused, not made again
        changed = {slug for slug in after[name] if before[name].get(slug) != after[name][slug]}
        assert all(after[name][slug] is not before[name].get(slug) for slug in changed)


def _entry_reads(monkeypatch) -> list[str]:
    """The entry files the next builds read (registries left out)."""
    import generator.core.read as read

    reads: list[str] = []
    original = read._read_plain

    def spy(path, display, problems, sigs=None):
        if not display.endswith(read.REGISTRIES):
            reads.append(display.rsplit("/", 2)[-2] + "/" + display.rsplit("/", 1)[-1])
        return original(path, display, problems, sigs)

    monkeypatch.setattr(read, "_read_plain", spy)
    return reads


def test_an_entry_file_whose_signature_is_unchanged_is_not_read_again(project, monkeypatch) -> None:
    """Like git's index: size, mtime, ctime and inode unchanged → the cached digest stands. An
    edit that keeps the size and puts the mtime back (cp -p, rsync -t) still changes the ctime."""
    import generator.site.incremental as b

    monkeypatch.setattr(b, "SETTLED_NS", 0)  # the files were written just now
    reads = _entry_reads(monkeypatch)
    incremental(project)
    assert sorted(reads) == ["distributed/ddp-oom.yaml", "distributed/nccl-hang.yaml", "memory/gpu-oom.yaml"]
    reads.clear()
    CHANGES["entry text"](project)
    incremental(project)
    assert reads == ["memory/gpu-oom.yaml"]
    assert_same_as_cold(project)

    path = project["entries"] / "distributed/nccl-hang.yaml"
    st = path.stat()
    text = path.read_text()
    swapped = text.replace("NCCL hang", "NCCL HANG", 1)
    assert swapped != text and len(swapped) == len(text)
    path.write_text(swapped)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    reads.clear()
    incremental(project)
    assert reads == ["distributed/nccl-hang.yaml"]
    assert_same_as_cold(project)
    assert "NCCL HANG" in (project["site"] / "nccl-hang/index.html").read_text()


def test_a_file_changed_just_before_it_was_read_is_read_again_next_time(project, monkeypatch) -> None:
    """A second write within the same tick of the file system's clock could keep a file's whole
    signature; a file changed less than SETTLED_NS before a build read it is not trusted later."""
    reads = _entry_reads(monkeypatch)
    incremental(project)  # every file was written a moment ago
    reads.clear()
    CHANGES["template"](project)  # a build that has work, with no entry changed
    incremental(project)
    assert len(reads) == 3


def test_memo_files_are_written_when_their_result_changes_and_ignored_when_altered(project) -> None:
    """Each corpus-wide result has its own signed files: a body edit rewrites none of them, a
    summary edit only the edited entry's shard of each per-entry map, and an altered file is
    recomputed, not trusted."""
    import zlib

    from generator.site.cache import SHARDS, MemoFiles

    incremental(project)
    files = {p.name: p for p in project["cache"].glob("memo-*.pickle")}
    # a --no-search build makes no search index; the git dates have one; the two per-entry maps
    # of the site-wide JSON files have a file per shard
    assert len(files) == 4 + 2 * SHARDS

    def stamps() -> dict[str, int]:
        return {name: p.stat().st_mtime_ns for name, p in files.items()}

    before = stamps()
    edit_entry(project, "memory/gpu-oom.yaml", mechanism="A new explanation of the mechanism, long enough to pass.")
    incremental(project)
    assert stamps() == before
    CHANGES["entry text"](project)
    incremental(project)
    rewritten = {name for name, ns in stamps().items() if ns != before[name]}
    names, shard = MemoFiles(project["cache"], b""), zlib.crc32(b"gpu-oom") % SHARDS
    assert rewritten == {names._path("entries.json items", shard).name, names._path("fingerprints.json entries", shard).name}
    for p in files.values():
        data = bytearray(p.read_bytes())
        data[40] ^= 1
        p.write_bytes(bytes(data))
    CHANGES["entry title (shown on linked pages)"](project)
    incremental(project)
    assert_same_as_cold(project)


def test_an_edit_remakes_the_search_index_as_a_cold_build_makes_it(project, monkeypatch) -> None:
    """The search index is kept with the build cache, each entry's terms on their own: a body
    edit recomputes that entry's terms only, and the index is the one a cold build writes."""
    import generator.search.files as searchindex

    build(project["entries"], project["site"], CONFIG, project["templates"], cache_dir=project["cache"], jobs=1)
    made: list[int] = []
    real = searchindex.doc_terms
    monkeypatch.setattr(searchindex, "doc_terms", lambda *a: made.append(1) or real(*a))
    edit_entry(project, "memory/gpu-oom.yaml", mechanism="The allocator could not find a zebrafish-sized block.")
    build(project["entries"], project["site"], CONFIG, project["templates"], cache_dir=project["cache"], jobs=1)
    assert len(made) == 1
    build(project["entries"], project["cold"], CONFIG, project["templates"], cache_dir=None, jobs=1)
    assert tree_digest(project["site"]) == tree_digest(project["cold"])
    assert "zebrafish" in (project["site"] / "search/v/z.json").read_text()


def test_an_update_leaves_unchanged_index_files_unread_and_rewrites_an_altered_one(project, monkeypatch) -> None:
    """The search index's files are keyed by their bytes' digest: an update reads back none of
    the files whose content stays the same (it compared every one with the site's before),
    writes the changed ones, and rewrites a file altered on disk since it was written."""
    import generator.site.write as write

    def again() -> None:
        build(project["entries"], project["site"], CONFIG, project["templates"], cache_dir=project["cache"], jobs=1)

    again()
    before = {p.relative_to(project["site"]).as_posix(): p.read_bytes() for p in (project["site"] / "search").rglob("*.json")}
    compared: list[str] = []
    real = write._same_bytes
    monkeypatch.setattr(write, "_same_bytes", lambda path, data: compared.append(path) or real(path, data))
    CHANGES["entry text"](project)
    again()
    after = {p.relative_to(project["site"]).as_posix(): p.read_bytes() for p in (project["site"] / "search").rglob("*.json")}
    changed = {path for path, data in after.items() if before.get(path) != data}
    assert changed and len(changed) < len(after) // 2
    read_back = {os.path.relpath(path, project["site"]) for path in compared}
    assert not {path for path in read_back if path.startswith("search/")} - changed  # only files whose content changed
    (project["site"] / "search/docs.json").write_text("{}\n")  # altered by hand since it was written
    CHANGES["entry title (shown on linked pages)"](project)
    again()
    build(project["entries"], project["cold"], CONFIG, project["templates"], cache_dir=None, jobs=1)
    assert tree_digest(project["site"]) == tree_digest(project["cold"])


def test_templates_are_compiled_once_and_kept_signed_in_the_cache(project, monkeypatch) -> None:
    """A rebuild loads the compiled templates from the cache instead of compiling them; a compiled
    file that is altered (loading bytecode runs it) is ignored and compiled again."""
    import jinja2

    incremental(project)
    compiled = sorted(project["cache"].glob("templates-*.bin"))
    assert len(compiled) >= 5
    CHANGES["entry text"](project)

    def refuse(*args, **kwargs):
        raise AssertionError("a template was compiled again")

    with monkeypatch.context() as m:
        m.setattr(jinja2.Environment, "compile", refuse)
        assert incremental(project).rendered > 0
    assert_same_as_cold(project)
    altered = {}
    for path in compiled:
        data = bytearray(path.read_bytes())
        data[-1] ^= 1
        path.write_bytes(altered.setdefault(path, bytes(data)))
    CHANGES["entry title (shown on linked pages)"](project)
    incremental(project)
    assert_same_as_cold(project)
    assert any(path.read_bytes() != altered[path] for path in compiled)  # compiled again and stored signed


@pytest.mark.parametrize("damage", ["deleted", "cut short", "swapped"])
def test_a_lost_or_altered_blob_shard_costs_a_parse_not_the_build(project, damage: str, monkeypatch) -> None:
    """Entry models sit in blob shards read only when a page needs them; a shard deleted, cut
    short (its signature header intact) or swapped for another signed shard must not break a
    rebuild or reach the site."""
    incremental(project)
    shards = sorted(project["cache"].glob("blobs-*.pickle"), key=lambda p: -p.stat().st_size)
    blobs = [p for p in shards if p.stat().st_size > 1000]  # the shards holding the three entries
    assert blobs and len(shards) == 32
    if damage == "deleted":
        for p in blobs:
            p.unlink()
    elif damage == "cut short":
        for p in blobs:
            p.write_bytes(p.read_bytes()[:-50])
    else:
        a, b = shards[0].read_bytes(), shards[-1].read_bytes()
        shards[0].write_bytes(b)
        shards[-1].write_bytes(a)
    edit_entry(project, "memory/gpu-oom.yaml", mechanism="A rewritten mechanism paragraph, so its page renders again.")
    incremental(project)
    assert_same_as_cold(project)
    edit_entry(project, "memory/gpu-oom.yaml", mechanism="Rewritten once more: the cache this build reads was written by the last one.")
    incremental(project)
    assert_same_as_cold(project)


def test_cross_entry_errors_keep_their_positions_through_the_cache(project) -> None:
    """Source positions travel from parse workers and through the cache packed, and are unpacked
    only to report a problem: the line and column must be those of a fresh parse."""
    from generator.core.problems import BuildFailed

    incremental(project)
    path = project["entries"] / "memory/gpu-oom.yaml"
    edit_entry(project, "memory/gpu-oom.yaml", related=["ddp-oom", "gpu-om"])
    line = path.read_text().splitlines().index("- gpu-om") + 1
    for _ in range(2):  # parsed now, then from the cache
        with pytest.raises(BuildFailed) as failed:
            incremental(project)
        (problem,) = [p for p in failed.value.problems if p.severity == "error"]
        assert (problem.line, problem.col) == (line, 3) and "related[1]: no entry 'gpu-om'" in problem.message


def test_a_change_in_the_verify_record_renders_only_that_entry_page_again(project) -> None:
    from generator.site.build import load_catalog

    edit_entry(project, "memory/gpu-oom.yaml", reproduce={
        "platform": "cpu", "packages": ["torch>=2.6,<3"], "script": "print('CUDA out of memory. Tried to allocate 20 MiB')\n", "matches": [0]})
    incremental(project)
    key = load_catalog(project["entries"]).records["gpu-oom"].head.reproduce_key
    item = {"result": "reproduced", "date": "2026-12-01", "platform": "cpu", "python": "3.11.7", "packages": {"torch": "2.14.1"},
            "expected": [0], "matched": [0], "reproduce": key}
    site = project["site"]
    for date in ("2026-12-01", "2026-12-08"):  # the first record, then a later run
        before = {p: p.stat().st_ino for p in site.rglob("*.html")}
        write_tree(project["entries"], {"verified.yaml": {"verified": {"gpu-oom": {**item, "date": date}}}})
        result = incremental(project)
        assert not result.unchanged
        redone = {p.relative_to(site).as_posix() for p, ino in before.items() if p.stat().st_ino != ino}
        assert redone == {"gpu-oom/index.html"}
        assert f"Error text reproduced with torch 2.14.1 on CPU (Python 3.11.7), <time datetime=\"{date}\">" in (site / "gpu-oom/index.html").read_text()
        assert_same_as_cold(project)


def _write_same_file(folder: str, rounds: int) -> None:
    from generator.site.cache import _write_signed

    for n in range(rounds):
        _write_signed(Path(folder) / "templates-same.bin", b"k" * 32, b"payload %d" % n)


def test_workers_writing_the_same_cache_file_at_once_do_not_fail(tmp_path) -> None:
    """Render workers that compile one template at the same moment store the same cache file:
    each writes its own temporary file, so no rename finds its file taken by another."""
    import multiprocessing

    from generator.site.cache import _read_signed

    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_write_same_file, args=(str(tmp_path), 100)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    assert (_read_signed(tmp_path / "templates-same.bin", b"k" * 32) or b"").startswith(b"payload ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["templates-same.bin"]  # no temporary file left


def test_a_field_added_to_the_cards_re_renders_the_listing_pages_when_it_changes(project, monkeypatch) -> None:
    """A page's key is made of what it looked up, not of a list of fields: a field added to the
    cards (here the fix's summary) and shown by the card template re-renders every page that lists
    the entry when only that field changes, with no key code naming it (reads.py)."""
    from generator.site.reads import Reader

    card = Reader._card  # what a card holds
    monkeypatch.setattr(Reader, "_card", lambda self, slug: {**card(self, slug), "fix": self.catalog.records[slug].head.fix_summary})
    macros = project["templates"] / "_macros.html"
    macros.write_text(macros.read_text().replace("    <p>{{ c.summary }}</p>\n", '    <p>{{ c.summary }}</p>\n    <p class="fix">{{ c.fix }}</p>\n'))

    def new_fix_summary(p) -> None:
        path = p["entries"] / "memory/gpu-oom.yaml"
        data = yaml.safe_load(path.read_text())
        data["fix"]["summary"] = "Halve the per-device batch size and accumulate gradients to keep the effective batch."
        path.write_text(yaml.safe_dump(data, sort_keys=False))

    redone = _redone(project, new_fix_summary)  # and the site equals a cold build
    tags = yaml.safe_load((project["entries"] / "memory/gpu-oom.yaml").read_text())["tags"]
    listings = {"categories/memory/index.html"} | {f"tags/{t}/index.html" for t in tags}
    assert listings <= redone, sorted(listings - redone)
    assert all("Halve the per-device batch size" in (project["site"] / page).read_text() for page in listings)


def test_a_page_cannot_read_around_its_key(tmp_path) -> None:
    """`make` and `body` reach the catalog only through the View: a closure, or a catalog among
    their arguments, is refused when the page is planned."""
    from functools import partial

    from generator.core.catalog import build_catalog
    from generator.core.read import read_source
    from generator.site.pages import Page, _cards
    from generator.site.reads import Reader

    catalog = build_catalog(read_source(write_tree(tmp_path / "entries", sample_files())))
    reader = Reader(catalog, {})
    ok = Page("ok/index.html", "tag.html", make=partial(_cards, ("gpu-oom",)))
    assert ok.made(reader)[1] == (("card", "gpu-oom"),)
    with pytest.raises(TypeError, match="module-level function"):
        Page("x/index.html", "tag.html", make=lambda view: {"entries": [catalog.records["gpu-oom"].head.title]})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not a plain value"):
        Page("x/index.html", "tag.html", make=partial(_cards, catalog))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="needs the reader"):
        ok.made()


def test_an_entry_travels_pickled_and_is_loaded_only_when_asked(project) -> None:
    """validate.Body: a parse result pickled (a worker's answer) carries the model with its page's
    fragments and the cross-entry positions; a Body the build cache hands out reads its pickle
    only when a page asks for the entry."""
    import pickle

    from generator.core.validate import Body, parse_entry
    from generator.site.incremental import parse_one

    path = next(project["entries"].glob("*/*.yaml"))
    parsed, problems = parse_entry(path.read_bytes(), str(path))
    assert parsed is not None and not problems
    kept, _ = parse_one((str(path), path.read_bytes()), kept=True)
    assert kept is not None and kept.body.fragments is not None and "mechanism" in kept.body.fragments
    arrived = pickle.loads(pickle.dumps(kept))
    assert arrived.body.entry == parsed.body.entry and arrived.body.fragments == kept.body.fragments
    assert arrived.loaded.where(("tags", 0)) == parsed.loaded.where(("tags", 0))
    calls = []
    lazy = Body.pickled(lambda: calls.append(1) or arrived.body.blob())
    assert lazy.elsewhere and not calls  # nothing read until a page asks
    assert lazy.entry == parsed.body.entry and calls == [1]
    assert not Body(parsed.body.entry).elsewhere and Body(parsed.body.entry).fragments is None


@pytest.mark.parametrize("server", [False, True], ids=["fresh process", "build server"])
@pytest.mark.parametrize("change", sorted(CHANGES))
def test_the_search_index_a_rebuild_patches_is_a_cold_builds(project, change, server, monkeypatch) -> None:
    """A rebuild patches the search index of the build before where the changed entries' terms
    changed (Postings.patched), from the build cache in a fresh process or from what a build
    server (`Warm`) holds; after every kind of change the site, search/ included, is a cold
    build's. An edit of an entry's text patches: Postings.made is not called."""
    from generator.search.postings import Postings
    from generator.site.build import Warm

    warm = Warm() if server else None

    def again():
        build(project["entries"], project["site"], CONFIG, project["templates"], cache_dir=project["cache"], jobs=1, warm=warm)
        if warm is not None:
            warm.settle()

    again()
    made: list[int] = []
    real = Postings.made.__func__
    monkeypatch.setattr(Postings, "made", classmethod(lambda cls, *a, **k: made.append(1) or real(cls, *a, **k)))
    CHANGES[change](project)
    again()
    if change in ("entry text", "entry title (shown on linked pages)", "entry tags", "entry links (similar entries change)"):
        assert made == []
    build(project["entries"], project["cold"], CONFIG, project["templates"], cache_dir=None, jobs=1)
    assert tree_digest(project["site"]) == tree_digest(project["cold"])


def test_a_patched_search_index_equals_one_made_from_every_entry() -> None:
    """Postings.patched against Postings.made on the real entries: 12 rounds of random changes
    to a few entries' terms (terms dropped, added, new to the index, reweighted; a term's last
    posting removed), each patch applied to the last patched index, which stays unchanged. The
    files are those of the index made anew, a chunk that no change touched keeps its text, and
    the postings are the ones the CLI's engine ranks with (SearchIndex.build)."""
    import random

    from generator.search.postings import Postings
    from generator.search.query import SearchIndex, doc_terms, entry_texts, Synonyms
    from generator.site.build import load_catalog

    catalog = load_catalog(Path(__file__).resolve().parent.parent / "entries")
    synonyms = Synonyms.of(catalog.synonyms)
    slugs = sorted(catalog.records)
    docs = [doc_terms(entry_texts(catalog.records[s], catalog), synonyms) for s in slugs]
    ids = {s: i for i, s in enumerate(slugs)}
    index = Postings.made(docs)
    assert index.terms() == SearchIndex.build(catalog, per_entry=lambda s: docs[ids[s]]).terms
    kept_texts = 0
    rnd = random.Random(5)
    vocabulary = sorted(index.stats)
    for round_ in range(12):
        changes = {}
        for doc in rnd.sample(range(len(slugs)), rnd.randint(1, 4)):
            before = docs[doc]
            after = {t: w for t, w in before.items() if rnd.random() > 0.1}
            for t in rnd.sample(sorted(after), min(3, len(after))):
                after[t] = rnd.randint(1, 3000)
            for t in rnd.sample(vocabulary, 3):
                after[t] = rnd.randint(1, 3000)
            after[f"zz{round_}x{doc}"] = 7
            changes[doc] = (before, after)
            docs[doc] = after
        files, stats = index.files(), dict(index.stats)
        patched = index.patched(changes)
        assert index.files() == files and index.stats == stats  # the last index is left as it was
        made = Postings.made(docs)
        assert patched.files() == made.files() and list(patched.stats.items()) == list(made.stats.items())
        assert patched.terms() == SearchIndex.build(catalog, per_entry=lambda s: docs[ids[s]]).terms
        kept_texts += sum(1 for c in patched.chunks if c in index.chunks)
        index = patched
    assert kept_texts > 4  # the reuse was exercised (these random edits touch terms in most chunks)
    with pytest.raises(LookupError):
        index.patched({0: ({"no-such-term": 1}, {})})


def _catalog_parts(c) -> tuple:
    """Everything a catalog holds, its warnings worded and placed."""
    return ({s: (r.category, r.path, r.head, r.tags) for s, r in c.records.items()}, c.tags, c.categories, c.aliases, c.by_tag,
            c.by_category, c.backlinks, c.caused_by, c.similar, c.synonyms, c.verified, c.warning_count, c.warnings)


def test_a_catalog_patched_from_the_last_is_the_one_checking_everything_makes(project) -> None:
    """A build that holds the last catalog (the build server, the dev server) patches it where an
    edit changes nothing a cross-entry rule reads. After every kind of change, what it gets is
    what checking every file again gets: records, indexes, similar entries, the warnings with
    their lines; and it is a patch exactly when the edit left the links alone."""
    from generator.core.catalog import build_catalog
    from generator.core.problems import BuildFailed
    from generator.core.read import read_entry, read_source
    from generator.core.validate import parse_entry

    script = "print('RuntimeError: CUDA out of memory')\n"
    reproduce = {"platform": "cpu", "packages": ["torch>=2.0,<3"], "matches": [0], "script": script}
    fingerprint = [{"pattern": "CUDA out of memory", "strength": "definitive", "examples": ["RuntimeError: CUDA out of memory"]}]
    recorded = valid_entry(title="GPU OOM", related=["ddp-oom"], often_causes=["nccl-hang"], fingerprints=fingerprint, reproduce=reproduce)
    key = parse_entry(yaml.safe_dump(recorded).encode(), "x.yaml")[0].head.reproduce_key
    write_tree(project["entries"], {
        "memory/gpu-oom.yaml": recorded,
        "memory/pinned-oom.yaml": valid_entry(title="Pinned memory OOM", related=["gpu-oom"]),  # not returned: a warning at related[0]
        "verified.yaml": {"verified": {"gpu-oom": {"result": "reproduced", "date": "2026-12-01", "platform": "cpu", "python": "3.11.7",
                                                   "packages": {"torch": "2.14.1"}, "expected": [0], "matched": [0], "reproduce": key}}},
    })
    parses: dict[tuple[str, bytes], tuple] = {}  # one result per file content, as a build's held parse results

    def inputs():
        source = read_source(project["entries"])
        results = {}
        for path, category, slug, raw in source.entries:
            raw = raw if raw is not None else read_entry(source, category, slug)
            results[path] = parses[path, raw] if (path, raw) in parses else parses.setdefault((path, raw), parse_entry(raw, path))
        return source, results

    def build_both(last):
        source, results = inputs()
        return build_catalog(source, results, {}, last), build_catalog(source, results, {})

    def long_summary(p) -> None:  # wraps over lines: the related links below it move down
        edit_entry(p, "memory/pinned-oom.yaml", summary="A host runs out of memory while the loader workers each hold a copy. " * 4)

    def new_script(p) -> None:  # another reproduce section: the record no longer speaks for it
        edit_entry(p, "memory/gpu-oom.yaml", reproduce={**reproduce, "script": script + "# again\n"})

    def broken(p) -> None:
        edit_entry(p, "memory/pinned-oom.yaml", related=["no-such-entry"])

    def unknown_name(p) -> None:
        edit_entry(p, "memory/pinned-oom.yaml", mechanism=valid_entry()["mechanism"] + " See [[no-such-entry]].")

    edits = [("summary", CHANGES["entry text"], True), ("lines moved", long_summary, True), ("title", CHANGES["entry title (shown on linked pages)"], True),
             ("reproduce section", new_script, False), ("tags", CHANGES["entry tags"], False),
             ("links", CHANGES["entry links (similar entries change)"], False), ("new entry", CHANGES["new entry"], False),
             ("tag registry", CHANGES["tag registry"], False), ("removed entry", CHANGES["removed entry"], False),
             ("an error", broken, None), ("the error mended", lambda p: edit_entry(p, "memory/pinned-oom.yaml", related=["gpu-oom"]), True),
             ("a name in brackets that is no entry", unknown_name, None)]
    last, _ = build_both(None)
    for name, change, patched in edits:
        before = last.warnings
        change(project)
        if patched is None:
            with pytest.raises(BuildFailed):
                build_catalog(*inputs(), {}, last)
            continue
        now, afresh = build_both(last)
        assert _catalog_parts(now) == _catalog_parts(afresh), name
        kept = [s for s in now.records if s in last.records and now.records[s] is last.records[s]]
        assert bool(kept) == patched, name  # a patch keeps every untouched record; checking again makes each anew
        if name == "lines moved":
            assert [w.line for w in now.warnings] != [w.line for w in before]
        if name == "reproduce section":
            assert now.warning_count == last.warning_count + 1
        last = now


def test_a_rebuild_makes_the_cards_and_matcher_items_of_the_changed_entries_only(project, monkeypatch) -> None:
    """api/entries.json and api/fingerprints.json are rendered again after a summary edit, but
    their items of unchanged entries come from the memo, keyed on the values the last build's
    reader found (reads.Known, as the build cache keeps them): the card or matcher item of an
    unchanged entry is not made at all. The files are still one dump of every entry."""
    from generator.core.catalog import build_catalog
    from generator.core.read import read_source
    from generator.diagnosis.matcher import matcher_spec
    from generator.core.safejson import safe_json
    from generator.site.pages import fingerprint_data, plan_pages
    from generator.site.reads import Known, Reader

    write_tree(project["entries"], {f"memory/extra-{i}.yaml": valid_entry(title=f"Extra failure {i}") for i in range(6)})
    store: dict = {}
    paths = ("api/entries.json", "api/fingerprints.json")

    def render(before: Known | None) -> tuple[Known, dict[str, bytes], object]:
        catalog = build_catalog(read_source(project["entries"]), store=store)
        plan = plan_pages(catalog, CONFIG, before=before)
        out = {page.path: page.made(plan.reader)[0] for page in plan.pages if page.path in paths}
        known = plan.reader.known()
        return Known(known.signatures, known.values), out, catalog  # what the build cache keeps of it

    known, _, _ = render(None)
    made: dict[str, list[str]] = {"_card": [], "_matcher_entry": []}
    for name, slugs in made.items():
        original = getattr(Reader, name)
        monkeypatch.setattr(Reader, name, lambda self, slug, _o=original, _s=slugs: _s.append(slug) or _o(self, slug))
    edit_entry(project, "memory/gpu-oom.yaml", summary="A new quick answer for the GPU OOM entry, in two sentences.")
    _, out, catalog = render(known)
    assert made == {"_card": ["gpu-oom"], "_matcher_entry": ["gpu-oom"]}
    assert out["api/fingerprints.json"] == safe_json(matcher_spec(fingerprint_data(catalog))).encode("utf-8")
    assert b"A new quick answer for the GPU OOM entry" in out["api/entries.json"]


def test_a_build_server_digests_only_the_plain_files_made_anew(project, monkeypatch) -> None:
    """A file of plain content is keyed by its bytes' digest; in a build server, one made from the
    very object the last build wrote (an unchanged entry's search doc file, from the memo) keeps
    that build's key undigested. After a summary edit only new objects are digested, and the
    site is still a cold build's."""
    import hashlib as real_hashlib
    import types

    import generator.site.build as build_module
    from generator.site.build import Warm

    warm = Warm()

    def again():
        build(project["entries"], project["site"], CONFIG, project["templates"], cache_dir=project["cache"], jobs=1, warm=warm)
        warm.settle()

    again()
    digested: list[bytes] = []
    spy = types.SimpleNamespace(blake2b=lambda data, **k: digested.append(bytes(data)) or real_hashlib.blake2b(data, **k))
    monkeypatch.setattr(build_module, "hashlib", spy)
    edit_entry(project, "memory/gpu-oom.yaml", summary="A new quick answer for the GPU OOM entry, in two sentences.")
    again()
    docs = {p.name: p.read_bytes() for p in (project["site"] / "search" / "doc").iterdir()}
    edited = [name for name, data in docs.items() if b"A new quick answer" in data]
    assert len(edited) == 1 and len(docs) == 3
    assert docs[edited[0]] in digested
    assert not any(data in digested for name, data in docs.items() if name != edited[0])  # kept by identity
    build(project["entries"], project["cold"], CONFIG, project["templates"], cache_dir=None, jobs=1)
    assert tree_digest(project["site"]) == tree_digest(project["cold"])
