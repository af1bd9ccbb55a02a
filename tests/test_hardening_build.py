"""Hostile content through the whole renderer (issue 9): every page, parsed the way a browser parses
it, holds no script, event handler or link scheme that came from an entry; JSON, JSON-LD, the feed
and the sitemap keep the text inert; template syntax shows literally."""

from __future__ import annotations

import json
import re
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import html5lib
import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from conftest import CATEGORIES, TAGS, sample_files, valid_entry
from generator.core.catalog import build_catalog
from generator.core.config import Config
from generator.site.pages import _json, plan_pages, search_pages
from generator.core.problems import BuildFailed
from generator.core.read import Source
from generator.site.render import TEMPLATES, Renderer

CONFIG = Config(base_url="https://example.org/docs/", repo_url="https://github.com/failpedia/failpedia")
ALLOWED_SCHEMES = {"http", "https", "mailto"}
URL_ATTRIBUTES = {"href", "src", "action", "formaction", "poster", "data", "cite", "background", "ping", "srcset", "manifest", "icon"}
# Elements no entry text may add: their count on a page must not change when the text turns hostile.
ACTIVE = {"script", "style", "iframe", "frame", "frameset", "object", "embed", "applet", "svg", "math", "base", "img", "video",
          "audio", "source", "track", "template", "form", "input", "textarea", "button", "select", "meta", "link", "noscript", "portal"}

VECTORS = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "<svg onload=alert(1)><script>alert(2)</script></svg>",
    "<math><mi xlink:href=\"javascript:alert(1)\">x</mi></math>",
    "<a href=\"javascript:alert(1)\">raw</a>",
    "<iframe src=\"https://evil.example/\"></iframe>",
    "<meta http-equiv=\"refresh\" content=\"0;url=https://evil.example/\">",
    "<base href=\"https://evil.example/\">",
    "<style>body{display:none}</style>",
    "<form action=\"https://evil.example/\"><input name=x></form>",
    "[a](javascript:alert(1))",
    "[b](JaVaScRiPt:alert(1))",
    "[c](jav&#x61;script:alert(1))",
    "[d](&#106;avascript&colon;alert(1))",
    "[e](java\tscript:alert(1))",
    "[f](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[g](vbscript:msgbox(1))",
    "[h]( javascript:alert(1) )",
    "[i](<javascript:alert(1)>)",
    "<javascript:alert(1)>",
    "<vbscript:msgbox(1)>",
    "<data:text/html,x>",
    "![j](javascript:alert(1))",
    "![k](data:image/svg+xml,<svg onload=alert(1)>)",
    "[l](//evil.example/x)",
    "[m](\\\\evil.example\\x)",
    "[n](/\\evil.example/x)",
    "&lt;script&gt;alert(1)&lt;/script&gt; &#60;script&#62;",
    "{{ 7*7 }} {% if true %}yes{% endif %} {# c #} ${7*7} <%= 7*7 %>",
    "</script><script>alert(1)</script><!-- ]]> <![CDATA[x]]>",
    "\" onmouseover=\"alert(1)\" x=\"",
    "' onfocus='alert(1)' autofocus='",
]
TEXT_BLOCK = "\n\n".join(VECTORS) + "\n\n[ok](https://example.org/)\n\n[r][ref]\n\n[ref]: javascript:alert(1)\n"
FP_LITERAL = "XYZQ hostile"


def to_bytes(data: Any) -> bytes:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=10**6).encode()


def hostile_entry(line: str, text: str) -> dict[str, Any]:
    """Every string field of an entry filled with hostile text (one-line fields with `line`)."""
    return valid_entry(
        title=line,
        summary=(line + " " * 20)[:600],
        fingerprints=[{"pattern": "XYZQ hostile", "examples": [f"{line} {FP_LITERAL}"[:300]]}],
        symptoms=[{"signal": line, "why": text}],
        observe=[text],
        mechanism=text + "\n```python\n" + text + "\n```\n```weird-lang\n" + text + "\n```\n",
        affected=[text],
        confirm=[text],
        fix={
            "summary": line,
            "steps": [text],
            "code": [{"stack": "shell", "language": "bash", "code": text, "caption": line}],
            "verify": {"language": "text", "code": text[:5_000], "expect": text},
        },
        prevention=[text],
        faq=[{"q": line, "a": text}],
        versions=[{"package": "torch", "introduced": "2.0", "note": line}],
        dead_ends=[{"attempt": line, "why": text}],
        references=[{"title": line, "url": "https://example.org/?q=<script>alert(1)</script>&x=\"'"}],
    )


def render_site(files: dict[str, Any]) -> dict[str, str]:
    """The site's files (path → text), built in memory: read.py's Source without a folder."""
    entries = tuple(
        (f"entries/{name}", name.split("/")[0], name.split("/")[1].removesuffix(".yaml"), to_bytes(data))
        for name, data in sorted(files.items()) if "/" in name
    )
    source = Source(Path("entries"), "entries", ("entries/tags.yaml", to_bytes(files["tags.yaml"])),
                    ("entries/categories.yaml", to_bytes(files["categories.yaml"])), entries, ())
    catalog = build_catalog(source)
    renderer = Renderer(CONFIG)
    plan = plan_pages(catalog, CONFIG, {})
    return {page.path: renderer.render(page, plan.reader) for page in plan.pages + search_pages(catalog)}


def hostile_files(line_vectors: list[str], text: str) -> dict[str, Any]:
    files = sample_files()
    tags = {"tags": [{**t, "description": t["description"] + " " + line_vectors[0]} for t in TAGS["tags"]]}
    cats = {"categories": [{**c, "title": line_vectors[-1][:300], "description": c["description"] + " " + line_vectors[0]}
                           for c in CATEGORIES["categories"]]}
    files.update({"tags.yaml": tags, "categories.yaml": cats})
    for i, line in enumerate(line_vectors):
        files[f"memory/evil-{i}.yaml"] = {**hostile_entry(line, text), "related": ["gpu-oom"], "tags": ["oom", "memory"]}
    return files


def benign_files(count: int) -> dict[str, Any]:
    """The same site with plain text: the same pages, the same slugs."""
    return hostile_files(["Plain text"] * count, "Plain *text* with `code` and [a link](https://example.org/).")


# --- Inspecting a page the way a browser does ----------------------------------------------------


def scheme_of(url: str) -> str | None:
    cleaned = re.sub(r"[\x00-\x20\x7f]", "", url)
    m = re.match(r"([a-zA-Z][a-zA-Z0-9+.-]*):", cleaned)
    return m.group(1).lower() if m else None


def html_problems(path: str, text: str) -> tuple[list[str], Counter[str]]:
    """Everything wrong with one HTML page, and the count of its active elements."""
    doc = html5lib.parse(text, treebuilder="etree", namespaceHTMLElements=False)
    problems: list[str] = []
    active: Counter[str] = Counter()
    for el in doc.iter():
        if not isinstance(el.tag, str):
            continue
        tag = el.tag.rsplit("}", 1)[-1].lower()
        if tag in ACTIVE:
            active[tag] += 1
        for name, value in el.attrib.items():
            local = name.rsplit("}", 1)[-1].lower()
            if local.startswith("on"):
                problems.append(f"{path}: <{tag}> has the event handler {local}={value!r}")
            if local in URL_ATTRIBUTES or local.endswith("href"):
                for url in (value.split(",") if local == "srcset" else [value]):
                    scheme = scheme_of(url.strip())
                    if scheme is not None and scheme not in ALLOWED_SCHEMES:
                        problems.append(f"{path}: <{tag} {local}={value!r}> uses the scheme {scheme}:")
                    # Browsers read '\\' as '/' in http(s) URLs: '\\\\evil.example' is '//evil.example'.
                    where = urljoin(CONFIG.base_url + path, url.strip().replace("\\", "/"))
                    if urlsplit(where).hostname == "evil.example":
                        problems.append(f"{path}: <{tag} {local}={value!r}> leads to another site")
        if tag == "script":
            if el.get("type") == "application/ld+json":
                body = el.text or ""
                try:
                    json.loads(body)
                except ValueError:
                    problems.append(f"{path}: JSON-LD does not parse: {body[:80]!r}")
            elif el.get("src") is None or (el.text or "").strip():
                problems.append(f"{path}: inline script {(el.text or '')[:80]!r}")
            elif scheme_of(el.get("src", "")) is not None or "static/" not in el.get("src", ""):
                problems.append(f"{path}: script from {el.get('src')!r}")
    return problems, active


def audit(site: dict[str, str], baseline: dict[str, str] | None = None) -> list[str]:
    problems: list[str] = []
    for path, text in sorted(site.items()):
        if path.endswith(".html"):
            found, active = html_problems(path, text)
            problems += found
            if baseline is not None and path in baseline:
                _, expected = html_problems(path, baseline[path])
                if active != expected:
                    problems.append(f"{path}: active elements {dict(active - expected)} came from content")
        elif path.endswith(".json"):
            if "<" in text or ">" in text:
                problems.append(f"{path}: '<' or '>' left unescaped")
            json.loads(text)
        elif path.endswith(".xml"):
            ET.fromstring(text.encode())
    return problems


# --- The tests ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hostile_site() -> dict[str, str]:
    lines = [v for v in VECTORS if "\n" not in v]
    return render_site(hostile_files(lines, TEXT_BLOCK))


@pytest.fixture(scope="module")
def benign_site() -> dict[str, str]:
    return render_site(benign_files(len([v for v in VECTORS if "\n" not in v])))


def _pages(site: dict[str, str]) -> set[str]:
    """The site's files but the search index's shards, whose names follow the words in it."""
    return {p for p in site if not p.startswith(("search/v/", "search/p/"))}


def test_hostile_text_in_every_field_renders_inert(hostile_site: dict[str, str], benign_site: dict[str, str]) -> None:
    assert "evil-0/index.html" in hostile_site and _pages(hostile_site) == _pages(benign_site)
    assert audit(hostile_site, benign_site) == []


def test_hostile_text_shows_literally(hostile_site: dict[str, str]) -> None:
    page = hostile_site["evil-0/index.html"]
    doc = html5lib.parse(page, treebuilder="etree", namespaceHTMLElements=False)
    text = "".join(doc.itertext())
    assert "<script>alert(1)</script>" in text  # shown as text, not run
    assert "{{ 7*7 }} {% if true %}yes{% endif %} {# c #} ${7*7} <%= 7*7 %>" in text  # never evaluated
    assert "[a](javascript:alert(1))" in text  # a refused link stays visible as text
    assert f"<script>alert(1)</script> {FP_LITERAL}" in text  # fingerprint examples
    links = [a.get("href") or "" for a in doc.iter("a")]
    assert "https://example.org/" in links  # allowed links still work
    assert not [h for h in links if urlsplit(urljoin("https://example.org/docs/evil-0/", h.replace("\\", "/"))).hostname == "evil.example"]


def test_code_blocks_escape_and_unknown_fence_languages_are_plain(hostile_site: dict[str, str]) -> None:
    page = hostile_site["evil-0/index.html"]
    assert 'class="language-weird-lang"' in page
    assert '<code class="language-bash">' in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


@pytest.mark.parametrize("language, code", [
    ("yaml", "`" * 10_000),              # quadratic in Pygments' YAML lexer when highlighted
    ("bash", ("'" + "$(" * 5000) * 2),
    ("python", '"""' + "\\" * 9_000),
    ("json", "[" * 10_000),
    ("toml", '"' * 10_000),
])
def test_highlighting_hostile_code_is_quick(language: str, code: str) -> None:
    from generator.site.markdown import block, code_block

    started = time.perf_counter()
    html = code_block(code, language) + block(f"```{language}\n{code}\n```\n")
    assert time.perf_counter() - started < 2
    assert "<script" not in html


def test_json_outputs_keep_hostile_text_exact_and_inert(hostile_site: dict[str, str]) -> None:
    entries = json.loads(hostile_site["api/entries.json"])["entries"]
    by_slug = {e["slug"]: e for e in entries}
    assert by_slug["evil-0"]["title"] == VECTORS[0]
    full = json.loads(hostile_site[by_slug["evil-0"]["data"]])
    assert full["title"] == VECTORS[0] and full["mechanism"].startswith(TEXT_BLOCK)
    spec = json.loads(hostile_site["api/fingerprints.json"])
    assert spec["entries"]["evil-0"]["title"] == VECTORS[0]
    for path, text in hostile_site.items():
        if path.endswith(".json"):
            assert "<" not in text and ">" not in text, path


def test_json_helper_cannot_close_a_script_element() -> None:
    value = {"x": "</script><script>alert(1)</script><!-- -->", "y": "]]>&amp;"}
    text = _json(value)
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == value


def test_json_ld_cannot_close_its_script_element(hostile_site: dict[str, str]) -> None:
    page = hostile_site["evil-0/index.html"]
    blocks = re.findall(r'<script type="application/ld\+json">(.*?)</script>', page, re.S)
    if not blocks:
        pytest.skip("no <script type=\"application/ld+json\"> on entry pages yet (JSON-LD not added)")
    for body in blocks:
        assert "</" not in body and "<!--" not in body and "<" not in body
        data = json.loads(body)
        assert VECTORS[0] in json.dumps(data, ensure_ascii=False)  # the title, exact, as data
    doc = html5lib.parse(page, treebuilder="etree", namespaceHTMLElements=False)
    scripts = [s for s in doc.iter("script") if s.get("type") == "application/ld+json"]
    assert len(scripts) == len(blocks)


def test_feed_and_sitemap_hold_hostile_text_as_text(hostile_site: dict[str, str]) -> None:
    feed = ET.fromstring(hostile_site["feed.xml"].encode())
    ns = "{http://www.w3.org/2005/Atom}"
    titles = {e.findtext(f"{ns}title") for e in feed.iter(f"{ns}entry")}
    assert VECTORS[0] in titles and VECTORS[2] in titles
    for child in feed.iter():
        assert not child.tag.endswith(("script", "svg")), child.tag
    sitemap = ET.fromstring(hostile_site["sitemap.xml"].encode())
    locs = [e.text or "" for e in sitemap.iter("{http://www.sitemaps.org/schemas/sitemap/0.9}loc")]
    assert locs and all(loc.startswith("https://example.org/docs/") for loc in locs)


def test_every_page_ships_a_strict_content_security_policy(hostile_site: dict[str, str]) -> None:
    for path, text in hostile_site.items():
        if not path.endswith(".html"):
            continue
        doc = html5lib.parse(text, treebuilder="etree", namespaceHTMLElements=False)
        csp = [m.get("content", "") for m in doc.iter("meta") if (m.get("http-equiv") or "").lower() == "content-security-policy"]
        assert len(csp) == 1, path
        rules = {part.split()[0]: part.split()[1:] for part in csp[0].split(";") if part.strip()}
        assert rules["default-src"] == ["'self'"], path
        assert "'unsafe-inline'" not in rules["script-src"] and "'unsafe-eval'" not in rules["script-src"], path
        assert rules["object-src"] == ["'none'"] and rules["base-uri"] == ["'none'"], path
        head = text.split("</head>")[0]
        assert head.index("Content-Security-Policy") < head.index("<script"), path  # in force before any script


def test_static_scripts_never_build_html_from_strings() -> None:
    """Log text, search results and entry data reach the DOM through textContent only."""
    sinks = re.compile(r"\.innerHTML\b|\.outerHTML\b|insertAdjacentHTML|document\.write|\beval\s*\(|new Function\s*\(|"
                       r"set(?:Timeout|Interval)\s*\(\s*['\"]|\.srcdoc\b|createContextualFragment")
    scripts = sorted((TEMPLATES / "static").glob("*.js")) + sorted((TEMPLATES / "serve").glob("*.js"))
    assert scripts
    for script in scripts:
        for n, line in enumerate(script.read_text(encoding="utf-8").splitlines(), 1):
            assert not sinks.search(line), f"{script.name}:{n}: {line.strip()}"


# --- Property: arbitrary text in any field renders inert ----------------------------------------

SAFE_CHARS = st.characters(blacklist_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"), blacklist_characters="\u115f\u1160\u3164\uffa0\u034f\u17b4\u17b5")
PIECES = st.one_of(st.text(SAFE_CHARS, max_size=12), st.sampled_from([v for v in VECTORS if "\n" not in v]), st.sampled_from(["<", ">", "&", "\"", "'", "`", "[", "](", ")", "javascript:", "<svg", " on", "=", "*"]))
LINE = st.lists(PIECES, min_size=1, max_size=6).map(lambda parts: " ".join(parts).strip()[:300])


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much], derandomize=True)
@given(st.lists(LINE, min_size=2, max_size=2), st.lists(LINE, min_size=1, max_size=5))
def test_any_text_renders_without_scripts_handlers_or_bad_links(lines: list[str], paragraphs: list[str]) -> None:
    assume(all(lines) and not any(re.search(r"\bTODO\b|\bFIXME\b|<fill in", x) for x in lines + paragraphs))
    text = "\n\n".join(paragraphs)
    files = hostile_files(lines, text)
    try:
        site = render_site(files)
    except BuildFailed as e:  # the text may be invalid (e.g. a too-short summary): a clean refusal
        assert all(p.message for p in e.problems)
        return
    pages = {p: t for p, t in site.items() if p.startswith(("evil-", "tags/oom/", "categories/memory/", "api/", "feed"))}
    assert audit(pages) == []


def test_every_site_section_is_a_reserved_slug(hostile_site: dict[str, str]) -> None:
    """An entry whose slug names a section would take over its folder (or be refused as a double
    write): every top-level folder the site has must be reserved."""
    from generator.core.catalog import RESERVED_SLUGS

    slugs = {e["slug"] for e in json.loads(hostile_site["api/entries.json"])["entries"]}
    sections = {path.split("/")[0] for path in hostile_site if "/" in path} - slugs
    assert {"tags", "categories", "api"} <= sections  # the folders pages.py writes
    missing = (sections | {"static"}) - RESERVED_SLUGS  # and those build.py adds
    assert not missing, missing
