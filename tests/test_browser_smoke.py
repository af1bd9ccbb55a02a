"""The built site in real headless Chromium: dark mode, copy buttons, tabs, no console errors."""

from __future__ import annotations

from browser import *  # noqa: F403


def test_entry_page_has_no_console_errors_and_enhancements_work(browser, site_url: str) -> None:
    ctx = browser.new_context(color_scheme="light", permissions=["clipboard-read", "clipboard-write"])
    page = ctx.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(site_url + "ddp-oom-during-allreduce/")
    assert page.title().startswith("DDP OOM during allreduce")
    # tabs: one panel visible at a time
    tabs = page.locator("[role=tab]")
    assert tabs.count() >= 2
    tabs.nth(1).click()
    assert page.locator(".code-example:not([hidden])").count() == 1
    # copy button puts the code on the clipboard
    page.locator(".code-example:not([hidden]) button.copy").first.click()
    wait_until(page, "[...document.querySelectorAll('button.copy')].some(b => b.textContent === 'Copied')")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.strip() == page.locator(".code-example:not([hidden]) pre").first.inner_text().strip()
    # dark-mode toggle persists across a reload, without JS flash
    page.locator(".theme-toggle").click()
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    page.reload()
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert bg == "rgb(15, 18, 22)"
    assert errors == []
    ctx.close()


def test_reading_needs_no_javascript(browser, site_url: str) -> None:
    ctx = browser.new_context(java_script_enabled=False)
    page = ctx.new_page()
    page.goto(site_url + "ddp-oom-during-allreduce/")
    assert page.locator(".code-example").count() >= 2
    assert all(page.locator(".code-example").nth(i).is_visible() for i in range(page.locator(".code-example").count()))
    page.goto(site_url + "tags/")
    page.locator("a.chip", has_text="#oom").first.click()
    assert "/tags/oom/" in page.url
    ctx.close()
