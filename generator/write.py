"""Write: file contents → the output folder, all or nothing.

Everything is written into a sibling temporary folder first; only a complete build replaces the
old site (rename the old one aside, rename the new one in, delete the old). A failed build leaves
the previous site untouched. The sink refuses two writes to one path and any path that would
escape the folder.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path, PurePosixPath

from .problems import FailpediaError

__all__ = ["SiteWriter"]

_PART_RE = re.compile(r"[A-Za-z0-9_@+~,=-][A-Za-z0-9._@+~,=-]*")  # no hidden files, no ':' or controls


class SiteWriter:
    def __init__(self, out: Path) -> None:
        self.out = out.resolve() if out.exists() else out.absolute()
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = Path(tempfile.mkdtemp(prefix=f".{self.out.name}-new-", dir=self.out.parent))
        self.written: set[str] = set()
        self.spellings: dict[str, str] = {}  # lower-cased path or folder → the spelling written

    def add(self, rel: str, content: str | bytes) -> None:
        target = self.reserve(rel)
        data = content.encode("utf-8") if isinstance(content, str) else content
        try:
            with open(target, "wb") as f:
                f.write(data)
        except OSError as e:  # a file where a folder must go, or the reverse
            raise FailpediaError(f"refusing to write {rel!r}: {e.strerror}") from None

    def link(self, rel: str, previous: Path) -> bool:
        """Reuse an unchanged file of the previous site (a hard link, no rewrite). False when the
        previous file is gone; the caller then renders it."""
        target = self.reserve(rel)
        try:
            os.link(previous, target)
        except FileNotFoundError:
            self.written.discard(rel)
            return False
        except OSError:  # another file system, or links not allowed: copy instead
            try:
                shutil.copyfile(previous, target)
            except OSError:
                self.written.discard(rel)
                return False
        return True

    def reserve(self, rel: str) -> Path:
        """Check a path and claim it; returns where its content goes (its folder exists)."""
        p = PurePosixPath(rel)
        if p.is_absolute() or ".." in p.parts or not p.parts or "\\" in rel or rel != p.as_posix():
            raise FailpediaError(f"refusing to write {rel!r}: output paths must stay inside the site folder")
        if not all(_PART_RE.fullmatch(part) for part in p.parts):
            raise FailpediaError(
                f"refusing to write {rel!r}: output paths use ASCII letters, digits and . _ - + @ ~ , = only"
            )
        if rel in self.written:
            raise FailpediaError(f"two pages would be written to {rel!r}; rename one of their sources")
        for i in range(1, len(p.parts) + 1):  # one spelling per path on case-insensitive file systems
            prefix = "/".join(p.parts[:i])
            seen = self.spellings.setdefault(prefix.lower(), prefix)
            if seen != prefix:
                raise FailpediaError(f"refusing to write {rel!r}: it and {seen!r} differ only in case; rename one of their sources")
        self.written.add(rel)
        target = self.tmp / rel
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:  # a file where a folder must go
            raise FailpediaError(f"refusing to write {rel!r}: {e.strerror}") from None
        return target

    def commit(self) -> None:
        """Swap the new folder in place of the old one."""
        old = None
        if self.out.exists():
            if not self.out.is_dir():
                self.abort()
                raise FailpediaError(f"{self.out} exists and is not a folder")
            old = Path(tempfile.mkdtemp(prefix=f".{self.out.name}-old-", dir=self.out.parent))
            os.rmdir(old)
            os.rename(self.out, old)
        os.rename(self.tmp, self.out)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)

    def abort(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)
