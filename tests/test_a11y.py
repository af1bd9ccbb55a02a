"""axe-core in real Chromium: zero violations on every kind of page a reader lands on, in the light
and the dark theme, on a laptop and on a phone. axe comes bundled in the axe-playwright-python
test extra; the pages' CSP forbids inline scripts, so only the axe context bypasses it.
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib import resources

import pytest

from browser import serve_dir

# page → (path, what to wait for before checking: the parts a script fills in)
PAGES = {
    "home": ("", None),
    "entry": ("cuda-out-of-memory/", ".tablist"),
    "entry with versions": ("ddp-oom-during-allreduce/", ".tablist"),
    "tag": ("tags/oom/", None),
    "tags index": ("tags/", None),
    "category": ("categories/memory/", None),
    "search": ("search/?q=%23oom+allocator", "#search-results > li"),
    "diagnose": ("diagnose/", "#diagnose-ui:not([hidden])"),
}


@pytest.fixture(scope="module")
def axe_page(browser) -> Iterator[object]:
    """One page with axe-core injected before every document's own scripts."""
    try:
        source = (resources.files("axe_playwright_python") / "axe.min.js").read_text(encoding="utf-8")
    except ModuleNotFoundError:
        pytest.fail("axe-core is missing: `pip install -e .[test]` installs axe-playwright-python, which bundles it")
    ctx = browser.new_context(bypass_csp=True, viewport={"width": 1280, "height": 900})
    ctx.add_init_script(script=source)
    yield ctx.new_page()
    ctx.close()


def violations(page, scheme: str) -> list[str]:
    page.emulate_media(color_scheme=scheme)
    result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [
        f"{scheme}: {v['id']} ({v['impact']}): {v['help']} at {', '.join(str(n['target']) for n in v['nodes'][:4])}"
        for v in result["violations"]
    ]


def check(page, url: str, ready: str | None) -> list[str]:
    page.goto(url)
    if ready:
        page.wait_for_selector(ready, state="attached")
    return violations(page, "light") + violations(page, "dark")


@pytest.mark.parametrize("name", list(PAGES))
def test_axe_reports_no_violations_in_light_and_dark(axe_page, site_url: str, name: str) -> None:
    path, ready = PAGES[name]
    axe_page.set_viewport_size({"width": 1280, "height": 900})
    assert check(axe_page, site_url + path, ready) == []


def test_axe_reports_no_violations_on_a_phone(axe_page, site_url: str) -> None:
    axe_page.set_viewport_size({"width": 375, "height": 740})
    try:
        assert check(axe_page, site_url + PAGES["entry"][0], ".tablist") == []
    finally:
        axe_page.set_viewport_size({"width": 1280, "height": 900})


def test_axe_finds_a_planted_problem(axe_page, tmp_path) -> None:
    """The harness works: a page with known violations (an image without alt text, text below 4.5:1
    contrast) is reported, in each theme."""
    (tmp_path / "index.html").write_text(
        '<!DOCTYPE html><html lang="en"><title>x</title><main><h1>x</h1><img src="x.png"><p style="color:#999;background:#fff">faint</p></main>'
    )
    server, url = serve_dir(tmp_path)
    try:
        found = check(axe_page, url, None)
    finally:
        server.shutdown()
        server.server_close()
    assert {v.split(" (")[0] for v in found} == {"light: image-alt", "light: color-contrast", "dark: image-alt", "dark: color-contrast"}
