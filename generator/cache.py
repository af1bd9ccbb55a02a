"""The persistent build cache: what a rebuild can skip.

Three things are kept under the cache folder (`.cache/` by default, `--cache-dir` to move it,
`--no-cache` to ignore it):

- `stamp`: the size and modification time of every input (entries, registries, templates,
  generator sources, settings). When nothing moved and the site is still the one this cache
  wrote, a build is a no-op.
- `parsed.pickle`: validated entries by the SHA-256 of their bytes, so an unchanged file is
  neither parsed nor validated again.
- `pages.json`: for every page of the last site, the key of its inputs. A page whose key is
  unchanged is not rendered: its previous file is hard-linked into the new site.

The cache is an optimisation only: a test proves an incremental build equals a cold one byte for
byte after each kind of change. It is local state written by this tool, never by contributors.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["BuildCache", "digest", "input_stamp", "source_fingerprint"]

FORMAT = 3  # bump when the cached shapes change
_GENERATOR = Path(__file__).resolve().parent


def digest(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8") if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def _files(root: Path) -> Iterable[Path]:
    if root.is_file():
        yield root
        return
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
        for name in sorted(filenames):
            yield Path(dirpath) / name


def input_stamp(paths: Iterable[Path], extra: str) -> str:
    """Size and mtime of every file under `paths`, plus `extra` (settings, flags)."""
    parts = [extra]
    for root in paths:
        for p in _files(root):
            try:
                st = p.stat()
            except OSError:
                continue
            parts.append(f"{p}\0{st.st_size}\0{st.st_mtime_ns}")
    return digest(*parts)


def source_fingerprint(templates: Path) -> str:
    """The content of the generator's code and the templates: any change re-renders everything."""
    parts = [str(FORMAT)]
    for root in (_GENERATOR, templates):
        for p in _files(root):
            if p.suffix in (".py", ".html", ".xml", ".js", ".css", ".svg", ".json", ".txt"):
                parts.append(p.name)
                parts.append(p.read_bytes())
    return digest(*parts)


@dataclass
class BuildCache:
    folder: Path | None  # None: disabled
    stamp: str = ""
    parsed: dict[str, Any] = field(default_factory=dict)
    pages: dict[str, str] = field(default_factory=dict)
    site: str = ""  # the output folder the page keys describe
    dirty: bool = False

    @classmethod
    def open(cls, folder: Path | None) -> "BuildCache":
        cache = cls(folder)
        if folder is None:
            return cache
        try:
            meta = json.loads((folder / "pages.json").read_text(encoding="utf-8"))
            if meta.get("format") == FORMAT:
                cache.stamp, cache.pages, cache.site = meta["stamp"], meta["pages"], meta["site"]
        except (OSError, ValueError, KeyError, TypeError):
            pass
        return cache

    def load_parsed(self) -> None:
        """Load the parsed-entry store (only when some entry has to be looked up)."""
        if self.folder is None or self.parsed:
            return
        try:
            with open(self.folder / "parsed.pickle", "rb") as f:
                data = pickle.load(f)
            if isinstance(data, dict) and data.get("format") == FORMAT:
                self.parsed = data["entries"]
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError, TypeError):
            self.parsed = {}

    def save_parsed(self, keep: set[str]) -> None:
        """Write the parsed-entry store when it changed; `keep`: digests of the entries present."""
        if self.folder is None or not (self.dirty or set(self.parsed) - keep):
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        entries = {k: v for k, v in self.parsed.items() if k in keep}
        tmp = self.folder / "parsed.pickle.tmp"
        with open(tmp, "wb") as f:
            pickle.dump({"format": FORMAT, "entries": entries}, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, self.folder / "parsed.pickle")
        self.dirty = False

    def save(self, stamp: str, pages: dict[str, str], site: Path, keep: set[str]) -> None:
        """Write the new state; `keep` are the digests of the entries still present."""
        if self.folder is None:
            return
        self.save_parsed(keep)
        meta = {"format": FORMAT, "stamp": stamp, "site": str(site), "pages": pages}
        tmp = self.folder / "pages.json.tmp"
        tmp.write_text(json.dumps(meta, sort_keys=True), encoding="utf-8")
        os.replace(tmp, self.folder / "pages.json")
