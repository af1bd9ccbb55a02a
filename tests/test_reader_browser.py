"""Issue 7 in real Chromium: screenshots for review, layouts at 1280 and 375 px, the sticky table
of contents, heading links, code colours per theme, no flash of the wrong theme, keyboard reach with
visible focus, no requests to other sites, and the print stylesheet.

Screenshots and a print PDF of an entry go to artifacts/screenshots/ (git-ignored) for a reviewer.
"""

from __future__ import annotations

from browser import REPO, wait_until

ART = REPO / "artifacts" / "screenshots"
ENTRY = "cuda-out-of-memory/"  # the biggest entry: every section, four stacks, a long FAQ
GREEN, MONOKAI_BLUE = "rgb(0, 128, 0)", "rgb(102, 217, 239)"  # `.k` in Pygments 'default' and 'monokai'


def test_screenshots_at_1280_and_375_px_in_light_and_dark(browser, site_url: str) -> None:
    ART.mkdir(parents=True, exist_ok=True)
    shots = []
    for width, height in [(1280, 800), (375, 740)]:
        for scheme in ["light", "dark"]:
            ctx = browser.new_context(viewport={"width": width, "height": height}, color_scheme=scheme)
            page = ctx.new_page()
            page.goto(site_url + ENTRY)
            assert page.evaluate("document.documentElement.scrollWidth") == width, (width, scheme)  # no sideways scroll
            for full in (False, True):
                path = ART / f"entry-{width}-{scheme}{'-full' if full else ''}.png"
                page.screenshot(path=str(path), full_page=full)
                shots.append(path)
            ctx.close()
    for path in shots:
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, path


def test_no_page_scrolls_sideways_on_a_phone(browser, site_url: str) -> None:
    ctx = browser.new_context(viewport={"width": 375, "height": 740})
    page = ctx.new_page()
    for path in ["", ENTRY, "nccl-watchdog-timeout/", "tags/", "tags/oom/", "categories/", "search/", "diagnose/", "404.html"]:
        page.goto(site_url + path)
        assert page.evaluate("document.documentElement.scrollWidth") == 375, path
    ctx.close()


def test_table_of_contents_sticks_beside_the_entry_on_wide_screens(browser, site_url: str) -> None:
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    page = ctx.new_page()
    page.goto(site_url + ENTRY)
    page.evaluate("document.getElementById('faq').scrollIntoView()")
    box = page.locator(".toc").bounding_box()
    text = page.locator("#faq").bounding_box()
    assert box and text and 0 <= box["y"] <= 40, box  # still in view, at the top
    assert box["x"] > text["x"] + text["width"], (box, text)  # beside the text, not over it
    wait_until(page, "document.querySelector('.toc a[aria-current]')?.getAttribute('href') === '#faq'", timeout=5)
    ctx.close()
    ctx = browser.new_context(viewport={"width": 375, "height": 740})
    page = ctx.new_page()
    page.goto(site_url + ENTRY)
    assert page.evaluate("getComputedStyle(document.querySelector('.toc')).position") == "static"
    page.evaluate("document.getElementById('faq').scrollIntoView()")
    box = page.locator(".toc").bounding_box()
    assert box and box["y"] + box["height"] < 0  # on a phone it scrolls away with the page
    ctx.close()


def test_headings_link_to_themselves(browser, site_url: str) -> None:
    ctx = browser.new_context()
    page = ctx.new_page()
    page.goto(site_url + ENTRY)
    missing = page.evaluate("""[...document.querySelectorAll('.entry h2[id], .entry h3[id]')]
        .filter(h => !['quick-answer', 'on-this-page'].includes(h.id))
        .filter(h => !h.querySelector(`a[href="#${h.id}"]`)).map(h => h.id)""")
    assert missing == []
    assert page.locator(".entry h2[id] > a").count() >= 10
    page.locator("#symptoms > a").click()
    assert page.url.endswith("#symptoms")
    ctx.close()


def _code_colours(page) -> list[str]:
    return page.evaluate("""(() => { const k = document.querySelector('.highlight .k');
        return [getComputedStyle(k).color, getComputedStyle(k.closest('pre')).backgroundColor]; })()""")


def test_code_colours_follow_the_theme_and_the_saved_choice(browser, site_url: str) -> None:
    light, dark = [GREEN, "rgb(246, 248, 250)"], [MONOKAI_BLUE, "rgb(22, 27, 34)"]
    cases = [("light", None, light), ("dark", None, dark), ("dark", "light", light), ("light", "dark", dark)]
    for scheme, saved, expected in cases:
        ctx = browser.new_context(color_scheme=scheme)
        if saved:
            ctx.add_init_script(f"localStorage.setItem('failpedia-theme', '{saved}')")
        page = ctx.new_page()
        page.goto(site_url + ENTRY)
        assert _code_colours(page) == expected, (scheme, saved)
        ctx.close()
    # the toggle switches page and code together, both ways
    ctx = browser.new_context(color_scheme="light")
    page = ctx.new_page()
    page.goto(site_url + ENTRY)
    page.locator(".theme-toggle").click()
    assert _code_colours(page) == dark and page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(15, 18, 22)"
    assert page.locator(".theme-toggle").get_attribute("aria-pressed") == "true"
    page.locator(".theme-toggle").click()
    assert _code_colours(page) == light and page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(255, 255, 255)"
    ctx.close()


def test_saved_theme_is_in_place_before_the_first_frame(browser, site_url: str) -> None:
    ctx = browser.new_context(color_scheme="light")
    ctx.add_init_script("""localStorage.setItem('failpedia-theme', 'dark');
        requestAnimationFrame(() => { window.__first = [document.documentElement.dataset.theme || '',
            getComputedStyle(document.documentElement).getPropertyValue('--bg').trim()]; });""")
    page = ctx.new_page()
    page.goto(site_url + ENTRY)
    wait_until(page, "window.__first !== undefined", timeout=5)
    assert page.evaluate("window.__first") == ["dark", "#0f1216"]
    ctx.close()


def test_every_control_is_reachable_by_keyboard_with_visible_focus(browser, site_url: str) -> None:
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    page = ctx.new_page()
    page.goto(site_url + ENTRY)
    # the skip link comes first, shows when focused, and moves on into the content
    page.keyboard.press("Tab")
    skip = page.evaluate("(() => { const e = document.activeElement; const r = e.getBoundingClientRect(); return [e.className, r.left >= 0 && r.top >= 0]; })()")
    assert skip == ["skip", True]
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.closest('main') !== null")
    # from the top, every focusable control is reached, each with a visible focus ring
    page.goto(site_url + ENTRY)
    expected = page.evaluate("""(() => {
        const all = [...document.querySelectorAll('a[href], button, input, textarea, select, [tabindex]')]
            .filter(e => e.tabIndex >= 0 && e.checkVisibility({visibilityProperty: true}));
        all.forEach((e, i) => { e.dataset.k = String(i); });
        return all.length; })()""")
    reached, unfocused = set(), []
    for _ in range(expected + 40):
        page.keyboard.press("Tab")
        k, ring = page.evaluate("""(() => { const e = document.activeElement; const s = getComputedStyle(e);
            return [e.dataset.k ?? null, s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2]; })()""")
        if k is None and reached:
            break
        if k is not None:
            reached.add(k)
            if not ring:
                unfocused.append(page.evaluate("document.activeElement.outerHTML.slice(0, 80)"))
    assert len(reached) == expected, (len(reached), expected)
    assert unfocused == []
    # tabs: arrows, Home and End move the selection and the focus; Enter works the theme toggle
    page.locator("[role=tab][aria-selected=true]").focus()
    page.keyboard.press("ArrowRight")
    assert page.evaluate("document.activeElement.getAttribute('aria-selected')") == "true"
    assert page.evaluate("document.activeElement.textContent") == "HF Trainer"
    page.keyboard.press("End")
    assert page.evaluate("document.activeElement.textContent") == "DeepSpeed"
    assert page.locator(".code-example[data-stack=deepspeed]").is_visible()
    page.keyboard.press("Home")
    assert page.evaluate("document.activeElement.textContent") == "PyTorch"
    page.locator(".theme-toggle").focus()
    page.keyboard.press("Enter")
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    ctx.close()


def test_only_the_site_itself_is_contacted_and_no_fonts_load(browser, site_url: str) -> None:
    ctx = browser.new_context()
    page = ctx.new_page()
    requests = []
    page.on("request", lambda r: requests.append((r.url, r.resource_type)))
    for path in ["", ENTRY, "tags/oom/", "search/?q=nccl", "diagnose/"]:
        page.goto(site_url + path, wait_until="networkidle")
        assert page.evaluate("document.fonts.size") == 0, path
    assert requests
    assert [u for u, _ in requests if not u.startswith((site_url, "data:", "blob:"))] == []
    assert [u for u, kind in requests if kind == "font"] == []
    ctx.close()


def test_an_entry_prints_as_a_clean_checklist(browser, site_url: str) -> None:
    ctx = browser.new_context(color_scheme="dark")
    page = ctx.new_page()
    page.emulate_media(media="print")
    page.goto(site_url + ENTRY)
    hidden = page.evaluate("""['.site-header', '.site-footer', '.toc', '.crumbs', '.tablist', '.copy', '.related']
        .filter(s => document.querySelector(s) && getComputedStyle(document.querySelector(s)).display !== 'none')""")
    assert hidden == []
    # every stack's code prints, under its own heading, in light colours whatever the screen theme
    assert page.locator(".code-example").count() == page.locator(".code-example:visible").count() == 4
    assert page.evaluate("[...document.querySelectorAll('.code-example h3')].every(h => h.getBoundingClientRect().width > 20)")
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(255, 255, 255)"
    assert _code_colours(page)[0] == GREEN
    # checkboxes before each confirm step and each fix step; references spell out their address
    boxes = page.evaluate("""[...document.querySelectorAll('.checklist > li, .steps > li')].map(li =>
        [getComputedStyle(li, '::before').borderTopWidth, getComputedStyle(li, '::after').borderTopWidth])""")
    assert boxes and all("2px" in pair for pair in boxes)
    assert "http" in page.evaluate("getComputedStyle(document.querySelector('.references a'), '::after').content")
    ART.mkdir(parents=True, exist_ok=True)
    page.pdf(path=str(ART / "entry-print.pdf"))
    assert (ART / "entry-print.pdf").read_bytes()[:5] == b"%PDF-"
    ctx.close()
