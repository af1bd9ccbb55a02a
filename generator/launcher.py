"""`failpedia run -- CMD ...`: run a training job, pass its output through, and diagnose it.

The child's standard output and error are copied byte for byte to ours as they arrive, and fed
to one streaming `Matcher` each (memory stays bounded however long the job prints). The child
runs in a process group of its own, so that the signals we forward (Ctrl-C, a scheduler's
SIGTERM) reach it once, and reach its own children too (torchrun's workers), as a terminal's
Ctrl-C would. `supervise` returns data; the CLI prints the diagnosis and exits with the child's
status.
"""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, BinaryIO

from .diagnose import ANSI_PATTERN, Match, Matcher, rank_hits, rank_of

__all__ = ["FORWARDED", "RankTails", "RunResult", "supervise"]

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
READ_SIZE = 1 << 16
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

    @property
    def failed(self) -> bool:
        return self.returncode != 0

    def as_json(self, command: Sequence[str], top: int) -> dict[str, Any]:
        first = self.matches[0] if self.matches else None
        rank = next((e.rank for e in first.evidence if e.rank is not None), None) if first else None
        return {
            "command": list(command),
            "returncode": self.returncode,
            "signal": signal.Signals(-self.returncode).name if self.returncode < 0 else None,
            "matches": [m.as_json() for m in self.matches[:top]],
            "initiating_rank": rank,
            "tail": self.tails.of(rank) if first else [],
        }


def _definitive(spec: dict[str, Any], matchers: Sequence[Matcher]) -> bool:
    fps = spec["fingerprints"]
    return any(st.count and fps[i]["score"] >= DEFINITIVE_SCORE for m in matchers for i, st in enumerate(m.state))


def supervise(
    command: Sequence[str],
    spec: dict[str, Any],
    out: BinaryIO,
    err: BinaryIO,
    on_definitive: Callable[[list[Match]], None] | None = None,
    tail_lines: int = 20,
    base_url: str = "",
) -> RunResult:
    """Run `command`, copy its stdout to `out` and its stderr to `err` unchanged, forward the
    FORWARDED signals to its process group, and diagnose what it printed. Raises OSError when the
    command cannot be started."""
    proc = subprocess.Popen(list(command), stdout=subprocess.PIPE, stderr=subprocess.PIPE, process_group=0)

    def forward(sig: int, _frame: FrameType | None) -> None:
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:  # the group is gone: nothing left to tell
            pass

    previous = {sig: signal.signal(sig, forward) for sig in FORWARDED}
    assert proc.stdout is not None and proc.stderr is not None
    streams = {proc.stdout.fileno(): ("stdout", out), proc.stderr.fileno(): ("stderr", err)}
    matchers = {name: Matcher(spec, name) for name, _ in streams.values()}
    tails = RankTails(tail_lines)
    early: list[Match] = []
    sinks_ok = {"stdout": True, "stderr": True}
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
                    if sinks_ok[name]:
                        try:
                            sink.write(data)
                            sink.flush()
                        except (BrokenPipeError, ValueError, OSError):  # our reader left: keep draining the child
                            sinks_ok[name] = False
                    matchers[name].feed(data)
                    tails.feed(name, data)
                    if not early and on_definitive is not None and _definitive(spec, list(matchers.values())):
                        early = rank_hits(spec, [m.snapshot() for m in matchers.values()], base_url)
                        if early:
                            on_definitive(early)
        returncode = proc.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        proc.stdout.close()
        proc.stderr.close()
    for m in matchers.values():
        m.close()
    tails.close()
    return RunResult(returncode, rank_hits(spec, list(matchers.values()), base_url), tails, early)
