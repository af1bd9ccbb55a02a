"""The build server: `failpedia build --server` runs its builds in a process that stays up.

A build run from a fresh process starts from nothing: it imports the pipeline, loads the build
cache (the parsed heads of every entry, what every page looked up), plans every page again and
saves the cache before it answers. The build server keeps all of that in memory from one build
to the next (site.build.Warm: the cache as last saved, the plan, the renderer) and saves the
cache after it has answered, so a rebuild costs what changed plus one pass over the catalog.
Each build is still `site.build.build`, with its checks and its all-or-nothing writes; the
server holds state, never a second way to build.

One server per build cache folder and generator code: it listens on a Unix socket named by a
digest of the two, in a folder only the user can open (`~/.cache/failpedia/servers/`), takes one
build at a time, and exits once no build has come for `idle` seconds, or when asked
(`failpedia build --stop-server`). The first `failpedia build --server` starts it (its log is
`server.log` in the cache folder). A server whose code is older than the generator's no longer
answers: its socket has another name, and it exits when idle.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import socket
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from ..core.config import Config
from ..core.problems import BuildFailed, FailpediaError, Problem, SetupError
from ..site.build import BuildResult, Warm, build, collect_and_set_aside
from ..site.cache import code_version, digest

__all__ = ["IDLE", "request_build", "serve_builds", "socket_path", "stop_server"]

_PACKAGE = Path(__file__).resolve().parent.parent  # generator/
IDLE = 900.0  # seconds a server waits for the next build before it exits
START_WAIT = 60.0  # seconds a client waits for a server it started to listen
REQUEST_WAIT = 10.0  # seconds the server waits for a connected client's request


def _servers_folder() -> Path:
    """Where the sockets live: a folder of the user's own that nobody else can open (the socket
    runs builds of any folder its caller names)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "failpedia" / "servers"
    try:
        base.mkdir(parents=True, exist_ok=True, mode=0o700)
        st = base.stat()
    except OSError as e:
        raise SetupError(f"cannot keep the build server's socket in {base}: {e.strerror}; build without --server") from None
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise SetupError(f"{base} is open to other users (mode {st.st_mode & 0o777:o}); run 'chmod 700 {base}', or build without --server")
    return base


def socket_path(cache_dir: Path) -> Path:
    """The socket of the server for this cache folder and this generator's code."""
    name = digest(str(cache_dir.absolute()), code_version())[:24]
    path = _servers_folder() / f"{name}.sock"
    if len(os.fsencode(path)) > 100:  # sun_path holds 108 bytes
        raise SetupError(f"the build server's socket path is too long ({path}); set XDG_CACHE_HOME to a shorter folder, or build without --server")
    return path


# -- the server --------------------------------------------------------------------------------


def serve_builds(cache_dir: Path, idle: float = IDLE) -> None:
    """Answer builds for `cache_dir` until none has come for `idle` seconds or one asks it to stop.
    Returns at once when another server already answers for it."""
    path = socket_path(cache_dir)
    with _only_server(path) as mine:
        if not mine:
            return
        with suppress(FileNotFoundError):
            path.unlink()  # left by a server that was killed
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(str(path))
            os.chmod(path, 0o600)
            sock.listen(16)
            _loop(sock, path, cache_dir.absolute(), idle)
        finally:
            with suppress(FileNotFoundError):
                path.unlink()  # ours: no other server binds it while this one holds the lock
            sock.close()


@contextmanager
def _only_server(path: Path) -> Iterator[bool]:
    """An exclusive lock beside the socket, held for the server's life: two servers never answer
    for one cache. A server just told to go (idle, or stopped) may still hold it: wait a little."""
    with open(path.with_suffix(".lock"), "a") as lock:
        deadline = time.monotonic() + 10
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    yield False
                    return
                time.sleep(0.05)
        try:
            yield True
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _loop(sock: socket.socket, path: Path, cache_dir: Path, idle: float) -> None:
    warm = Warm()
    served = 0
    closing = False  # idle: answering only the clients that connected before the socket went
    sock.settimeout(idle)
    while True:
        try:
            conn, _ = sock.accept()
        except TimeoutError:
            with suppress(FileNotFoundError):
                path.unlink()  # no new client finds it; one that just connected is still answered
            sock.setblocking(False)
            closing = True
            continue
        except BlockingIOError:
            return
        with conn:
            conn.settimeout(REQUEST_WAIT)  # a client that connects and says nothing holds no one up
            try:
                message = _read_message(conn)
            except OSError:
                message = None
            if message is None:
                continue
            conn.setblocking(True)
            if message.get("stop"):
                _send(conn, {"stopped": {"pid": os.getpid(), "builds": served}})
                return
            served += 1
            request = message.get("build") or {}
            result = _answer(conn, request, cache_dir, warm)
        collect = result is None or not result.unchanged  # not after a no-op answered from the input stamp: it made nothing
        try:
            warm.settle()  # the cache save the build left: after the answer, before the next build
            if result is not None and result.unchanged and warm.reuse is None:
                # Nothing to do, and no plan held yet (a first build): plan now, write nothing, so
                # that the build after an edit plans only what the edit changed.
                collect = True
                _build_request(request, cache_dir, warm, plan_only=True)
        except FailpediaError:
            warm.drop()  # the entries have errors now: the next build reports them
        except Exception:
            warm.drop()
            traceback.print_exc()  # to server.log
        # What the server holds outlives every build: a full collection over it at a build's
        # every allocation burst costs as much as the build. Collect now, then set it aside (a
        # no-op right after a needless collection would wait for it).
        if collect:
            collect_and_set_aside()
        if not closing:
            sock.settimeout(idle)


def _build_request(request: dict[str, Any], cache_dir: Path, warm: Warm, progress: Callable[[str], None] | None = None,
                   plan_only: bool = False) -> BuildResult:
    if Path(request["cache_dir"]) != cache_dir:
        raise SetupError(f"this build server answers for {cache_dir}, not {request['cache_dir']}")
    return build(
        Path(request["entries"]), Path(request["out"]), Config(**request["config"]), Path(request["templates"]),
        search=bool(request["search"]), cache_dir=cache_dir, jobs=request.get("jobs"), progress=progress, warm=warm, plan_only=plan_only,
    )


def _answer(conn: socket.socket, request: dict[str, Any], cache_dir: Path, warm: Warm) -> BuildResult | None:
    """Run the requested build and send its outcome; returns its result (None: it failed)."""
    def progress(message: str) -> None:
        _send(conn, {"progress": message})

    try:
        result = _build_request(request, cache_dir, warm, progress)
    except BuildFailed as e:
        _send(conn, {"failed": [dataclasses.astuple(p) for p in e.problems]})
    except FailpediaError as e:
        _send(conn, {"error": str(e), "exit_code": e.exit_code})
    except Exception as e:  # a bug: the client says so; the traceback goes to server.log
        traceback.print_exc()
        _send(conn, {"error": f"the build server failed ({type(e).__name__}: {e}); see {cache_dir / 'server.log'}", "exit_code": 1})
    else:
        _send(conn, {"result": {**dataclasses.asdict(result), "out": str(result.out)}})
        return result
    return None


def _send(conn: socket.socket, message: dict[str, Any]) -> None:
    with suppress(OSError):  # the client left (Ctrl-C): the build goes on and is saved
        conn.sendall(json.dumps(message).encode("utf-8") + b"\n")


def _read_message(conn: socket.socket) -> dict[str, Any] | None:
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
    try:
        message = json.loads(data)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


# -- the client --------------------------------------------------------------------------------


def request_build(entries: Path, out: Path, config: Config, templates: Path, search: bool, cache_dir: Path, jobs: int | None,
                  idle: float = IDLE, progress: Callable[[str], None] | None = None,
                  on_start: Callable[[], None] | None = None) -> BuildResult:
    """Build through the server for `cache_dir`, starting it when none answers (then calling
    `on_start`, before the build). Raises what `build` raises (BuildFailed with every problem,
    FailpediaError), with the same messages."""
    cache_dir = cache_dir.absolute()
    request = {"build": {"entries": str(entries.absolute()), "out": str(out.absolute()), "config": dataclasses.asdict(config),
                         "templates": str(templates.absolute()), "search": search, "cache_dir": str(cache_dir), "jobs": jobs}}
    path = socket_path(cache_dir)
    conn = _connect(path)
    if conn is None:
        conn = _start(cache_dir, path, idle)
        if on_start is not None:
            on_start()
    with conn:
        answer = _exchange(conn, request, cache_dir, progress)
    if "failed" in answer:
        raise BuildFailed([Problem(*p) for p in answer["failed"]])
    if "error" in answer:
        error = FailpediaError(answer["error"])
        error.exit_code = int(answer.get("exit_code", 1))
        raise error
    fields = answer["result"]
    return BuildResult(**{**fields, "out": Path(fields["out"])})


def stop_server(cache_dir: Path) -> dict[str, Any] | None:
    """Ask the server for `cache_dir` to exit; what it says (its pid, builds served), or None
    when none runs."""
    conn = _connect(socket_path(cache_dir.absolute()))
    if conn is None:
        return None
    with conn:
        answer = _exchange(conn, {"stop": True}, cache_dir, None)
    stopped: dict[str, Any] = answer["stopped"]
    return stopped


def _connect(path: Path) -> socket.socket | None:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(path))
    except OSError:  # none, or a dead one's socket
        conn.close()
        return None
    return conn


def _start(cache_dir: Path, path: Path, idle: float) -> socket.socket:
    """Start a server in its own session (it outlives this command) and connect to it."""
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        log = open(cache_dir / "server.log", "ab")
    except OSError as e:
        raise SetupError(f"cannot keep the build cache in {cache_dir}: {e.strerror}; pass --cache-dir DIR") from None
    with log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "generator", "build-server", "--cache-dir", str(cache_dir), "--idle", repr(idle)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
            cwd=_PACKAGE.parent,  # `-m generator` finds this very package (its code names the socket), not one in the caller's folder
        )
    deadline = time.monotonic() + START_WAIT
    while time.monotonic() < deadline:
        conn = _connect(path)
        if conn is not None:
            return conn
        if proc.poll() is not None and proc.returncode != 0:
            break
        time.sleep(0.02)
    raise SetupError(f"the build server did not start; see {cache_dir / 'server.log'}, or build without --server")


def _exchange(conn: socket.socket, message: dict[str, Any], cache_dir: Path, progress: Callable[[str], None] | None) -> dict[str, Any]:
    """Send one message; pass on progress lines; return the final answer."""
    conn.sendall(json.dumps(message).encode("utf-8") + b"\n")
    with conn.makefile("rb") as stream:
        for line in stream:
            answer = json.loads(line)
            if "progress" in answer:
                if progress is not None:
                    progress(answer["progress"])
                continue
            return dict(answer)
    raise FailpediaError(f"the build server stopped before it answered; see {cache_dir / 'server.log'}, and build again")
