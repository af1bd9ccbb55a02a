"""`failpedia build`: complete, deterministic, atomic, valid HTML, every link resolves, all escaped."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import html5lib
import pytest
import yaml

from conftest import sample_files, valid_entry, write_tree
from generator.site.render import TEMPLATES
from sitecheck import broken_links, parse_page, tree_digest


@pytest.fixture
def built(run_cli, sample: Path, tmp_path: Path) -> Path:
    out = tmp_path / "site"
    code, out_text, err = run_cli("build", "--entries", str(sample), "--out", str(out), "--base-url", "https://example.org/docs/")
    assert code == 0, err
    assert f"into {out}/" in out_text
    return out


def test_every_page_kind_exists(built: Path) -> None:
    for rel in [
        "index.html", "gpu-oom/index.html", "ddp-oom/index.html", "nccl-hang/index.html",
        "tags/index.html", "tags/oom/index.html", "tags/ddp/index.html", "categories/index.html",
        "categories/memory/index.html", "404.html", "sitemap.xml", "robots.txt", "feed.xml",
        "api/entries.json", "api/fingerprints.json", "schema/entry.json", "static/style.css", "static/pygments.css",
    ]:
        assert (built / rel).is_file(), rel


def test_entry_page_reads_in_debugging_order(built: Path) -> None:
    html = (built / "ddp-oom/index.html").read_text()
    order = ["Quick answer", "Recommended fix", 'id="confirm"', 'id="symptoms"', 'id="observe"', 'id="mechanism"',
             'id="affected"', 'id="fix"', 'id="prevention"', 'id="faq"', 'id="related"', 'id="references"']
    positions = [html.index(s) for s in order]
    assert positions == sorted(positions)
    assert 'href="../tags/ddp/"' in html and 'href="../categories/distributed/"' in html
    assert 'href="../gpu-oom/"' in html  # related
    assert '<link rel="canonical" href="https://example.org/docs/ddp-oom/">' in html


def test_backlinks_often_causes_and_similar(built: Path) -> None:
    nccl = (built / "nccl-hang/index.html").read_text()
    assert 'id="caused-by"' in nccl and 'href="../gpu-oom/"' in nccl
    tag = (built / "tags/oom/index.html").read_text()
    assert tag.count('class="card"') == 2


def test_every_internal_link_resolves(built: Path) -> None:
    assert broken_links(built) == []


def test_every_page_is_html5_without_duplicate_ids(built: Path) -> None:
    parser = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False)
    for page in sorted(built.rglob("*.html")):
        parser.parse(page.read_bytes())  # raises on any parse error
        ids = parse_page(page).ids
        dupes = [i for i, n in Counter(ids).items() if n > 1]
        assert not dupes, (page, dupes)


def test_xml_and_json_outputs_parse(built: Path) -> None:
    ET.parse(built / "sitemap.xml")
    feed = ET.parse(built / "feed.xml").getroot()
    assert feed.tag == "{http://www.w3.org/2005/Atom}feed"
    assert len(feed.findall("{http://www.w3.org/2005/Atom}entry")) == 3
    locs = [e.text for e in ET.parse(built / "sitemap.xml").getroot().iter("{http://www.sitemaps.org/schemas/sitemap/0.9}loc")]
    assert "https://example.org/docs/ddp-oom/" in locs
    data = json.loads((built / "api/entries.json").read_text())
    assert [e["slug"] for e in data["entries"]] == ["ddp-oom", "gpu-oom", "nccl-hang"]
    for e in data["entries"]:  # the index names each entry's full data, one file per entry
        full = json.loads((built / e["data"]).read_text())
        assert full["slug"] == e["slug"] and full["title"] == e["title"] and full["tags"] == e["tags"] and "mechanism" in full
    schema = json.loads((built / "schema/entry.json").read_text())
    assert schema["additionalProperties"] is False and "symptoms" in schema["required"]


def test_builds_are_byte_identical(run_cli, sample: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert run_cli("build", "--entries", str(sample), "--out", str(a))[0] == 0
    assert run_cli("build", "--entries", str(sample), "--out", str(b))[0] == 0
    assert tree_digest(a) == tree_digest(b)


def test_failed_build_leaves_previous_site_untouched(run_cli, sample: Path, built: Path, tmp_path: Path) -> None:
    before = tree_digest(built)
    (sample / "memory/gpu-oom.yaml").write_text("title: [broken\n")
    code, out, err = run_cli("build", "--entries", str(sample), "--out", str(built))
    assert code == 1
    assert "gpu-oom.yaml:2:1: error: YAML syntax error" in out
    assert "was left as it was" in err
    assert tree_digest(built) == before
    assert sorted(p.name for p in built.parent.iterdir() if p.name.startswith(".site-")) == []


TEMPLATE_ERRORS = {  # a broken template → the problem reported at its file and line
    "syntax": ("tag.html", "{% block main %}", "{% block main %}{% if %}", "tag.html:3:1: error: template error: Expected an expression"),
    "undefined attribute": ("tag.html", "{{ tag.description }}", "{{ tag.descriptio }}",
                            "tag.html:6:1: error: template error: 'generator.core.schema.Tag object' has no attribute 'descriptio' (rendering tags/"),
    "missing import": ("tag.html", '"_macros.html"', '"_macro.html"', "tag.html:2:1: error: template error: no template named '_macro.html'"),
    "syntax in an imported template": ("_macros.html", "{% macro entry_list", "{% macro entry_list(", "_macros.html:14:1: error: template error:"),
}


@pytest.mark.parametrize("cache", [True, False], ids=["with cache", "cold"])
@pytest.mark.parametrize("error", list(TEMPLATE_ERRORS))
def test_a_broken_template_is_reported_at_its_line_and_leaves_the_site(run_cli, sample: Path, built: Path, tmp_path: Path, error: str, cache: bool) -> None:
    name, old, new, expected = TEMPLATE_ERRORS[error]
    templates = tmp_path / "templates"
    shutil.copytree(TEMPLATES, templates)
    assert old in (templates / name).read_text()
    (templates / name).write_text((templates / name).read_text().replace(old, new, 1))
    before = tree_digest(built)
    code, out, err = run_cli("build", "--entries", str(sample), "--out", str(built), "--templates", str(templates),
                             *(["--cache-dir", str(tmp_path / "cache")] if cache else ["--no-cache"]))
    assert code == 1 and "Traceback" not in out + err
    assert f"{templates / expected}" in out, out
    assert "was left as it was" in err and tree_digest(built) == before


def test_an_unusable_cache_or_templates_folder_is_an_error_not_a_traceback(run_cli, sample: Path, built: Path, tmp_path: Path) -> None:
    before = tree_digest(built)
    (tmp_path / "a-file").write_text("x")
    for flags, message in [
        (["--cache-dir", str(tmp_path / "a-file")], f"cannot keep the build cache in {tmp_path / 'a-file'}: it is not a folder"),
        (["--cache-dir", str(tmp_path / "a-file/cache")], f"cannot keep the build cache in {tmp_path / 'a-file/cache'}: Not a directory"),
        (["--templates", str(tmp_path / "missing")], f"{tmp_path / 'missing'}: templates folder not found; pass --templates DIR"),
    ]:
        code, out, err = run_cli("build", "--entries", str(sample), "--out", str(built), *flags)
        assert code == 3 and message in err  # a setup error and "Traceback" not in err
        assert tree_digest(built) == before


def test_a_template_problem_survives_the_trip_from_a_render_worker() -> None:
    import pickle

    from generator.core.problems import BuildFailed, Problem

    problem = Problem("templates/tag.html", 6, 0, "template error: 'x' is undefined (rendering tags/oom/index.html)")
    again = pickle.loads(pickle.dumps(BuildFailed([problem])))
    assert isinstance(again, BuildFailed) and again.problems == [problem]


def test_successful_build_replaces_old_files(run_cli, sample: Path, built: Path) -> None:
    (built / "stale.html").write_text("old")
    shutil.rmtree(sample / "memory")
    (sample / "distributed/ddp-oom.yaml").write_text(yaml.safe_dump(valid_entry(title="DDP OOM", related=["nccl-hang"])))
    assert (sample / "distributed/ddp-oom.yaml").exists()
    # nccl-hang relates back to ddp-oom only; remove gpu-oom references elsewhere
    code = 0
    from generator.surfaces.cli import main
    code = main(["build", "--entries", str(sample), "--out", str(built)])
    assert code == 0
    assert not (built / "stale.html").exists() and not (built / "gpu-oom").exists()


HOSTILE = '<script>alert(1)</script><img src=x onerror=alert(2)> {{ 7*7 }} {% raw %}'


def test_content_is_escaped_everywhere(run_cli, tmp_path: Path) -> None:
    files = sample_files()
    evil = valid_entry(
        title="Evil " + HOSTILE,
        summary="Summary " + HOSTILE,
        mechanism="[click](javascript:alert(1)) [data](data:text/html,x) <b onclick=x>raw</b> ![img](https://x/y.png)\n\n" + HOSTILE,
        faq=[{"q": "Q " + HOSTILE, "a": "A " + HOSTILE + " [ok](https://example.org/)"}],
        references=[{"title": "Ref " + HOSTILE, "url": "https://example.org/?q=<script>"}],
    )
    files["memory/gpu-oom.yaml"] = {**evil, "related": ["ddp-oom"], "often_causes": ["nccl-hang"]}
    root = write_tree(tmp_path / "entries", files)
    out = tmp_path / "site"
    code, _, err = run_cli("build", "--entries", str(root), "--out", str(out))
    assert code == 0, err
    for page in out.rglob("*"):
        if page.suffix not in (".html", ".xml", ".json"):
            continue
        text = page.read_text()
        assert "<script>alert" not in text and "<img" not in text, page
        assert "49" not in text.replace("490", ""), page  # template syntax is never evaluated
        if page.suffix == ".json":
            assert "<" not in text and json.loads(text)
        if page.suffix == ".xml":
            ET.parse(page)
        if page.suffix == ".html":
            parsed = parse_page(page)
            assert not parsed.handlers, (page, parsed.handlers)
            # scripts come from files; the one inline script element is JSON-LD data, which never runs
            assert all(s.get("src", "").endswith(".js") or s.get("type") == "application/ld+json" for s in parsed.scripts), page
            assert not any(h.lower().startswith(("javascript:", "data:")) for _, h in parsed.links), page
    html = (out / "gpu-oom/index.html").read_text()
    assert "{{ 7*7 }}" in html and "{% raw %}" in html
    assert '<a href="https://example.org/">ok</a>' in html
    assert "<img" not in html


def test_sub_path_links_are_relative(built: Path) -> None:
    html = (built / "tags/oom/index.html").read_text()
    assert 'href="../../static/style.css"' in html and 'href="../../gpu-oom/"' in html
    assert 'href="/docs/tags/"' in (built / "404.html").read_text()


def test_schema_command_prints_json(run_cli) -> None:
    code, out, _ = run_cli("schema")
    assert code == 0 and json.loads(out)["title"] == "Entry"


def test_long_lists_span_pages_with_working_links(sample: Path, tmp_path: Path) -> None:
    from generator.site.build import build
    from generator.core.config import Config

    out = tmp_path / "site"
    build(sample, out, Config(base_url="https://example.org/", page_size=1), search=False)
    first, second = (out / "tags/oom/index.html").read_text(), (out / "tags/oom/page/2/index.html").read_text()
    assert first.count('class="card"') == second.count('class="card"') == 1
    assert "2 entries" in first and "page 1 of 2" in first and 'rel="next" href="../../tags/oom/page/2/"' in first
    assert "page 2 of 2" in second and 'rel="prev" href="../../../../tags/oom/"' in second and 'rel="next"' not in second
    assert "<title>#oom (page 2 of 2)" in second and 'href="https://example.org/tags/oom/page/2/"' in second
    home = (out / "index.html").read_text()
    assert "Most common failures" in home and home.count('class="card"') == 3 and 'href="categories/"' in home  # not paged
    assert broken_links(out) == []
    locs = [e.text for e in ET.parse(out / "sitemap.xml").getroot().iter("{http://www.sitemaps.org/schemas/sitemap/0.9}loc")]
    assert "https://example.org/categories/distributed/page/2/" in locs


@pytest.mark.parametrize("value", ['"50"', "0", "1001", "true", "2.5"])
def test_page_size_setting_is_checked(tmp_path: Path, value: str) -> None:
    from generator.core.config import load_config
    from generator.core.problems import FailpediaError

    (tmp_path / "pyproject.toml").write_text(f"[tool.failpedia]\npage_size = {value}\n")
    with pytest.raises(FailpediaError, match="page_size must be a whole number from 1 to 1000"):
        load_config(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.failpedia]\npage_size = 20\n")
    assert load_config(tmp_path).page_size == 20


def test_no_search_build_leaves_out_the_search_index(sample: Path) -> None:
    """`--no-search` leaves out the files under search/ (the search page stays); entry pages are
    the same either way (they carry nothing for the index)."""
    from generator.site.build import load_catalog
    from generator.core.config import Config
    from generator.site.pages import plan_pages, search_pages
    from generator.site.render import Renderer

    catalog, config = load_catalog(sample), Config()
    renderer = Renderer(config)
    htmls = []
    for search in (True, False):
        plan = plan_pages(catalog, config, {}, search)
        pages = plan.pages
        assert not any(p.path.startswith("search/") and p.path != "search/index.html" for p in pages)  # the index is planned apart
        assert any(p.path == "search/meta.json" for p in search_pages(catalog)) and any(p.path == "search/index.html" for p in pages)
        htmls.append(renderer.render(next(p for p in pages if p.path == "ddp-oom/index.html"), plan.reader))
    assert htmls[0] == htmls[1] and "Quick answer" in htmls[0]


def test_once_renders_a_macro_once_per_value_of_its_arguments(tmp_path: Path) -> None:
    """`once(macro, *args)` (the cards of the listing pages): equal arguments, compared by value,
    render once; arguments that differ, even where Python calls them equal (1 and True, a str
    and the Markup of the same text), render apart; an unhashable one renders every time; the
    store empties when full."""
    from markupsafe import Markup

    from generator.core.config import Config
    from generator.site.render import Once, Renderer

    (tmp_path / "m.html").write_text("{% macro show(x, root) %}{{ tick() }}<{{ root }}{{ x.title ~ x.tags | join(',') if x is mapping else x }}>{% endmacro %}\n"
                                     "{% macro all(xs, root) %}{% for x in xs %}{{ once(show, x, root) }}{% endfor %}{% endmacro %}\n")
    renderer = Renderer(Config(), tmp_path)
    ticks: list[int] = []
    renderer.env.globals["tick"] = lambda: ticks.append(1) or ""
    show_all = renderer.env.get_template("m.html").module.all  # type: ignore[attr-defined]

    def render(xs: list[object], root: str = "../") -> str:
        ticks.clear()
        return str(show_all(xs, root))

    card = {"title": "A", "tags": ["x", "y"]}
    assert render([card, dict(card), {"title": "A", "tags": ["x", "y"]}]) == "<../Ax,y>" * 3
    assert len(ticks) == 1  # one render for three equal cards
    assert render([card], "../../") == "<../../Ax,y>" and len(ticks) == 1  # another depth
    assert render([{"title": "A", "tags": ["x", "z"]}]) == "<../Ax,z>" and len(ticks) == 1  # a changed field
    assert render([1, True, 1.0, "<b>", Markup("<b>")]) == "<../1><../True><../1.0><../&lt;b&gt;><../<b>>"
    assert len(ticks) == 5
    assert render([{"s"}, {"s"}]) == "<../{&#39;s&#39;}>" * 2 and len(ticks) == 2  # a set: no fixed value, rendered each time
    once = renderer.env.globals["once"]
    assert isinstance(once, Once)
    once.LIMIT = 3
    render(["a", "b", "c", "d"])
    assert render(["a", "d"]) == "<../a><../d>" and len(ticks) == 1  # emptied at 'd': 'a' renders again, 'd' is kept
