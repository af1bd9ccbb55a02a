"""What a reader meets first, on a desktop and on a phone (real headless Chromium): the home page
leads with search and "paste your error", lists are ordered by relevance, every page kind has the
same width and header, and on a phone code, tables, the fix and search results stay usable."""

from __future__ import annotations

import pytest

from browser import *  # noqa: F403

PHONE = {"viewport": {"width": 375, "height": 740}, "is_mobile": True, "has_touch": True}


def _slugs(page, selector: str = "main .card h3 a") -> list[str]:
    return [h.rstrip("/").split("/")[-1] for h in page.eval_on_selector_all(selector, "as => as.map(a => a.getAttribute('href'))")]


def test_home_leads_with_search_and_diagnose_then_the_most_common_failures(browser, site_url: str) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(site_url)
    y = lambda sel: page.locator(sel).first.bounding_box()["y"]  # noqa: E731
    assert y("#home-q") < y("a.button[href='diagnose/']") < y("#h-common") < y("#h-categories")
    assert y("a.button[href='diagnose/']") < 900  # both in the first screen
    common = _slugs(page)
    assert len(common) == 8 and "cuda-out-of-memory" in common[:2] and "nccl-watchdog-timeout" in common[:2]
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height < 3000, height  # not a wall of every entry
    page.fill("#home-q", "nccl timeout")
    page.press("#home-q", "Enter")
    page.wait_for_url("**/search/?q=nccl+timeout")
    page.close()


def test_tag_and_category_lists_put_the_entry_about_it_first(browser, site_url: str) -> None:
    page = browser.new_page()
    page.goto(site_url + "tags/oom/")
    oom = _slugs(page)
    assert oom[0] == "cuda-out-of-memory" and oom.index("cublas-execution-failed") > 4
    page.goto(site_url + "tags/nccl/")
    assert _slugs(page)[0] == "nccl-watchdog-timeout"
    page.goto(site_url + "categories/memory/")
    assert _slugs(page)[0] == "cuda-out-of-memory"
    page.close()


def test_one_width_and_header_on_every_page_kind_and_the_placeholder_fits(browser, site_url: str) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    boxes = {}
    for path in ("", "tags/oom/", "cuda-out-of-memory/", "diagnose/", "search/", "categories/"):
        page.goto(site_url + path)
        boxes[path] = (page.locator("main").bounding_box()["width"], page.locator(".brand").bounding_box()["x"])
        fits = page.evaluate("""() => {
            const i = document.querySelector('#site-q'); if (!i) return true; const s = getComputedStyle(i);
            const c = document.createElement('canvas').getContext('2d'); c.font = s.font;
            return c.measureText(i.placeholder).width + parseFloat(s.paddingLeft) + parseFloat(s.paddingRight) <= i.clientWidth; }""")
        assert fits, path
    assert len(set(boxes.values())) == 1, boxes
    page.close()


def test_entry_on_a_phone_tabs_copy_button_fix_link_and_wide_tables(browser, site_url: str) -> None:
    ctx = browser.new_context(**PHONE)
    page = ctx.new_page()
    page.goto(site_url + "cuda-out-of-memory/")
    tops = page.eval_on_selector_all(".tablist", "ls => ls.map(l => new Set([...l.querySelectorAll('[role=tab]')].map(t => t.offsetTop)).size)")
    assert tops and all(n == 1 for n in tops), tops  # every tab bar is one row
    overlaps = page.eval_on_selector_all(".code-wrap", """ws => ws.filter(w => {
        const b = w.querySelector('.copy').getBoundingClientRect(), p = w.querySelector('pre').getBoundingClientRect();
        return b.bottom > p.top + 1 && b.top < p.bottom; }).length""")
    assert overlaps == 0
    jump = page.locator(".answer a[href='#fix']")
    jump.click()
    assert abs(page.evaluate("document.getElementById('fix').getBoundingClientRect().top")) < 40
    assert page.evaluate("document.documentElement.scrollWidth") == 375
    ctx.close()


def test_a_wide_table_on_a_phone_says_it_scrolls(browser, site_url: str, real_site) -> None:
    ctx = browser.new_context(**PHONE)
    page = ctx.new_page()
    with_tables = sorted(p.parent.name for p in real_site.glob("*/index.html") if 'class="table-scroll"' in p.read_text())
    assert with_tables
    seen = 0
    for slug in with_tables:
        page.goto(site_url + slug + "/")
        wide = page.evaluate("[...document.querySelectorAll('.table-scroll')].filter(b => b.scrollWidth > b.clientWidth + 1).length")
        assert page.locator(".scroll-hint").count() == wide, slug
        seen += wide
    assert seen >= 1
    ctx.close()


def test_search_on_a_phone_shows_results_before_facets_and_no_keyboard_tips(browser, site_url: str) -> None:
    ctx = browser.new_context(**PHONE)
    page = ctx.new_page()
    page.goto(site_url + "search/?q=%23ddp+%23oom")
    wait_until(page, "document.querySelectorAll('#search-results li').length > 0")
    results = page.locator("#search-results").bounding_box()["y"]
    facets = page.locator("#search-facets").bounding_box()["y"]
    assert results < facets
    assert not page.locator(".kbd-tips").is_visible()
    ctx.close()


def test_the_404_page_suggests_the_entry_meant(browser, real_site) -> None:
    """A mistyped address (/cuda-oom/) offers CUDA out of memory, served the way a static host
    serves 404.html for every missing path."""
    import functools
    import http.server
    import threading

    class NotFound(http.server.SimpleHTTPRequestHandler):
        def send_error(self, code, message=None, explain=None):  # noqa: ANN001
            if code != 404:
                return super().send_error(code, message, explain)
            body = (real_site / "404.html").read_bytes()
            self.send_response(404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):  # noqa: ANN002
            pass

    server = QuietServer(("127.0.0.1", 0), functools.partial(NotFound, directory=str(real_site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        page = browser.new_page()
        page.goto(f"http://127.0.0.1:{server.server_address[1]}/cuda-oom/")
        wait_until(page, "document.querySelectorAll('#not-found-suggest li').length > 0")
        assert page.locator("#not-found-suggest li a").first.inner_text() == "CUDA out of memory"
        assert page.locator(".search-for").get_attribute("href") == "/search/?q=cuda%20oom"
        page.close()
    finally:
        server.shutdown()
        server.server_close()


def test_a_long_identifier_in_a_card_title_wraps_at_its_underscores_on_a_phone(browser, site_url: str) -> None:
    ctx = browser.new_context(**PHONE)
    page = ctx.new_page()
    page.goto(site_url + "tags/oom/")
    link = page.locator("main .card h3 a[href$='cublas-execution-failed/']")
    # the characters before each line break of the rendered title: a space or an underscore, never a letter
    cuts = link.evaluate("""a => {
        const out = []; let prevTop = null, prev = "";
        const walker = document.createTreeWalker(a, NodeFilter.SHOW_TEXT);
        for (let n = walker.nextNode(); n; n = walker.nextNode()) {
          for (let i = 0; i < n.length; i++) {
            const r = document.createRange(); r.setStart(n, i); r.setEnd(n, i + 1);
            const rect = r.getClientRects()[0]; if (!rect) continue;
            if (prevTop !== null && rect.top > prevTop + 2) out.push(prev + n.data[i]);
            prevTop = rect.top; prev = n.data[i];
          }
        }
        return out; }""")
    assert cuts, "the title fits one line: nothing to check"
    assert all(c[0] in " _" or c[1] == " " for c in cuts), cuts
    ctx.close()


@pytest.mark.parametrize("width", [320, 360, 375])
def test_the_phone_header_is_two_rows_and_the_breadcrumb_one(browser, site_url: str, real_site, width: int) -> None:
    """On a phone the header keeps to two rows (brand, links and the theme toggle; then the search
    box, whose placeholder fits, beside Diagnose), and an entry's breadcrumb stays on one line,
    the entry's own name cut short with an ellipsis, however long its category and title."""
    import yaml

    longest = max((p for p in (REPO / "entries").glob("*/*.yaml")), key=lambda p: len(str(yaml.safe_load(p.read_text(encoding="utf-8"))["title"])))
    ctx = browser.new_context(viewport={"width": width, "height": 740}, is_mobile=True, has_touch=True)
    page = ctx.new_page()
    for path in ("", "tags/oom/", "search/", "diagnose/", longest.stem + "/"):
        page.goto(site_url + path)
        centers = sorted(page.eval_on_selector_all(".top > *:not([hidden])", "es => es.map(e => { const b = e.getBoundingClientRect(); return b.top + b.height / 2; })"))
        rows = [c for n, c in enumerate(centers) if n == 0 or c - centers[n - 1] > 12]
        assert len(rows) <= 2, (path, width, centers)
        search, diagnose = page.locator("#site-q"), page.locator(".top a[href$='diagnose/']")
        if search.count():
            assert abs(search.bounding_box()["y"] + search.bounding_box()["height"] / 2 - diagnose.bounding_box()["y"] - diagnose.bounding_box()["height"] / 2) < 12, path
            fits = page.evaluate("""() => { const i = document.querySelector('#site-q'), s = getComputedStyle(i);
                const c = document.createElement('canvas').getContext('2d'); c.font = s.font;
                return c.measureText(i.placeholder).width + parseFloat(s.paddingLeft) + parseFloat(s.paddingRight) <= i.clientWidth; }""")
            assert fits or width < 375, (path, width)  # narrower, the placeholder is cut: no hint of use fits beside Diagnose
        assert page.evaluate("document.documentElement.scrollWidth") == width, path
    crumbs = page.locator(".crumbs ol")
    line = float(page.evaluate("parseFloat(getComputedStyle(document.querySelector('.crumbs ol')).lineHeight) || 24"))
    assert crumbs.bounding_box()["height"] < 1.6 * line
    ctx.close()
