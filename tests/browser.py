"""Real-browser fixtures: the built site served on 127.0.0.1 and Debian's headless Chromium.

The fixtures (`real_site`, `site_url`, `browser`) are available to every test through conftest.py;
`from browser import *` brings the helpers (`wait_until`, `serve_dir`).
"""

from __future__ import annotations

import functools
import http.server
import shutil
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
REPO = Path(__file__).resolve().parent.parent

# Fixtures are registered once, in conftest.py (a session fixture imported into two modules would
# start two Playwright instances); `from browser import *` brings only the helpers.
__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "QuietServer", "REPO", "engine_page", "serve_dir", "wait_until"]


def wait_until(page: object, expression: str, timeout: float = 60) -> None:
    """Poll an expression from Python: the pages' CSP forbids the eval behind wait_for_function."""
    import time

    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):  # type: ignore[attr-defined]
        assert time.monotonic() < deadline, f"timed out waiting for {expression}"
        time.sleep(0.05)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


def engine_page(browser: object, site_url: str, real_site: Path, *scripts: str) -> tuple[object, object, dict]:
    """A browser context, a page of the built site with engine scripts loaded and the site's
    matcher definition in `window.__spec`, and that definition: the parity tests call both engines."""
    import json

    spec = json.loads((real_site / "api/fingerprints.json").read_text())
    ctx = browser.new_context()  # type: ignore[attr-defined]
    page = ctx.new_page()
    page.goto(site_url + "diagnose/")
    for script in scripts:  # in the order the worker imports them
        page.add_script_tag(url=site_url + "static/" + script)
    page.evaluate("spec => { window.__spec = spec; }", spec)
    return ctx, page, spec


class QuietServer(http.server.ThreadingHTTPServer):
    """A test's static server: a browser closing a connection early (a navigation away, a
    cancelled fetch) is no error; anything else is printed as the standard server does."""

    def handle_error(self, request, client_address) -> None:  # noqa: ANN001
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


def serve_dir(root: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    """Serve `root` on a free port of 127.0.0.1; returns the server and its base URL."""
    handler = functools.partial(_Quiet, directory=str(root))
    server = QuietServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


@pytest.fixture(scope="session")
def real_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real entries/ built once per test session (search index included)."""
    from generator.site.build import build
    from generator.core.config import load_config

    out = tmp_path_factory.mktemp("real") / "site"
    build(REPO / "entries", out, load_config(REPO).with_base_url("http://127.0.0.1/"))
    return out


@pytest.fixture(scope="session")
def site_url(real_site: Path) -> Iterator[str]:
    server, url = serve_dir(real_site)
    yield url
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    playwright = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.fail("chromium is not installed: run `make test`, which installs Debian's chromium package")
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()
