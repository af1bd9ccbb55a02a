"""Write: file contents → the output folder, all or nothing.

Two ways, one outcome. A fresh build writes everything into a sibling temporary folder; only a
complete build replaces the old site (rename the old one aside, rename the new one in, delete the
old). An update (`update=True`: an incremental build of a site this tool wrote) stages only the
files that changed, keeps the rest where they are, and once everything is staged moves the new
files in (one rename each) and deletes the files the site no longer has: after an edit that
is a few dozen renames instead of every folder and file of the site. Either way a failed build
leaves the previous site untouched. The sink refuses two writes to one path and any path that
would escape the folder.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from ..core.problems import FailpediaError

__all__ = ["SiteScan", "SiteWriter", "scan_site", "write_file"]

_PART = r"[A-Za-z0-9_@+~,=-][A-Za-z0-9._@+~,=-]*"  # no hidden files, no ':' or controls
_PATH_RE = re.compile(rf"{_PART}(?:/{_PART})*")  # every part allowed, none empty, '.' or '..'


def write_file(target: str, data: bytes, rel: str) -> None:
    """Write a reserved file (`SiteWriter.reserve`), making its folder when it does not exist
    yet: render workers make the site's 14,000 folders in parallel, without asking first."""
    try:
        try:
            f = open(target, "wb")
        except FileNotFoundError:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            f = open(target, "wb")
        with f:
            f.write(data)
    except OSError as e:  # a file where a folder must go, or the reverse
        raise FailpediaError(f"refusing to write {rel!r}: {e.strerror}") from None


@dataclass(frozen=True)
class SiteScan:
    """What an output folder held when it was scanned (`scan_site`), against the files recorded
    as written: only these few sets travel back from the scanning process, not every path."""

    extra: frozenset[str]  # files it held that were not recorded (static files, files of others)
    missing: frozenset[str]  # recorded files it did not hold
    moved: frozenset[str]  # recorded files it held with another identity than the one recorded
    empty: tuple[str, ...]  # folders that held nothing, deepest first

    def unchanged(self, rel: str) -> bool:
        """Whether the folder held the recorded file `rel` as it was written."""
        return rel not in self.missing and rel not in self.moved

    def files(self, recorded: Iterable[str]) -> set[str]:
        """Every file it held, given the files recorded."""
        return {f for f in recorded if f not in self.missing} | self.extra


def identity(st: os.stat_result) -> str:
    """A written file's identity: a file replaced or rewritten since (a checkout that commits
    site/) has another, and is rendered again rather than trusted."""
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"


def scan_site(out: str, recorded: Mapping[str, str]) -> SiteScan:
    """Walk the site folder once: the files an update must delete if the build does not write
    them, and which of the `recorded` files (path → 'key:identity') changed since they were
    written. Runs beside the build's first stages (core.parallel.start_parallel)."""
    seen: set[str] = set()
    extra: set[str] = set()
    empty: list[str] = []
    moved: set[str] = set()

    def walk(folder: str, rel: str) -> bool:
        held = False
        with os.scandir(folder) as it:
            for item in it:
                sub = f"{rel}/{item.name}" if rel else item.name
                held = True
                if item.is_dir(follow_symlinks=False):
                    if not walk(item.path, sub):
                        empty.append(sub)
                    continue
                was = recorded.get(sub)
                if was is None:
                    extra.add(sub)
                    continue
                seen.add(sub)
                if was.partition(":")[2] != identity(item.stat(follow_symlinks=False)):
                    moved.add(sub)
        return held

    walk(out, "")
    return SiteScan(frozenset(extra), frozenset(p for p in recorded if p not in seen), frozenset(moved), tuple(empty))


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class SiteWriter:
    def __init__(self, out: Path, update: bool = False) -> None:
        self.out = out.resolve() if out.exists() else out.absolute()
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.update = update and self.out.is_dir()
        self.tmp = Path(tempfile.mkdtemp(prefix=f".{self.out.name}-new-", dir=self.out.parent))
        os.chmod(self.tmp, 0o777 & ~_umask())  # mkdtemp makes it 0700: the swapped-in site must be readable by a web server
        self.staged: list[str] = []  # update: the files to move in
        self.written: set[str] = set()
        self.spellings: dict[str, str] | None = None  # lower-cased path or folder → the spelling written (see _claim)
        self._cleanup: threading.Thread | None = None

    def add(self, rel: str, content: str | bytes) -> None:
        data = content.encode("utf-8") if isinstance(content, str) else content
        if self.update and _same_bytes(os.path.join(self.out, rel), data):
            self._claim(rel)
            return
        write_file(self.reserve(rel), data, rel)

    def keep(self, rel: str) -> None:
        """An update: the site's file at `rel` is current; it stays where it is."""
        assert self.update
        self._claim(rel)

    def unwritten(self, scanned: SiteScan, recorded: Iterable[str]) -> list[str]:
        """What the folder held when `scanned` (against the `recorded` files) and this build did
        not write: the files, then the folders that were empty (deepest first)."""
        return [*(f for f in sorted(scanned.files(recorded)) if f not in self.written), *scanned.empty]

    def reserve(self, rel: str) -> str:
        """Check a path and claim it; returns where its content goes (write it with `write_file`)."""
        self._claim(rel)
        if self.update:
            self.staged.append(rel)
        return os.path.join(self.tmp, rel)

    def _claim(self, rel: str) -> None:
        """Check a path (a build claims every file of the site, so the usual case costs one
        regex match and two set lookups) and record it."""
        if not _PATH_RE.fullmatch(rel):
            _refuse(rel)
        if rel in self.written:
            raise FailpediaError(f"two pages would be written to {rel!r}; rename one of their sources")
        # One spelling per path on case-insensitive file systems. Lower-case paths cannot clash
        # with each other: the spellings are recorded once the first path with a capital comes.
        if self.spellings is None and rel != rel.lower():
            self.spellings = {}
            for known in self.written:
                self._spell(known)
        if self.spellings is not None:
            self._spell(rel)
        self.written.add(rel)

    def _spell(self, rel: str) -> None:
        assert self.spellings is not None
        prefix = ""
        for part in rel.split("/"):
            prefix = f"{prefix}/{part}" if prefix else part
            seen = self.spellings.setdefault(prefix.lower(), prefix)
            if seen != prefix:
                raise FailpediaError(f"refusing to write {rel!r}: it and {seen!r} differ only in case; rename one of their sources")

    def commit(self, removed: Iterable[str] = ()) -> None:
        """Swap the new folder in place of the old one (an update: move the staged files in, then
        delete the `removed` files and folders, e.g. `unwritten`)."""
        if self.update:
            self._commit_update(removed)
            return
        old = None
        if self.out.exists():
            if not self.out.is_dir():
                self.abort()
                raise FailpediaError(f"{self.out} exists and is not a folder")
            old = Path(tempfile.mkdtemp(prefix=f".{self.out.name}-old-", dir=self.out.parent))
            os.rmdir(old)
            os.rename(self.out, old)
        os.rename(self.tmp, self.out)
        if old is not None:  # the old tree goes while the caller saves its cache; finish() waits
            self._cleanup = threading.Thread(target=shutil.rmtree, args=(old,), kwargs={"ignore_errors": True})
            self._cleanup.start()

    def _commit_update(self, removed: Iterable[str]) -> None:
        for rel in self.staged:
            staged, live = os.path.join(self.tmp, rel), os.path.join(self.out, rel)
            try:
                os.replace(staged, live)  # one call for the usual case: the folder is there
            except FileNotFoundError:  # a new folder
                os.makedirs(os.path.dirname(live), exist_ok=True)
                os.replace(staged, live)
            except IsADirectoryError:  # a folder where a file now goes
                shutil.rmtree(live)
                os.replace(staged, live)
        for rel in removed:
            self._remove(rel)
        # the staging folder (empty folders now) goes while the caller goes on; finish() waits
        self._cleanup = threading.Thread(target=shutil.rmtree, args=(self.tmp,), kwargs={"ignore_errors": True})
        self._cleanup.start()

    def _remove(self, rel: str) -> None:
        """Delete one file (or empty folder) of the site, and the folders it leaves empty."""
        path = os.path.join(self.out, rel)
        try:
            try:
                os.unlink(path)
            except IsADirectoryError:
                os.rmdir(path)
            folder = os.path.dirname(rel)
            while folder:
                os.rmdir(os.path.join(self.out, folder))
                folder = os.path.dirname(folder)
        except OSError:  # gone already, or its folder still holds files
            pass

    def finish(self) -> None:
        """Wait until the replaced site (or an update's staging folder) is deleted."""
        if self._cleanup is not None:
            self._cleanup.join()
            self._cleanup = None

    def abort(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


def _refuse(rel: str) -> NoReturn:
    """Why a path that fails _PATH_RE cannot be written."""
    if rel.startswith("/") or "\\" in rel or any(part in ("", ".", "..") for part in rel.split("/")):
        raise FailpediaError(f"refusing to write {rel!r}: output paths must stay inside the site folder")
    raise FailpediaError(f"refusing to write {rel!r}: output paths use ASCII letters, digits and . _ - + @ ~ , = only")


def _same_bytes(path: str, data: bytes) -> bool:
    try:
        if os.path.getsize(path) != len(data):
            return False
        with open(path, "rb") as f:
            return f.read() == data
    except OSError:
        return False
