"""A long editing session against `failpedia serve` on a synthetic corpus.

    python bench/serve_edits.py --count 1000 --edits 30
    python bench/serve_edits.py --count 10000 --edits 30 --repo /path/to/other/checkout
    python bench/serve_edits.py --count 1000 --edits 30 --hugo    # `hugo server` on the same entries

Starts the server (the checkout `--repo`, default this one) on N entries (corpus.py), then edits
one entry's title every `--interval` seconds and measures, for each edit: the time from the
write to the edited page served with the new title (polled over HTTP), to the reload event
naming that page (the server's event stream), and to the search index holding the new title's
word (search/meta.json's vocabulary shard); and the server's RSS after the edit. Prints each edit
and the medians, RSS at the first and last edit, and the largest.

`--hugo` runs `hugo server` instead (Debian's `hugo` on the PATH) on the same entries as Markdown
pages (run.py's Hugo project), editing a page's title in its front matter; it measures the time
to the page served only (Hugo has no search index, and its reload goes over a WebSocket).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from corpus import make_corpus  # noqa: E402
from run import hugo_project  # noqa: E402

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Events:
    """The server's event stream: (arrival time, name, data) of every event."""

    def __init__(self, url: str) -> None:
        host, port = url.removeprefix("http://").rstrip("/").rsplit(":", 1)
        self.conn = http.client.HTTPConnection(host, int(port), timeout=600)
        self.conn.request("GET", "/__failpedia/events")
        self.resp = self.conn.getresponse()
        self.seen: list[tuple[float, str, dict]] = []
        self.lock = threading.Condition()
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
                    with self.lock:
                        self.seen.append((time.monotonic(), name, json.loads(data)))
                        self.lock.notify_all()
                    name, data = "message", ""
        except (OSError, ValueError):
            pass

    def wait_for(self, page: str, since: float, timeout: float) -> float | None:
        deadline = time.monotonic() + timeout
        with self.lock:
            while True:
                for at, name, data in self.seen:
                    if at >= since and name == "reload" and page in data.get("changed", ()):
                        return at
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.lock.wait(left)


def get(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.read().decode()
    except OSError:
        return ""


def retitle(data: dict, i: int) -> str:
    """Give the entry's title the i-th edit's marker (one word, no stem to strip); returns it."""
    marker = "zq" + "".join(chr(97 + int(d)) for d in f"{os.getpid()}{i:03d}") + "q"
    data["title"] = f"{data['title'].split(' edit')[0]} edit {marker}"
    return marker


def edit_and_poll(path: Path, text: str, page: str, marker: str, timeout: float) -> tuple[float, float | None]:
    """Write the edit, then poll the page until it shows `marker`: (when written, seconds to served)."""
    t0 = time.monotonic()
    path.write_text(text, encoding="utf-8")
    while time.monotonic() - t0 < timeout:
        if marker in get(page):
            return t0, time.monotonic() - t0
        time.sleep(0.01)
    return t0, None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--count", type=int, default=1000)
    p.add_argument("--edits", type=int, default=30)
    p.add_argument("--interval", type=float, default=1.0, help="seconds between one edit served and the next write")
    p.add_argument("--repo", type=Path, default=REPO, help="the checkout whose generator serves")
    p.add_argument("--work", type=Path, default=None)
    p.add_argument("--timeout", type=float, default=120.0)
    p.add_argument("--hugo", action="store_true", help="measure `hugo server` on the same entries instead")
    args = p.parse_args(argv)
    if args.hugo:
        return hugo_edits(args)

    work = args.work or Path(tempfile.mkdtemp(prefix="serve-bench-"))
    entries = work / "entries"
    if not entries.is_dir():
        make_corpus(REPO / "entries", args.count, entries)
    env = {**os.environ, "PYTHONPATH": str(args.repo.resolve()), "PYTHONUNBUFFERED": "1"}
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "generator", "serve", "--entries", str(entries), "--port", "0",
                             "--templates", str(args.repo.resolve() / "templates")],
                            cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    lines: list[str] = []
    url = ""
    for line in proc.stdout:
        lines.append(line.rstrip())
        if " at http://" in line:
            url = line.split(" at ", 1)[1].split()[0]
            break
    if not url:
        raise SystemExit("the server did not start:\n" + "\n".join(lines[-20:]))
    threading.Thread(target=lambda: [lines.append(x.rstrip()) for x in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
    print(f"{args.count} entries, {args.repo}: first build {time.monotonic() - started:.1f} s, RSS {rss_mib(proc.pid):.0f} MiB", flush=True)

    events = Events(url)
    files = sorted(entries.glob("*/*.yaml"))
    rows = []
    try:
        time.sleep(1.0)
        for i in range(args.edits):
            path = files[(i * 7919) % len(files)]
            slug = path.stem
            data = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)
            marker = retitle(data, i)
            t0, served = edit_and_poll(path, yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100),
                                       f"{url}{slug}/", marker, args.timeout)
            reload_at = events.wait_for(f"{slug}/index.html", t0, args.timeout)
            reload = reload_at - t0 if reload_at is not None else None
            indexed = None
            while time.monotonic() - t0 < args.timeout:
                shard = get(f"{url}search/v/z.json")
                if marker in shard:
                    indexed = time.monotonic() - t0
                    break
                time.sleep(0.05)
            rss = rss_mib(proc.pid)
            rows.append((served, reload, indexed, rss))
            fmt = lambda x: f"{x:6.2f}" if x is not None else "   n/a"  # noqa: E731
            print(f"edit {i + 1:2}: served {fmt(served)} s, reload {fmt(reload)} s, indexed {fmt(indexed)} s, RSS {rss:7.0f} MiB", flush=True)
            time.sleep(args.interval)
    finally:
        events.conn.close()
        proc.terminate()
        proc.wait(30)
    ok = [r for r in rows if r[0] is not None and r[1] is not None]
    if ok:
        print(f"median: edit→served {statistics.median(r[0] for r in ok):.2f} s, edit→reload {statistics.median(r[1] for r in ok):.2f} s, "
              f"edit→indexed {statistics.median(r[2] for r in ok if r[2] is not None):.2f} s; "
              f"RSS first edit {rows[0][3]:.0f} MiB, last {rows[-1][3]:.0f} MiB, max {max(r[3] for r in rows):.0f} MiB")
    return 0


def hugo_edits(args: argparse.Namespace) -> int:
    """The same edits against `hugo server` (fast render mode, its default): edit → page served."""
    import socket

    work = args.work or Path(tempfile.mkdtemp(prefix="serve-bench-hugo-"))
    entries = work / "entries"
    if not entries.is_dir():
        make_corpus(REPO / "entries", args.count, entries)
    root = hugo_project(entries, work / "hugo")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = time.monotonic()
    proc = subprocess.Popen(["hugo", "server", "-s", str(root), "--bind", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    lines: list[str] = []
    for line in proc.stdout:
        lines.append(line.rstrip())
        if "Web Server is available" in line:
            break
    else:
        raise SystemExit("hugo server did not start:\n" + "\n".join(lines[-20:]))
    threading.Thread(target=lambda: [lines.append(x.rstrip()) for x in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
    url = f"http://127.0.0.1:{port}/"
    print(f"{args.count} entries, hugo server: started in {time.monotonic() - started:.1f} s, RSS {rss_mib(proc.pid):.0f} MiB", flush=True)
    pages = sorted((root / "content").glob("*.md"))
    rows = []
    try:
        time.sleep(1.0)
        for i in range(args.edits):
            path = pages[(i * 7919) % len(pages)]
            _, front, body = path.read_text(encoding="utf-8").split("---\n", 2)
            data = yaml.load(front, Loader=_Loader)
            marker = retitle(data, i)
            text = "---\n" + yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=1000) + "---\n" + body
            _, served = edit_and_poll(path, text, f"{url}{path.stem}/", marker, args.timeout)
            rss = rss_mib(proc.pid)
            rows.append((served, rss))
            print(f"edit {i + 1:2}: served {served if served is None else round(served, 2)} s, RSS {rss:7.0f} MiB", flush=True)
            time.sleep(args.interval)
    finally:
        proc.terminate()
        proc.wait(30)
    ok = [r for r in rows if r[0] is not None]
    if ok:
        print(f"median: edit→served {statistics.median(r[0] for r in ok):.2f} s; "
              f"RSS first edit {rows[0][1]:.0f} MiB, last {rows[-1][1]:.0f} MiB, max {max(r[1] for r in rows):.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
