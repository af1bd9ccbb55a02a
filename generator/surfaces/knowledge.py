"""The encyclopedia loaded once, for the long-running surfaces (the agent server, the editor
server): the catalog, the matcher definition and the search index, with the three questions
they answer — diagnose a log, search, and look an entry up. Returns data; prints nothing."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.catalog import Catalog
from ..diagnosis.matcher import CHUNK, Match, Matcher, looks_binary, matcher_spec, rank_hits
from .entrymarkdown import entry_markdown
from ..site.pages import entry_url, fingerprint_data
from ..core.problems import FailpediaError
from ..diagnosis.ranks import RankScanner, RankVerdict, initiating_rank
from ..search.query import SearchIndex, parse_query, search

__all__ = ["Diagnosis", "Knowledge", "LogRefused", "read_log_file"]

MAX_TOP = 20


class LogRefused(FailpediaError):
    """A path that is not a regular, readable text file."""


def read_log_file(path: str) -> Iterator[bytes]:
    """The chunks of a regular file, for the matcher only. Folders, devices, FIFOs and sockets are
    refused before anything is opened for reading (a FIFO would block, a device never end), as
    is a binary file."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise LogRefused(f"{path}: cannot read: {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise LogRefused(f"{path}: {kind}; give the path of a log file")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)  # opening a FIFO swapped in must not block
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise LogRefused(f"{path}: cannot read: {e.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):  # swapped between stat and open
            raise LogRefused(f"{path}: not a regular file; give the path of a log file")
        first = True
        while data := f.read(CHUNK):
            if first and looks_binary(data):
                raise LogRefused(f"{path}: looks like a binary file, not a text log")
            first = False
            yield data


@dataclass(frozen=True)
class Diagnosis:
    matches: list[Match]
    rank: RankVerdict | None  # the rank the initiating failure came from, when the log says


@dataclass
class Knowledge:
    catalog: Catalog
    base_url: str = ""
    spec: dict[str, Any] = field(init=False)
    _index: SearchIndex | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.spec = matcher_spec(fingerprint_data(self.catalog))

    @classmethod
    def load(cls, entries: Path, base_url: str = "") -> "Knowledge":
        from ..site.build import load_catalog

        return cls(load_catalog(entries), base_url)

    @property
    def index(self) -> SearchIndex:
        if self._index is None:
            self._index = SearchIndex.build(self.catalog)
        return self._index

    def url(self, slug: str) -> str:
        return self.base_url + entry_url(slug)

    def diagnose(self, chunks: Iterable[bytes], file: str = "-") -> Diagnosis:
        m, scan = Matcher(self.spec, file), RankScanner(file=file)
        for data in chunks:
            m.feed(data)
            scan.feed(data)
        m.close()
        scan.close()
        matches = rank_hits(self.spec, [m], self.base_url)
        return Diagnosis(matches, initiating_rank(matches, scan))

    def search(self, text: str, top: int = 10) -> list[dict[str, Any]]:
        query = parse_query(text, self.catalog)
        hits = search(self.index, query)[: max(1, min(top, MAX_TOP))]
        return [
            {
                "slug": h.slug, "title": self.catalog.records[h.slug].head.title, "url": self.url(h.slug),
                "summary": self.catalog.records[h.slug].head.summary, "score": h.score,
                "tags": list(self.catalog.records[h.slug].tags),
            }
            for h in hits
        ]

    def markdown(self, slug: str) -> str:
        return entry_markdown(slug, self.catalog.records[slug].entry, self.url(slug))

    def data(self, slug: str) -> dict[str, Any]:
        rec = self.catalog.records[slug]
        return {"slug": slug, "category": rec.category, "url": self.url(slug), **rec.entry.model_dump(mode="json", exclude_none=True)}
