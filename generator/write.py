"""Write: file contents → the output folder, all or nothing.

Everything is written into a sibling temporary folder first; only a complete build replaces the
old site (rename the old one aside, rename the new one in, delete the old). A failed build leaves
the previous site untouched. The sink refuses two writes to one path and any path that would
escape the folder.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path, PurePosixPath

from .problems import FailpediaError

__all__ = ["SiteWriter"]


class SiteWriter:
    def __init__(self, out: Path) -> None:
        self.out = out.resolve() if out.exists() else out.absolute()
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = Path(tempfile.mkdtemp(prefix=f".{self.out.name}-new-", dir=self.out.parent))
        self.written: set[str] = set()

    def add(self, rel: str, content: str | bytes) -> None:
        p = PurePosixPath(rel)
        if p.is_absolute() or ".." in p.parts or not p.parts or "\\" in rel or rel != p.as_posix():
            raise FailpediaError(f"refusing to write {rel!r}: output paths must stay inside the site folder")
        if rel in self.written:
            raise FailpediaError(f"two pages would be written to {rel!r}; rename one of their sources")
        self.written.add(rel)
        target = self.tmp / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode("utf-8") if isinstance(content, str) else content
        with open(target, "wb") as f:
            f.write(data)

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
