"""Serve: build the site, serve it on localhost, patch it when entries or templates change, and
reload the open browser tabs whose pages changed.

The site stays in memory between changes (resident.py): a change re-reads and re-validates the
files that changed, plans the site again, renders and writes only the pages whose inputs
changed, and then names those pages to the open tabs. The search index and the two files made
of every entry (api/entries.json, api/fingerprints.json) follow in a background thread, once the
edits pause (at most a few seconds behind them). A failed patch leaves the
last good site in place: the terminal prints the problems, and the browser shows them in an
overlay until they are fixed.

Served-only additions, never written into the site: every HTML response gets
`<script src="/__failpedia/reload.js">` before `</body>` (a same-origin file, so the pages' CSP
`script-src 'self'` allows it); `/__failpedia/events` is a Server-Sent Events stream (one event
per build); `/__failpedia/errors.json` is the last build's outcome.
"""

from __future__ import annotations

import errno
import gc
import http.server
import json
import secrets
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..site.build import collect_and_set_aside, rare_collections
from ..core.config import TEMPLATES, Config
from ..core.problems import BuildFailed, FailpediaError, Problem, SetupError, UsageError
from ..site.resident import Debounced, Patched, ResidentSite

if TYPE_CHECKING:
    import watchfiles

__all__ = ["BuildState", "Builder", "DevServer", "inject_reload"]

PREFIX = "/__failpedia/"
RELOAD_JS = Path(__file__).resolve().parent.parent.parent / "templates" / "serve" / "reload.js"
RELOAD_TAG = b'<script src="/__failpedia/reload.js" defer></script>'
KEEPALIVE = 15.0  # seconds between SSE comments, so proxies and browsers keep the stream open
ENTRY_SUFFIXES = (".yaml", ".yml")
INDEX_QUIET = 0.5  # seconds without an edit before the search index is remade ...
INDEX_MOST = 5.0  # ... or at most this long after the edit that first made it stale

Log = Callable[[str], None]


@dataclass(frozen=True)
class BuildState:
    """The outcome of one build attempt; `build` counts attempts from 1."""

    build: int = 0
    ok: bool = False
    problems: tuple[Problem, ...] = ()
    changed: tuple[str, ...] = ()  # site paths added, changed or removed by this (good) build
    seconds: float = 0.0
    warnings: int = 0

    def as_json(self, session: str) -> dict[str, object]:
        errors = [p for p in self.problems if p.severity == "error"]
        return {
            "session": session,
            "build": self.build,
            "ok": self.ok,
            "errors": len(errors),
            "problems": [
                {"path": p.path, "line": p.line, "col": p.col, "severity": p.severity, "message": p.message, "text": str(p)}
                for p in sorted(self.problems)
            ],
        }


def _unexpected(e: BaseException) -> Problem:
    """An error that is not a list of problems (a bad setting, a folder the build cannot write) as
    a Problem. Template errors arrive as problems already (render.py places them)."""
    if isinstance(e, FailpediaError):
        return Problem("build", 0, 0, str(e))
    return Problem("build", 0, 0, f"{type(e).__name__}: {e}")


class Builder:
    """Patches the resident site (resident.py) one change at a time, publishes each outcome to
    whoever waits on `changed`, and has the search index remade in the background."""

    def __init__(self, entries: Path, out: Path, config: Config, templates: Path = TEMPLATES, log: Log | None = None) -> None:
        self.out = out
        self.log = log or (lambda _message: None)
        self.site = ResidentSite(entries, out, config, templates)
        self.state = BuildState()
        self.changed = threading.Condition()
        self.stopping = False
        self._lock = threading.Lock()  # one patch at a time
        self.indexer: Debounced[Patched] = Debounced(self._index, quiet=INDEX_QUIET, most=INDEX_MOST)

    def rebuild(self, paths: Iterable[str] | None = None) -> BuildState:
        """Patch the site for a change of `paths` (the watcher's; None: of any file)."""
        with self._lock, rare_collections():  # no collection before the open tabs hear of the patch
            start = time.monotonic()
            try:
                patched = self.site.patch(paths)
            except BuildFailed as e:
                state = BuildState(self.state.build + 1, False, tuple(e.problems), (), time.monotonic() - start)
            except Exception as e:  # the server must survive any failed build; it reports it instead
                state = BuildState(self.state.build + 1, False, (_unexpected(e),), (), time.monotonic() - start)
            else:
                state = BuildState(self.state.build + 1, True, (), patched.changed, time.monotonic() - start, patched.warnings)
                if not patched.full:  # a full patch wrote the index with the site
                    self.indexer.ask(patched)
            with self.changed:
                self.state = state
                self.changed.notify_all()
            # What the site keeps lives long: collections need not scan it again and again (they
            # found nothing to free in it). A full collection comes once the search index is
            # updated (_index), or now after a failure (no index update follows it).
            _collect(full=not state.ok)
        return state

    def _index(self, patched: Patched) -> None:
        start = time.monotonic()
        try:
            files = self.site.update_index(patched)
        except Exception as e:  # the last index stays; the next edit tries again
            self.log(f"search index: update failed ({_unexpected(e).message}); the last index still answers")
            return
        self.log(f"search index updated in {time.monotonic() - start:.2f} s, {len(files)} file{'s' * (len(files) != 1)} changed")
        _collect(full=True)  # when no edit waits: what earlier patches left in reference cycles

    def stop(self) -> None:
        with self.changed:
            self.stopping = True
            self.changed.notify_all()
        self.indexer.stop()


def _collect(full: bool) -> None:
    """Keep the objects alive now out of later collections (gc.freeze), after a full collection
    whose freed memory goes back to the system (the search index's update frees a lot at once)."""
    if full:
        collect_and_set_aside()
    else:
        gc.freeze()


def inject_reload(html: bytes) -> bytes:
    """Add the reload script before the last `</body>` (or at the end)."""
    at = html.lower().rfind(b"</body>")
    if at < 0:
        return html + RELOAD_TAG + b"\n"
    return html[:at] + RELOAD_TAG + b"\n" + html[at:]


_NO_SITE = b"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Build failed</title></head>
<body><h1>The site has not been built yet</h1>
<p>The first build failed; the errors are listed in the terminal and below. Fix them and this page reloads.</p>
</body></html>
"""


class _Handler(http.server.SimpleHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass  # one line per request drowns the build messages

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def do_GET(self) -> None:
        self._get(head=False)

    def do_HEAD(self) -> None:
        self._get(head=True)

    def _send(self, status: int, ctype: str, body: bytes, head: bool) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _get(self, head: bool) -> None:
        path = urlsplit(self.path).path
        try:
            if path.startswith(PREFIX):
                self._internal(path[len(PREFIX):], head)
            else:
                self._file(path, head)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the browser went away mid-response

    def _internal(self, name: str, head: bool) -> None:
        builder = self.server.builder
        if name == "reload.js":
            self._send(200, "text/javascript; charset=utf-8", RELOAD_JS.read_bytes(), head)
        elif name == "errors.json":
            with builder.changed:
                state = builder.state
            body = json.dumps(state.as_json(self.server.session), indent=1).encode()
            self._send(200, "application/json; charset=utf-8", body, head)
        elif name == "events" and not head:
            self._events()
        else:
            self._send(404, "text/plain; charset=utf-8", b"not found\n", head)

    def _events(self) -> None:
        builder = self.server.builder
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.end_headers()
        with builder.changed:
            state = builder.state
        self._event("hello", {"session": self.server.session, "build": state.build, "ok": state.ok})
        seen = state.build
        while True:
            with builder.changed:
                builder.changed.wait_for(lambda: builder.stopping or builder.state.build != seen, timeout=KEEPALIVE)
                state, stopping = builder.state, builder.stopping
            if stopping:
                return
            if state.build == seen:
                self.wfile.write(b": keep-alive\n\n")
                self.wfile.flush()
                continue
            seen = state.build
            if state.ok:
                self._event("reload", {"build": state.build, "changed": list(state.changed)})
            else:
                self._event("failed", {"build": state.build, "errors": sum(p.severity == "error" for p in state.problems)})

    def _event(self, name: str, data: dict[str, object]) -> None:
        self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()

    def _file(self, url_path: str, head: bool) -> None:
        root = self.server.builder.out
        if not root.is_dir():
            self._send(503, "text/html; charset=utf-8", inject_reload(_NO_SITE), head)
            return
        fs = Path(self.translate_path(url_path))
        if fs.is_dir():
            if not url_path.endswith("/"):
                self.send_response(301)
                self.send_header("Location", url_path + "/")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            fs = fs / "index.html"
        status = 200
        if not fs.is_file():
            status, fs = 404, root / "404.html"
            if not fs.is_file():
                self._send(404, "text/plain; charset=utf-8", b"not found\n", head)
                return
        try:
            body = fs.read_bytes()
        except OSError:  # swapped away by a rebuild between the check and the read
            self._send(503, "text/plain; charset=utf-8", b"rebuilding; reload the page\n", head)
            return
        ctype = self.guess_type(str(fs))
        if fs.suffix == ".html":
            body, ctype = inject_reload(body), "text/html; charset=utf-8"
        self._send(status, ctype, body, head)

    def translate_path(self, path: str) -> str:
        self.directory = str(self.server.builder.out)
        return super().translate_path(path)


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    builder: Builder
    session: str
    errors: Log  # where an unexpected error while answering a request is reported

    def handle_error(self, request: object, client_address: object) -> None:
        err = sys.exc_info()[1]
        if isinstance(err, (BrokenPipeError, ConnectionResetError, TimeoutError)):
            return
        self.errors(f"failpedia serve: error while answering {client_address}: {type(err).__name__}: {err}")


class _Server6(_Server):
    address_family = socket.AF_INET6


def _bind(host: str, port: int) -> _Server:
    cls = _Server6 if ":" in host else _Server
    try:
        return cls((host, port), _Handler)
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            raise FailpediaError(
                f"port {port} on {host} is already in use (another 'failpedia serve'?); "
                f"choose another with --port, e.g. --port {port + 1 if port < 65535 else 8000}"
            ) from None
        if e.errno == errno.EACCES:
            raise FailpediaError(f"no permission to listen on port {port}; ports below 1024 need root, so use e.g. --port 8000") from None
        if isinstance(e, socket.gaierror) or e.errno == errno.EADDRNOTAVAIL:
            raise FailpediaError(f"cannot listen on host '{host}' ({e.strerror}); use --host 127.0.0.1") from None
        raise FailpediaError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None


def _inside(path: Path, folder: Path) -> bool:
    path, folder = path.resolve(), folder.resolve()
    return path == folder or folder in path.parents


class DevServer:
    """The HTTP server, the watcher and the builder, started and stopped together. `log` hears of
    builds and the watcher, `errors` (default: `log`) of a request that failed unexpectedly."""

    def __init__(
        self, entries: Path, out: Path, config: Config, host: str, port: int, log: Log, templates: Path = TEMPLATES,
        errors: Log | None = None,
    ) -> None:
        if not entries.is_dir():
            raise SetupError(f"{entries}: entries folder not found; pass --entries DIR")
        for watched in (entries, templates):
            if _inside(out, watched) or _inside(watched, out):
                raise UsageError(f"the output folder {out} overlaps the watched folder {watched}; choose another --out")
        self.entries, self.templates, self.log = entries, templates, log
        self.httpd = _bind(host, port)
        shown = "127.0.0.1" if host in ("", "0.0.0.0") else ("localhost" if host == "::" else host)
        shown = f"[{shown}]" if ":" in shown else shown
        self.url = f"http://{shown}:{self.httpd.server_address[1]}/"
        self.builder = Builder(entries, out, config.with_base_url(self.url), templates, log)
        self.httpd.builder = self.builder
        self.httpd.session = secrets.token_hex(8)
        self.httpd.errors = errors or log
        self.stop_event = threading.Event()
        self._watching = threading.Event()
        self._threads: list[threading.Thread] = []
        self._ignore: Callable[[watchfiles.Change, str], bool] | None = None  # watchfiles' editor-file filter, loaded with the watcher

    def start(self) -> BuildState:
        state = self.builder.rebuild()
        self._report(state, "initial build")
        for target in (self.httpd.serve_forever, self._watch):
            t = threading.Thread(target=target, daemon=True)
            t.start()
            self._threads.append(t)
        self._watching.wait(5)  # so that no edit made after start() returns goes unseen
        return state

    def stop(self) -> None:
        self.stop_event.set()
        self.builder.stop()
        if self._threads:  # shutdown() waits for serve_forever, so only once it runs
            self.httpd.shutdown()
        self.httpd.server_close()
        for t in self._threads:
            t.join(timeout=5)

    def relevant(self, change: watchfiles.Change, path: str) -> bool:
        """Entry and registry files, category folders, and anything under templates (editor swap
        and temporary files, caches and hidden files left out)."""
        if self._ignore is None:
            import watchfiles

            self._ignore = watchfiles.DefaultFilter()
        if not self._ignore(change, path):
            return False
        p = Path(path)
        if p.name.startswith("."):
            return False
        if _inside(p, self.templates):
            return True
        if p.suffix in ENTRY_SUFFIXES:
            return True
        # A category folder created, renamed or deleted (not an editor's temporary file).
        return p.is_dir() or (not p.exists() and p.parent.resolve() == self.entries.resolve())

    def _watch(self) -> None:
        import watchfiles

        try:
            # yield_on_timeout: the first (maybe empty) yield says the watcher is running. step: the
            # quiet after a change before it is reported, which every edit waits for; an editor's
            # save (a temporary file renamed in, then its mode set) takes a few ms of it.
            for changes in watchfiles.watch(
                self.entries, self.templates, watch_filter=self.relevant, stop_event=self.stop_event,
                debounce=1600, step=20, rust_timeout=200, yield_on_timeout=True, raise_interrupt=False,
            ):
                self._watching.set()
                if self.stop_event.is_set():
                    return
                if not changes:
                    continue
                names = sorted({relative(Path(p)) for _, p in changes})
                reason = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
                self._report(self.builder.rebuild([p for _, p in changes]), f"change in {reason}")
        except Exception as e:  # e.g. the system's inotify watch limit
            self.log(f"watching for changes failed ({type(e).__name__}: {e}); restart 'failpedia serve' to rebuild")
        finally:
            self._watching.set()

    def _report(self, state: BuildState, reason: str) -> None:
        if state.ok:
            pages = sum(p.endswith(".html") for p in state.changed)
            self.log(f"{reason}: built in {state.seconds:.2f} s, {pages} page{'s' * (pages != 1)} changed")  # suggestions: check --strict
            return
        for p in sorted(state.problems):
            self.log(str(p))
        errors = sum(p.severity == "error" for p in state.problems)
        kept = "still serving the last good build" if self.builder.out.is_dir() else "nothing to serve until it builds"
        self.log(f"{reason}: BUILD FAILED with {errors} error{'s' * (errors != 1)}; {kept} (the browser shows them too)")


def relative(path: Path) -> str:
    """A path as the user reads it: relative to the cwd when under it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return str(path)
