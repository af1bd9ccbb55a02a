"""`failpedia serve` in a subprocess: pages, rebuilds, reload events (SSE), the error overlay, port
conflicts and Ctrl-C; then the overlay in real Chromium."""

from __future__ import annotations

import http.client
import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from browser import REPO
from conftest import sample_files, valid_entry, write_tree

TIMEOUT = 10.0


class Serve:
    """A `failpedia serve` subprocess with its output collected line by line."""

    def __init__(self, project: Path, *args: str, sigint: Any = None) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "generator", "serve", *args],
            cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            # the disposition of SIGINT the server starts with (None: this process's)
            preexec_fn=None if sigint is None else lambda: signal.signal(signal.SIGINT, sigint),
        )
        self.lines: list[str] = []
        self._new = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.url = ""

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._new:
                self.lines.append(line.rstrip("\n"))
                self._new.notify_all()

    def wait_for(self, text: str, start: int = 0) -> str:
        deadline = time.monotonic() + TIMEOUT
        with self._new:
            while True:
                for line in self.lines[start:]:
                    if text in line:
                        return line
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise AssertionError(f"no line with {text!r} in the output: {self.lines}")
                self._new.wait(left)

    def started(self) -> "Serve":
        line = self.wait_for("serving .cache/serve/site/ at ")
        self.url = line.split(" at ", 1)[1].split()[0]
        return self

    def stop(self, interrupt: bool = True) -> tuple[int, str]:
        """Ctrl-C (unless it should exit by itself), then its exit code and standard error."""
        if interrupt and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            code = self.proc.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        finally:
            assert self.proc.stdout is not None and self.proc.stderr is not None
            err = self.proc.stderr.read()
            self.proc.stderr.close()
            self._reader.join(TIMEOUT)
            self.proc.stdout.close()
        return code, err


class Events:
    """A Server-Sent Events client: every event lands in a queue as (name, data)."""

    def __init__(self, url: str) -> None:
        host, port = url.removeprefix("http://").rstrip("/").rsplit(":", 1)
        self.conn = http.client.HTTPConnection(host, int(port), timeout=30)
        self.conn.request("GET", "/__failpedia/events")
        self.resp = self.conn.getresponse()
        assert self.resp.status == 200
        assert self.resp.getheader("Content-Type", "").startswith("text/event-stream")
        self.queue: queue.Queue[tuple[str, dict[str, Any]]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        name, data = "message", ""
        try:
            for raw in self.resp:
                line = raw.decode().rstrip("\r\n")
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: "):
                    data = line[6:]
                elif not line and data:
                    self.queue.put((name, json.loads(data)))
                    name, data = "message", ""
        except (OSError, ValueError):
            pass

    def next(self) -> tuple[str, dict[str, Any]]:
        try:
            return self.queue.get(timeout=TIMEOUT)
        except queue.Empty:
            raise AssertionError("no event arrived") from None

    def close(self) -> None:
        self.conn.close()


def fetch(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def entry_text(**changes: Any) -> str:
    return yaml.safe_dump(valid_entry(**changes), sort_keys=False)


GOOD = dict(title="GPU OOM", related=["ddp-oom"], often_causes=["nccl-hang"])


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """Entries and a copy of the templates: the server watches both, and nobody else edits these."""
    write_tree(tmp_path / "entries", sample_files())
    shutil.copytree(REPO / "templates", tmp_path / "templates")
    return tmp_path


def test_serve_rebuilds_reloads_and_reports_errors(project: Path) -> None:
    entry = project / "entries/memory/gpu-oom.yaml"
    server = Serve(project, "--port", "0", "--templates", "templates").started()
    try:
        # The page is served with the reload script; the built file on disk does not have it.
        status, html = fetch(server.url + "gpu-oom/")
        assert status == 200 and "<title>GPU OOM · Failpedia</title>" in html
        assert html.rstrip().endswith('<script src="/__failpedia/reload.js" defer></script>\n</body>\n</html>'.rstrip())
        assert "__failpedia" not in (project / ".cache/serve/site/gpu-oom/index.html").read_text()
        assert not (project / "site").exists()  # the deployed folder is never written with localhost URLs
        status, js = fetch(server.url + "__failpedia/reload.js")
        assert status == 200 and "EventSource" in js
        assert fetch(server.url + "no-such-page/")[0] == 404

        events = Events(server.url)
        name, hello = events.next()
        assert name == "hello" and hello["ok"] is True
        first = hello["build"]

        # An editor's swap file is not a change; an edit of one entry rebuilds once.
        (entry.parent / ".gpu-oom.yaml.swp").write_bytes(b"swap")
        mark = len(server.lines)
        entry.write_text(entry_text(**GOOD, mechanism="Memory runs out on the second step.\n"))
        name, data = events.next()
        assert name == "reload" and data["build"] == first + 1
        assert "gpu-oom/index.html" in data["changed"] and "nccl-hang/index.html" not in data["changed"], data
        assert "Memory runs out on the second step." in fetch(server.url + "gpu-oom/")[1]
        server.wait_for("page", mark)

        # A broken entry: the server lives on, the last good build stays, errors go to both ends.
        mark = len(server.lines)
        entry.write_text("title: GPU OOM\nsummary: [unclosed\n")
        name, data = events.next()
        assert name == "failed" and data["errors"] == 1
        status, body = fetch(server.url + "__failpedia/errors.json")
        state = json.loads(body)
        assert state["ok"] is False and state["errors"] == 1
        (problem,) = state["problems"]
        assert problem["text"].startswith("entries/memory/gpu-oom.yaml:3:1: error: YAML syntax error")
        assert (problem["path"], problem["line"], problem["col"]) == ("entries/memory/gpu-oom.yaml", 3, 1)
        assert server.wait_for("entries/memory/gpu-oom.yaml:3:1: error: YAML syntax error", mark)
        assert "BUILD FAILED with 1 error; still serving the last good build" in server.wait_for("BUILD FAILED", mark)
        assert "Memory runs out on the second step." in fetch(server.url + "gpu-oom/")[1]

        # Fixed: a reload event, no errors left.
        entry.write_text(entry_text(**GOOD))
        name, data = events.next()
        assert name == "reload" and "gpu-oom/index.html" in data["changed"]
        assert json.loads(fetch(server.url + "__failpedia/errors.json")[1])["ok"] is True
        assert "Memory runs out on the second step." not in fetch(server.url + "gpu-oom/")[1]

        # Templates are watched too, static files included.
        css = project / "templates/static/style.css"
        css.write_text(css.read_text() + "\n.served-fresh { color: red; }\n")
        name, data = events.next()
        assert name == "reload" and data["changed"] == ["static/style.css"]
        assert ".served-fresh" in fetch(server.url + "static/style.css")[1]

        # The port is taken now: a second server says so and suggests --port.
        port = server.url.rstrip("/").rsplit(":", 1)[1]
        code, err = Serve(project, "--port", port, "--templates", "templates").stop(interrupt=False)
        assert code == 1
        assert f"failpedia: error: port {port} on 127.0.0.1 is already in use" in err and "--port" in err
        assert "Traceback" not in err
        events.close()
    finally:
        code, err = server.stop()
    assert code == 0, err
    assert "Traceback" not in err and server.lines[-1] == "stopped"


def test_serve_before_the_first_good_build(project: Path) -> None:
    from generator.core.config import Config
    from generator.surfaces.serve import DevServer

    entry = project / "entries/memory/gpu-oom.yaml"
    entry.write_text("title: [\n")
    log: list[str] = []
    server = DevServer(project / "entries", project / "site", Config(), "127.0.0.1", 0, log.append, project / "templates")
    try:
        state = server.start()
        assert not state.ok and not (project / "site").exists()
        assert log[-1] == "initial build: BUILD FAILED with 1 error; nothing to serve until it builds (the browser shows them too)"
        status, html = fetch(server.url)
        assert status == 503 and '<script src="/__failpedia/reload.js" defer></script>' in html
        events = Events(server.url)
        assert events.next()[0] == "hello"
        entry.write_text(entry_text(**GOOD))
        name, data = events.next()
        assert name == "reload" and "index.html" in data["changed"]
        assert fetch(server.url)[0] == 200
        events.close()
    finally:
        server.stop()


def test_serve_refuses_an_output_folder_inside_the_watched_ones(run_cli, project: Path) -> None:
    code, _, err = run_cli("serve", "--port", "0", "--entries", str(project / "entries"), "--out", str(project / "entries/site"))
    assert code == 2 and "overlaps the watched folder" in err


def test_serve_rejects_a_bad_port(run_cli, project: Path) -> None:
    code, _, err = run_cli("serve", "--port", "70000", "--entries", str(project / "entries"))
    assert code == 2 and "--port 70000 is not a port number" in err


def test_port_in_use_message(project: Path) -> None:
    from generator.core.config import Config
    from generator.core.problems import FailpediaError
    from generator.surfaces.serve import DevServer

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(FailpediaError, match=rf"port {port} on 127.0.0.1 is already in use .*choose another with --port, e.g. --port {port + 1}"):
            DevServer(project / "entries", project / "site", Config(), "127.0.0.1", port, print)


def test_browser_reloads_and_shows_the_error_overlay(browser: Any, project: Path) -> None:
    from playwright.sync_api import expect

    from generator.core.config import Config
    from generator.surfaces.serve import DevServer

    entry = project / "entries/memory/gpu-oom.yaml"
    server = DevServer(project / "entries", project / "site", Config(), "127.0.0.1", 0, lambda _: None, project / "templates")
    server.start()
    page = browser.new_page()
    errors: list[str] = []
    # Console errors, CSP violations among them.
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        # The script asks for errors.json once its event stream says hello: from then on it hears every build.
        with page.expect_response(lambda r: r.url.endswith("/__failpedia/errors.json")):
            page.goto(server.url + "gpu-oom/")
        expect(page).to_have_title(re.compile(r"^GPU OOM · "))
        assert page.locator("#failpedia-build-errors").count() == 0

        # An edit of another entry's text, which this page does not show, leaves it alone ...
        page.evaluate("window.failpediaMarker = 1")
        other = project / "entries/distributed/nccl-hang.yaml"
        other.write_text(other.read_text().replace("Memory is allocated on top of the peak.", "NCCL waits for the slow rank."))
        deadline = time.monotonic() + TIMEOUT
        while json.loads(fetch(server.url + "__failpedia/errors.json")[1])["build"] < 2:
            assert time.monotonic() < deadline, "no rebuild"
            time.sleep(0.05)
        time.sleep(0.3)  # time for the event to reach the page
        assert page.evaluate("window.failpediaMarker") == 1

        # ... an edit of this page reloads it.
        entry.write_text(entry_text(**{**GOOD, "title": "GPU OOM, edited"}))
        expect(page).to_have_title(re.compile(r"^GPU OOM, edited · "), timeout=TIMEOUT * 1000)
        assert page.evaluate("window.failpediaMarker") is None

        # Broken: the overlay lists file:line:col, over the last good page.
        entry.write_text("title: GPU OOM\nsummary: [unclosed\n")
        overlay = page.locator("#failpedia-build-errors")
        overlay.wait_for(state="visible", timeout=TIMEOUT * 1000)
        assert overlay.get_attribute("role") == "alert"
        assert overlay.evaluate("e => getComputedStyle(e).position") == "fixed"  # CSSOM styles pass the CSP
        assert "Build failed: 1 error" in overlay.inner_text()
        assert page.locator(".failpedia-problem").first.inner_text().startswith(f"{project}/entries/memory/gpu-oom.yaml:3:1: error: YAML syntax error")
        assert page.title().startswith("GPU OOM, edited")

        # Fixed: the overlay goes and the page shows the fixed entry.
        entry.write_text(entry_text(**GOOD))
        overlay.wait_for(state="detached", timeout=TIMEOUT * 1000)
        expect(page).to_have_title(re.compile(r"^GPU OOM · "), timeout=TIMEOUT * 1000)
        assert errors == []  # the CSP lets the same-origin script and its CSSOM styles through
    finally:
        page.close()
        server.stop()


def test_only_entry_and_template_changes_trigger_a_rebuild(project: Path) -> None:
    from watchfiles import Change

    from generator.core.config import Config
    from generator.surfaces.serve import DevServer

    server = DevServer(project / "entries", project / "site", Config(), "127.0.0.1", 0, print, project / "templates")
    try:
        entries = project / "entries"
        (entries / "memory/sedAb12Cd").write_text("temporary")
        (entries / "newcat").mkdir()
        relevant = {
            "memory/gpu-oom.yaml": True, "tags.yaml": True, "memory/x.yml": True, "newcat": True, "gone-category": True,
            "memory/.gpu-oom.yaml.swp": False, "memory/gpu-oom.yaml~": False, "memory/.#gpu-oom.yaml": False,
            "memory/sedAb12Cd": False, "memory/deleted-temp": False, "memory/notes.txt": False,
        }
        for rel, expected in relevant.items():
            assert server.relevant(Change.modified, str(entries / rel)) is expected, rel
        assert server.relevant(Change.modified, str(project / "templates/static/style.css"))
        assert server.relevant(Change.modified, str(project / "templates/entry.html"))
    finally:
        server.stop()


def test_the_search_index_follows_each_edit(project: Path, tmp_path: Path) -> None:
    """The first build writes the search index with the site; after an edit the new entry is
    served at once and the index that finds it follows in the background."""
    from generator.site.build import load_catalog
    from generator.search.query import SearchIndex, parse_query, search

    site = project / ".cache/serve/site"
    server = Serve(project, "--port", "0", "--templates", "templates").started()
    try:
        server.wait_for("initial build")
        assert json.loads(fetch(server.url + "search/meta.json")[1])["docs"] == 3
        mark = len(server.lines)
        write_tree(project / "entries", {"memory/host-oom.yaml": valid_entry(title="Host OOM zebrafish", related=["gpu-oom"])})
        server.wait_for("built in", mark)
        assert fetch(server.url + "host-oom/")[0] == 200
        server.wait_for("search index updated", mark)
        meta = json.loads(fetch(server.url + "search/meta.json")[1])
        assert meta["docs"] == 4
        shard = json.loads(fetch(server.url + "search/v/z.json")[1])
        assert "zebrafish" in shard["t"]
    finally:
        code, err = server.stop()
    assert code == 0 and "Traceback" not in err, err
    # what the server wrote is what a build of those entries writes
    catalog = load_catalog(project / "entries")
    index = SearchIndex.build(catalog)
    assert [h.slug for h in search(index, parse_query("zebrafish", catalog, index.synonyms))] == ["host-oom"]
    assert json.loads((site / "search/doc/" / f"{index.slugs.index('host-oom')}.json").read_text())["slug"] == "host-oom"


def test_a_template_error_is_reported_at_its_line_and_the_last_good_site_stays(project: Path, tmp_path: Path) -> None:
    from generator.core.config import Config
    from generator.surfaces.serve import Builder

    builder = Builder(project / "entries", project / "site", Config(base_url="http://127.0.0.1/"), project / "templates")
    try:
        assert builder.rebuild().ok
        good = (project / "site/tags/oom/index.html").read_bytes()
        tag = project / "templates/tag.html"
        tag.write_text(tag.read_text().replace("{{ tag.description }}", "{{ tag.descriptio }}"))
        state = builder.rebuild()
        assert not state.ok and len(state.problems) == 1
        assert str(state.problems[0]).startswith(
            f"{tag}:6:1: error: template error: 'generator.core.schema.Tag object' has no attribute 'descriptio' (rendering tags/")
        assert (project / "site/tags/oom/index.html").read_bytes() == good
    finally:
        builder.stop()


@pytest.mark.parametrize("sigint", [signal.SIG_IGN, signal.SIG_DFL])
def test_ctrl_c_stops_it_even_when_started_with_sigint_ignored(project: Path, sigint: Any) -> None:
    """A script's background job (and CI run from one) starts with SIGINT ignored, and Python
    then installs no handler: serve installs its own, so SIGINT stops it either way."""
    server = Serve(project, "--port", "0", "--templates", "templates", sigint=sigint).started()
    code, err = server.stop()
    assert code == 0 and "Traceback" not in err
    assert server.lines[-1] == "stopped"
