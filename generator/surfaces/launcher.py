"""`failpedia run -- CMD ...`: run a training job, pass its output through, and diagnose it.

The child's standard output and error are copied byte for byte to ours as they arrive, and fed
to one streaming `Matcher` each (memory stays bounded however long the job prints). The child
runs in a process group of its own, so that the signals we forward (Ctrl-C, a scheduler's
SIGTERM) reach it once, and reach its own children too (torchrun's workers), as a terminal's
Ctrl-C would. `supervise` returns data; the CLI prints the diagnosis and exits with the child's
status.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import selectors
import signal
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, BinaryIO

from ..diagnosis.matcher import ANSI_PATTERN, Match, Matcher, rank_hits, rank_of
from ..diagnosis.ranks import RankScanner, RankVerdict, initiating_rank

__all__ = ["FORWARDED", "RankTails", "RunResult", "supervise"]

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
READ_SIZE = 1 << 20
PIPE_SIZE = 1 << 20
FINAL_BACKLOG = 8 << 20  # at exit, match at most this much of what is still waiting: the end of a log decides
DEFINITIVE_SCORE = 10  # a fingerprint this strong names its failure alone: report it while the job runs
MAX_RANKS = 1024
TAIL_LINE_CHARS = 2000
ANSI = re.compile(ANSI_PATTERN)


class RankTails:
    """The last `lines` lines of each rank's output (lines without a rank prefix under None).
    Bounded: at most MAX_RANKS ranks, lines cut to TAIL_LINE_CHARS, and a partial line kept per
    stream only up to that length."""

    def __init__(self, lines: int = 20) -> None:
        self.lines = lines
        self.tails: dict[int | None, deque[str]] = {}
        self._partial: dict[str, bytes] = {}

    def feed(self, stream: str, data: bytes) -> None:
        buf = self._partial.get(stream, b"") + data
        *complete, rest = buf.split(b"\n")
        self._partial[stream] = rest[-TAIL_LINE_CHARS * 4 :]
        for raw in complete[-self.lines * MAX_RANKS :]:
            self._add(raw)

    def close(self) -> None:
        for rest in self._partial.values():
            if rest:
                self._add(rest)
        self._partial.clear()

    def _add(self, raw: bytes) -> None:
        line = ANSI.sub("", raw.decode("utf-8", "replace")).rstrip("\r")
        if "\r" in line:  # a progress bar redrawn in place: its last state is what a terminal shows
            line = line.rsplit("\r", 1)[-1]
        rank = rank_of(line)
        tail = self.tails.get(rank)
        if tail is None:
            if len(self.tails) >= MAX_RANKS:
                return
            tail = self.tails[rank] = deque(maxlen=self.lines)
        tail.append(line[:TAIL_LINE_CHARS])

    def of(self, rank: int | None) -> list[str]:
        return list(self.tails.get(rank, ()))


@dataclass
class RunResult:
    returncode: int  # as subprocess reports it: negative when the child was killed by a signal
    matches: list[Match]
    tails: RankTails
    early: list[Match] = field(default_factory=list)  # what was reported while the job ran
    verdict: RankVerdict | None = None  # the rank the initiating failure came from
    printed: int = 0  # bytes the job printed
    skipped: int = 0  # bytes counted but not matched: the job printed faster than the matcher reads

    @property
    def failed(self) -> bool:
        return self.returncode != 0

    def as_json(self, command: Sequence[str], top: int) -> dict[str, Any]:
        first = self.matches[0] if self.matches else None
        rank = self.verdict.rank if self.verdict else None
        return {
            "command": list(command),
            "returncode": self.returncode,
            "signal": signal.Signals(-self.returncode).name if self.returncode < 0 else None,
            "matches": [m.as_json() for m in self.matches[:top]],
            "initiating_rank": rank,
            "rank_verdict": self.verdict.as_json() if self.verdict else None,
            "tail": self.tails.of(rank) if first else [],
            "printed_bytes": self.printed,
            "skipped_bytes": self.skipped,
        }


def _definitive(spec: dict[str, Any], matchers: Sequence[Matcher]) -> bool:
    fps = spec["fingerprints"]
    return any(st.count and fps[i]["score"] >= DEFINITIVE_SCORE for m in matchers for i, st in enumerate(m.state))


class _Backlog:
    """Output waiting for the matcher, bounded in bytes. The job is never made to wait for the
    diagnosis: when the backlog is full the oldest output is counted (its line ends, so evidence
    keeps its line numbers) instead of matched, and the result says how much was skipped."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.items: deque[tuple[str, bytes, int]] = deque()  # (stream, data, -1) or (stream, rest, newlines)
        self.size = 0
        self.skipped = 0
        self.closed = False
        self.cond = threading.Condition()

    def put(self, stream: str, data: bytes) -> None:
        with self.cond:
            self.items.append((stream, data, -1))
            self.size += len(data)
            self._trim(self.limit)
            self.cond.notify()

    def _trim(self, limit: int) -> None:
        for i, (stream, data, newlines) in enumerate(self.items):
            if self.size <= limit:
                break
            if newlines < 0:  # keep the line count and the unfinished last line; drop the rest
                cut = data.rfind(b"\n")
                self.items[i] = (stream, data[cut + 1 :], data.count(b"\n"))
                self.size -= cut + 1
                self.skipped += cut + 1

    def close(self, keep: int) -> None:
        """No more output: what is still waiting beyond the last `keep` bytes is skipped."""
        with self.cond:
            self._trim(keep)
            self.closed = True
            self.cond.notify()

    def get(self) -> tuple[str, bytes, int] | None:
        with self.cond:
            while not self.items and not self.closed:
                self.cond.wait()
            if not self.items:
                return None
            item = self.items.popleft()
            self.size -= len(item[1])
            return item


def supervise(
    command: Sequence[str],
    spec: dict[str, Any],
    out: BinaryIO,
    err: BinaryIO,
    on_definitive: Callable[[list[Match]], None] | None = None,
    tail_lines: int = 20,
    base_url: str = "",
    backlog: int = 64 << 20,
) -> RunResult:
    """Run `command`, copy its stdout to `out` and its stderr to `err` unchanged, forward the
    FORWARDED signals to its process group, and diagnose what it printed. The copying never
    waits for the matching, which runs in a thread of its own. Raises OSError when the command
    cannot be started."""
    proc = subprocess.Popen(list(command), stdout=subprocess.PIPE, stderr=subprocess.PIPE, process_group=0)

    def forward(sig: int, _frame: FrameType | None) -> None:
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:  # the group is gone: nothing left to tell
            pass

    previous = {sig: signal.signal(sig, forward) for sig in FORWARDED}
    switch = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)  # the copying thread gets the interpreter back soon after each read
    assert proc.stdout is not None and proc.stderr is not None
    streams = {proc.stdout.fileno(): ("stdout", out), proc.stderr.fileno(): ("stderr", err)}
    matchers = {name: Matcher(spec, name) for name, _ in streams.values()}
    tails = RankTails(tail_lines)
    scanner = RankScanner()
    early: list[Match] = []
    lock = threading.Lock()  # one writer at a time on our stderr: the job's bytes or our notice
    queue = _Backlog(backlog)

    def match() -> None:
        while (item := queue.get()) is not None:
            name, data, newlines = item
            if newlines >= 0:
                matchers[name].skip(newlines, data)
                tails.feed(name, b"\n")
                scanner.feed(b"\n")
                continue
            matchers[name].feed(data)
            tails.feed(name, data)
            scanner.feed(data)
            if not early and on_definitive is not None and _definitive(spec, list(matchers.values())):
                early.extend(rank_hits(spec, [m.snapshot() for m in matchers.values()], base_url))
                if early:
                    with lock:
                        on_definitive(early)

    worker = threading.Thread(target=match, name="failpedia-matcher", daemon=True)
    worker.start()
    for fd in streams:
        with contextlib.suppress(OSError):  # a bigger pipe: fewer, larger reads
            fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_SIZE)
    sinks_ok = {"stdout": True, "stderr": True}
    total = 0
    try:
        with selectors.DefaultSelector() as sel:
            for fd in streams:
                sel.register(fd, selectors.EVENT_READ)
            while sel.get_map():
                for key, _ in sel.select():
                    fd = key.fd
                    assert isinstance(fd, int)
                    name, sink = streams[fd]
                    data = os.read(fd, READ_SIZE)
                    if not data:
                        sel.unregister(fd)
                        continue
                    total += len(data)
                    if sinks_ok[name]:
                        try:
                            with lock:
                                sink.write(data)
                                sink.flush()
                        except (BrokenPipeError, ValueError, OSError):  # our reader left: keep draining the child
                            sinks_ok[name] = False
                    queue.put(name, data)
        returncode = proc.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sys.setswitchinterval(switch)
        proc.stdout.close()
        proc.stderr.close()
        queue.close(FINAL_BACKLOG)
        worker.join()
    for m in matchers.values():
        m.close()
    tails.close()
    scanner.close()
    matches = rank_hits(spec, list(matchers.values()), base_url)
    return RunResult(returncode, matches, tails, early, initiating_rank(matches, scanner), total, queue.skipped)
