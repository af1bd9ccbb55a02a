"""Hostile entries in real headless Chromium (issue 9): with every vector of test_hardening_build.py
in every field, no page opens a dialog, logs a CSP violation or holds a content-made script or
event handler, on the entry page, the lists, the search results and the diagnosis results."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote_plus

import pytest

from browser import serve_dir, wait_until
from conftest import write_tree
from test_hardening_build import FP_LITERAL, TEXT_BLOCK, VECTORS, hostile_files

# Counts, in the live DOM, of what content must never add.
AUDIT = """() => ({
  inline: [...document.querySelectorAll('script')].filter(s => !s.src && s.type !== 'application/ld+json').length,
  handlers: [...document.querySelectorAll('*')].flatMap(e => [...e.attributes].filter(a => a.name.startsWith('on')).map(a => e.tagName + ' ' + a.name)),
  links: [...document.querySelectorAll('[href],[src],[action],[formaction]')]
    .map(e => e.getAttribute('href') || e.getAttribute('src') || e.getAttribute('action') || e.getAttribute('formaction'))
    .filter(u => /^\\s*(javascript|data|vbscript):/i.test(u)),
  active: document.querySelectorAll('main iframe, main object, main embed, main svg, main math, main img, main style, base').length,
  pwned: document.title.includes('pwned') || window.__pwned === true,
})"""


@pytest.fixture(scope="module")
def hostile_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from generator.site.build import build
    from generator.core.config import Config

    lines = [v for v in VECTORS if "\n" not in v]
    root = write_tree(tmp_path_factory.mktemp("hostile") / "entries", hostile_files(lines, TEXT_BLOCK))
    out = root.parent / "site"
    build(root, out, Config(base_url="http://127.0.0.1/"))
    server, url = serve_dir(out)
    yield url
    server.shutdown()
    server.server_close()


class Tab:
    def __init__(self, browser: object) -> None:
        self.ctx = browser.new_context()  # type: ignore[attr-defined]
        self.page = self.ctx.new_page()
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def check(self) -> None:
        found = self.page.evaluate(AUDIT)
        assert found == {"inline": 0, "handlers": [], "links": [], "active": 0, "pwned": False}, (self.page.url, found)
        assert self.dialogs == [] and self.errors == [], (self.page.url, self.dialogs, self.errors)


@pytest.fixture
def tab(browser: object) -> Iterator[Tab]:
    t = Tab(browser)
    yield t
    t.ctx.close()


@pytest.mark.parametrize("path", ["evil-0/", "evil-2/", "evil-30/", "", "tags/oom/", "categories/memory/", "tags/"])
def test_hostile_pages_run_nothing(tab: Tab, hostile_url: str, path: str) -> None:
    tab.page.goto(hostile_url + path)
    tab.page.wait_for_load_state("load")
    tab.check()


def test_hostile_entry_text_is_visible_as_text(tab: Tab, hostile_url: str) -> None:
    tab.page.goto(hostile_url + "evil-1/")
    assert tab.page.locator("h1").first.inner_text() == VECTORS[1]
    assert "{{ 7*7 }}" in tab.page.locator("main").inner_text()
    tab.check()


def test_search_results_for_hostile_titles_run_nothing(tab: Tab, hostile_url: str) -> None:
    tab.page.goto(hostile_url + "search/?q=" + quote_plus("script alert onerror"))
    tab.page.wait_for_selector('#search-results[aria-busy="false"]', state="attached")
    assert tab.page.locator(".result-link").count() >= 1  # hostile titles and excerpts are on show
    tab.page.fill("#search-q", '<img src=x onerror="window.__pwned=true">')
    tab.page.press("#search-q", "Enter")
    tab.page.wait_for_selector('#search-results[aria-busy="false"]', state="attached")
    tab.check()


def test_diagnosis_of_a_hostile_fingerprint_runs_nothing(tab: Tab, hostile_url: str) -> None:
    tab.page.goto(hostile_url + "diagnose/")
    wait_until(tab.page, "document.querySelector('#diagnose-form').dataset.ready === 'true'")
    log = f"<script>window.__pwned=true</script>\n{VECTORS[1]} {FP_LITERAL}\n<img src=x onerror=alert(1)>\n"
    tab.page.fill("#log-text", log)
    tab.page.click("#diagnose-form button[type=submit]")
    wait_until(tab.page, "Number(document.querySelector('#diagnose-form').dataset.done || 0) >= 1")
    results = tab.page.locator("#diagnose-results").inner_text()
    assert VECTORS[1] in results  # a hostile entry's title and the log line, both as text
    tab.check()
