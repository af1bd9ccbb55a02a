"""The dev server's resident site (generator/site/resident.py): after every kind of change that
tests/test_incremental.py covers, applied one after another to one resident site, the site it
serves is byte for byte what a cold `failpedia build` of the same inputs writes; and the search
index follows a steady stream of edits without starving."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from conftest import valid_entry, write_tree
from generator.site.build import build
from generator.core.config import Config
from generator.site.resident import Debounced, ResidentSite
from sitecheck import tree_digest
from test_incremental import CHANGES, PAGED, edit_entry, project  # noqa: F401  (project: the fixture)

CONFIG = Config(base_url="http://127.0.0.1:8000/", page_size=PAGED.page_size)  # every listing spans pages


def _signatures(*roots: Path) -> dict[str, tuple[int, int, int]]:
    return {str(p): (st.st_size, st.st_mtime_ns, st.st_ino) for root in roots for p in root.rglob("*")
            if p.is_file() and (st := p.stat())}


def _rename(p: dict[str, Path]) -> None:
    (p["entries"] / "memory/gpu-oom.yaml").rename(p["entries"] / "memory/gpu-out-of-memory.yaml")
    edit_entry(p, "distributed/ddp-oom.yaml", related=["gpu-out-of-memory"])
    edit_entry(p, "memory/host-oom.yaml", related=["gpu-out-of-memory"])


MORE = {  # what the incremental tests leave out: a static file, a renamed entry, a fixed typo in a new file
    "static file": lambda p: (p["templates"] / "static/style.css").write_text((p["templates"] / "static/style.css").read_text() + "\n.x{}\n"),
    "renamed entry": _rename,
    "broken entry, then fixed": lambda p: write_tree(p["entries"], {"memory/host-oom.yaml": valid_entry(title="Host OOM, fixed", related=["gpu-out-of-memory"])}),
}


# Each step one patch and one cold build to compare with: an entry's change goes with a registry
# or static file's (different pages), never with a template's (which renders every entry page again).
STEPS = [
    ("entry text", "static file"), ("entry title (shown on linked pages)", "tag registry"), ("entry tags", "category registry"),
    ("entry links (similar entries change)", "category description"), ("entry fingerprints (search shards change)", "tag aliases (every entry's tags may resolve anew)"),
    ("new entry",), ("removed entry",), ("template",), ("imported template (macros)", "base template"), ("renamed entry",), ("broken entry, then fixed",),
]


def test_a_resident_site_patched_through_every_kind_of_change_equals_a_cold_build(project) -> None:  # noqa: F811
    assert sorted(c for step in STEPS for c in step) == sorted({**CHANGES, **MORE})
    site = ResidentSite(project["entries"], project["site"], CONFIG, project["templates"], jobs=1)
    assert site.patch().full
    changes = {**CHANGES, **MORE}
    taken: set[str] = set()  # the kinds of plan part some patch took over
    for step in STEPS:
        name = " + ".join(step)
        before = _signatures(project["entries"], project["templates"])
        if step == ("broken entry, then fixed",):  # a failed patch leaves the site as it was; the next one mends it
            write_tree(project["entries"], {"memory/host-oom.yaml": "title: [\n"})
            good = tree_digest(project["site"])
            try:
                site.patch([str(project["entries"] / "memory/host-oom.yaml")])
                raise AssertionError("a broken entry patched")
            except Exception as e:
                assert type(e).__name__ == "BuildFailed"
            assert tree_digest(project["site"]) == good
        for one in step:
            changes[one](project)
        after = _signatures(project["entries"], project["templates"])
        changed = [p for p in before.keys() | after.keys() if before.get(p) != after.get(p)]  # what the watcher reports
        patched = site.patch(changed)
        assert not patched.full and patched.changed, name
        # the site-wide files follow with the search index, after the changed pages are served
        assert not {"api/entries.json", "api/fingerprints.json"} & set(patched.changed), name
        later = site.update_index(patched)
        if "entry title" in name:
            assert {"api/entries.json", "api/fingerprints.json"} <= set(later), name
        build(project["entries"], project["cold"], CONFIG, project["templates"], search=True, cache_dir=None, jobs=1)
        assert tree_digest(project["site"]) == tree_digest(project["cold"]), name
        _assert_kept_keys_are_what_the_look_ups_give_now(site, patched.catalog, name)
        taken |= _assert_the_plan_taken_over_is_a_fresh_one(site, patched.catalog, name)
        if "entry text" in step:  # a summary: the pages that show gpu-oom, and no other
            pages = {p for p in patched.changed if p.endswith(".html")}
            assert "gpu-oom/index.html" in pages and all("gpu-oom" in (project["site"] / p).read_text() for p in pages)
            assert len(pages) < sum(1 for _ in project["site"].rglob("*.html"))
    assert taken == {"entry", "listing", "relevance", "sitemap", "plan"}


def _assert_kept_keys_are_what_the_look_ups_give_now(site: ResidentSite, catalog, name: str) -> None:
    """A page kept because none of its look-ups' subjects changed (reads.Reader.signatures) has the
    key that valuing every one of its look-ups afresh gives: the shortcut never hides a change,
    even one that the pages' bytes would not show in this small corpus."""
    from generator.site.reads import Reader

    reader = Reader(catalog, {}, dict(site._parsed.keys()))
    checked = [path for path, made in site._made.items() if made.reads]
    assert len(checked) > 10, name
    for path in checked:
        made = site._made[path]
        assert reader.key(made.plan, made.reads) == site._written[path], (name, path)


def _plain_page(page):
    """A page as what it is (a partial compares by identity)."""
    def made(fn):
        return (fn.func, fn.args, fn.keywords) if callable(fn) else fn
    return (page.path, page.template, page.context, made(page.body), made(page.make), page.about, page.in_sitemap, page.site_wide)


def _assert_the_plan_taken_over_is_a_fresh_one(site: ResidentSite, catalog, name: str) -> set[str]:
    """Every part of the plan a patch took over from the last (reuse.Reuse: an entry's pages, a
    listing's, the lists' order, the sitemap, each page's plan digest) is what planning afresh makes."""
    from generator.site.incremental import GIT_DATES, page_plans
    from generator.site.pages import Page, plan_pages
    from generator.site.reuse import Reuse

    assert site._reuse is not None and site._renderer is not None
    fresh = Reuse()
    plan = plan_pages(catalog, CONFIG, site._store[GIT_DATES][1], search=True, contents=dict(site._parsed.keys()), reuse=fresh)
    page_plans(plan.pages, CONFIG, True, site._renderer, fresh)
    kept, now = site._reuse._now, fresh._now
    assert kept.keys() == now.keys(), name
    taken = [k for k in kept if kept[k] is site._reuse._before.get(k)]
    if "template" not in name:
        assert any(k.startswith("plan:") for k in taken), name
    for k in taken:
        ours, theirs = kept[k][2], now[k][2]
        if isinstance(ours, tuple) and ours and isinstance(ours[0], Page):
            assert list(map(_plain_page, ours)) == list(map(_plain_page, theirs)), (name, k)
        elif isinstance(ours, Page):
            assert _plain_page(ours) == _plain_page(theirs), (name, k)
        else:
            assert ours == theirs, (name, k)
    return {k.partition(":")[0] for k in taken}


def test_an_unchanged_input_patches_nothing(project) -> None:  # noqa: F811
    site = ResidentSite(project["entries"], project["site"], CONFIG, project["templates"], jobs=1)
    site.patch()
    inodes = {p: p.stat().st_ino for p in project["site"].rglob("*") if p.is_file()}
    patched = site.patch([str(project["entries"] / "memory/gpu-oom.yaml")])  # touched, not changed
    assert patched.changed == () and site.update_index(patched) == ()
    assert {p: p.stat().st_ino for p in project["site"].rglob("*") if p.is_file()} == inodes


def test_the_index_is_remade_under_a_steady_stream_of_edits_and_ends_with_the_last() -> None:
    """A value asked for faster than `quiet` still runs within `most`; the last one asked always runs."""
    runs: list[int] = []
    done = threading.Event()
    worker: Debounced[int] = Debounced(lambda n: (runs.append(n), time.sleep(0.01), done.set()), quiet=0.03, most=0.04)
    try:
        for n in range(40):  # an edit every 5 ms or more, 200 ms in all: five times `most`
            worker.ask(n)
            time.sleep(0.005)
        assert done.is_set() and runs[0] < 39  # ran during the stream, not only after it
        assert worker.idle(2)
        assert runs[-1] == 39 and runs == sorted(runs) and len(runs) < 40  # debounced: not one run per edit
    finally:
        worker.stop()


def test_pages_re_rendered_for_another_entrys_edit_reuse_their_kept_fragments(project, monkeypatch) -> None:  # noqa: F811
    """The resident site keeps each entry's markdown and highlighted code with its parse result:
    a title edit re-renders the entry pages that link to it without markdown for them."""
    import yaml

    import generator.site.markdown as md

    site = ResidentSite(project["entries"], project["site"], CONFIG, project["templates"], jobs=1)
    site.patch()
    texts: list[str] = []
    monkeypatch.setattr(md, "block", lambda text, _real=md.block: texts.append(text) or _real(text))
    CHANGES["entry title (shown on linked pages)"](project)
    edited = project["entries"] / "distributed/nccl-hang.yaml"
    changed = site.patch([str(edited)]).changed
    others = [p for p in changed if p.endswith("/index.html") and p.count("/") == 1 and not p.startswith(("nccl-hang/", "tags/", "categories/"))]
    assert others, changed  # pages of other entries that show the title were rendered again
    e = yaml.safe_load(edited.read_text())
    own = [e["mechanism"], *e["fix"]["steps"], *(f["a"] for f in e.get("faq", [])), e["fix"]["verify"]["expect"]]
    assert sorted(texts) == sorted(own)  # only the edited entry's own text went through markdown, once


def test_an_index_update_gives_way_while_a_patch_runs(project) -> None:  # noqa: F811
    """The search index's update waits at its checkpoints while a patch runs (the edit's pages come
    first, not half the interpreter), and finishes once no patch runs."""
    site = ResidentSite(project["entries"], project["site"], CONFIG, project["templates"], jobs=1)
    site.patch()
    CHANGES["entry title (shown on linked pages)"](project)
    patched = site.patch([str(project["entries"] / "distributed/nccl-hang.yaml")])
    done: list[tuple[str, ...]] = []
    site._quiet.clear()  # as while a patch runs
    worker = threading.Thread(target=lambda: done.append(site.update_index(patched)))
    worker.start()
    worker.join(0.5)
    assert worker.is_alive() and not done  # waiting at a checkpoint
    site._quiet.set()
    worker.join(30)
    assert done and any(p.startswith("search/") for p in done[0])  # the new title's words
    write_tree(project["entries"], {"memory/host-oom.yaml": "title: [\n"})  # a patch that fails lets it run too
    try:
        site.patch([str(project["entries"] / "memory/host-oom.yaml")])
        raise AssertionError("a broken entry patched")
    except Exception as e:
        assert type(e).__name__ == "BuildFailed"
    assert site._quiet.is_set()
