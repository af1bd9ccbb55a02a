"""A progress line on standard error for long work (a build of thousands of entries, the search
index, a large log), for the command layer: shown only on a terminal, and only once the work has
taken a second, so pipes, logs and quick runs see nothing extra."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]

DELAY = 1.0  # seconds of work before the line appears


class Progress:
    def __init__(self, stream: TextIO | None = None, delay: float = DELAY) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        self.started = time.monotonic()
        self.delay = delay
        self.shown = False

    def __call__(self, message: str) -> None:
        if not self.live or time.monotonic() - self.started < self.delay:
            return
        self.stream.write("\r\x1b[K" + message[:200])
        self.stream.flush()
        self.shown = True

    def done(self) -> None:
        """Clear the line, so the command's own output starts on a clean one."""
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False
