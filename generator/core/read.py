"""Read: the entries folder on disk → its files' bytes (the IO edge of the pipeline).

Layout: `<root>/tags.yaml`, `<root>/categories.yaml`, optionally `<root>/synonyms.yaml`,
`<root>/<category>/<slug>.yaml`.
Layout mistakes (bad names, stray files, symlinks leaving the folder) become Problems.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from .load import MAX_BYTES, shown
from .problems import FailpediaError, Problem, SetupError
from .schema import SLUG_RE

__all__ = ["RECORD", "FileSig", "Source", "file_sig", "read_entry", "read_source"]

FileSig = tuple[int, int, int, int]  # size, mtime and ctime in ns, inode: what a rewrite changes
REGISTRIES = ("tags.yaml", "categories.yaml", "synonyms.yaml")
OPTIONAL = ("synonyms.yaml",)  # registries an entries folder may leave out
RECORD = "verified.yaml"  # what `failpedia verify` saw (optional; written by verify.py)
MAX_FILES = 200_000  # entry files; twice the largest corpus benchmarked (100,000)


@dataclass(frozen=True)
class Source:
    """Every input file's bytes, keyed by its path relative to the project (for messages)."""

    root: Path
    display_root: str
    tags: tuple[str, bytes] | None
    categories: tuple[str, bytes] | None
    # (display path, category, slug, bytes); the bytes are None for a file `read_source` was told
    # it knows and that has not changed since (same size, times and inode), so was not read
    entries: tuple[tuple[str, str, str, bytes | None], ...]
    problems: tuple[Problem, ...]
    signatures: dict[str, FileSig] = field(default_factory=dict)  # display path → the file's FileSig when read
    verified: tuple[str, bytes] | None = None  # the verify record, RECORD, when there is one
    synonyms: tuple[str, bytes] | None = None  # the optional synonyms.yaml


def file_sig(st: os.stat_result) -> FileSig:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _display(root: Path, display_root: str, *parts: str) -> str:
    parts = tuple(shown(p, 300) for p in parts)  # names come from the pull request too
    return "/".join((display_root.rstrip("/"),) + parts) if display_root else "/".join(parts)


def _read(path: Path, display: str, root_real: Path, problems: list[Problem]) -> bytes | None:
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError) as e:
        problems.append(Problem(display, 0, 0, f"cannot read: {e.strerror if isinstance(e, OSError) else e}"))
        return None
    if root_real != real and root_real not in real.parents:
        problems.append(Problem(display, 0, 0, "is a symlink that points outside the entries folder; replace it with a real file"))
        return None
    if not real.is_file():
        problems.append(Problem(display, 0, 0, "is not a regular file"))
        return None
    return _read_plain(real, display, problems)


def _read_plain(path: str | Path, display: str, problems: list[Problem], sigs: dict[str, FileSig] | None = None) -> bytes | None:
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if sigs is not None:
                sigs[display] = file_sig(st)
            return _read_capped(f, st.st_size)
    except OSError as e:
        problems.append(Problem(display, 0, 0, f"cannot read: {e.strerror}"))
        return None


def _read_capped(f: BinaryIO, size: int) -> bytes:
    """The file's bytes, at most MAX_BYTES + 1 (enough to tell that it is too big). Not
    `f.read(MAX_BYTES + 1)`: that allocates 1 MiB per file and shrinks it in place, each one left
    as its own memory mapping; 65,530 files (the kernel's map limit) later, nothing can map."""
    return f.read(MAX_BYTES + 1) if size > MAX_BYTES else f.read()


def read_entry(source: Source, category: str, slug: str) -> bytes:
    """An entry file `read_source` did not read (see Source.entries), read now."""
    try:
        with open(source.root / category / f"{slug}.yaml", "rb") as f:
            return _read_capped(f, os.fstat(f.fileno()).st_size)
    except OSError as e:
        raise FailpediaError(f"{_display(source.root, source.display_root, category, slug + '.yaml')}: cannot read: {e.strerror}") from None


def read_source(root: Path, display_root: str | None = None, known: Mapping[str, FileSig] | None = None) -> Source:
    """Read the whole entries folder. Raises FailpediaError when the folder itself is missing.

    `known`: display path → the FileSig of an entry file whose content the caller already has
    (the build cache); such a file still unchanged is checked for its place and name but not read."""
    if not root.is_dir():
        raise SetupError(f"{root}: entries folder not found; pass --entries DIR")
    display_root = str(root) if display_root is None else display_root
    root_real = root.resolve()
    problems: list[Problem] = []
    registries: dict[str, tuple[str, bytes] | None] = {}
    for name in REGISTRIES:
        display = _display(root, display_root, name)
        if not (root / name).exists():
            if name in OPTIONAL:
                registries[name] = None
                continue
            problems.append(Problem(display, 0, 0, f"missing: the {name[:-5]} registry is required"))
            registries[name] = None
            continue
        data = _read(root / name, display, root_real, problems)
        registries[name] = (display, data) if data is not None else None
    verified = None
    if (root / RECORD).exists():
        display = _display(root, display_root, RECORD)
        data = _read(root / RECORD, display, root_real, problems)
        verified = (display, data) if data is not None else None

    entries: list[tuple[str, str, str, bytes | None]] = []
    sigs: dict[str, FileSig] = {}
    count = 0
    for child in sorted(os.scandir(root), key=lambda d: d.name):
        display = _display(root, display_root, child.name)
        if child.name.startswith("."):
            continue
        if child.is_file(follow_symlinks=False) or (child.is_symlink() and not child.is_dir()):
            if child.name not in REGISTRIES and child.name != RECORD:
                problems.append(Problem(display, 0, 0, "stray file: entries go in <category>/<slug>.yaml"))
            continue
        if not child.is_dir(follow_symlinks=False):
            problems.append(Problem(display, 0, 0, "is a symlink; categories must be real folders"))
            continue
        if not SLUG_RE.fullmatch(child.name):
            problems.append(Problem(display, 0, 0, "category folder names use lower-case letters, digits and hyphens"))
            continue
        folder = _display(root, display_root, child.name)
        for f in sorted(os.scandir(child.path), key=lambda d: d.name):
            fdisplay = f"{folder}/{shown(f.name, 300)}"
            if f.name.startswith("."):
                continue
            count += 1
            if count > MAX_FILES:
                raise FailpediaError(f"{display_root}: more than {MAX_FILES:,} files; refusing to read on")
            stem, dot, ext = f.name.rpartition(".")
            if f.is_dir(follow_symlinks=False):
                problems.append(Problem(fdisplay, 0, 0, "nested folders are not allowed: entries go in <category>/<slug>.yaml"))
                continue
            if not dot or ext not in ("yaml", "yml"):
                problems.append(Problem(fdisplay, 0, 0, "not an entry: entry files end in .yaml"))
                continue
            if ext == "yml":
                problems.append(Problem(fdisplay, 0, 0, f"rename to {shown(stem)}.yaml (entries end in .yaml)"))
                continue
            if not SLUG_RE.fullmatch(stem):
                problems.append(
                    Problem(fdisplay, 0, 0, f"file name '{shown(stem)}' is not a valid slug: use lower-case letters, digits and single hyphens")
                )
                continue
            if f.is_file(follow_symlinks=False):  # a plain file in a real folder: nothing to resolve
                if known and (sig := known.get(fdisplay)) is not None and _unchanged(f.path, sig):
                    entries.append((fdisplay, child.name, stem, None))
                    continue
                data = _read_plain(f.path, fdisplay, problems, sigs)
            else:  # a symlink: it must stay inside the entries folder
                data = _read(Path(f.path), fdisplay, root_real, problems)
            if data is not None:
                entries.append((fdisplay, child.name, stem, data))
    return Source(
        root=root,
        display_root=display_root,
        tags=registries["tags.yaml"],
        categories=registries["categories.yaml"],
        synonyms=registries["synonyms.yaml"],
        entries=tuple(entries),
        problems=tuple(problems),
        signatures=sigs,
        verified=verified,
    )


def _unchanged(path: str, sig: FileSig) -> bool:
    try:
        return file_sig(os.stat(path, follow_symlinks=False)) == sig
    except OSError:
        return False
