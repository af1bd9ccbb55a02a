"""The persistent build cache: what a rebuild can skip.

Seven kinds of file are kept under the cache folder (`.cache/` by default, `--cache-dir` to move it,
`--no-cache` to ignore it):

- `stamp`: the size, times and inode of every input (entries, registries, templates,
  generator sources, settings). When nothing moved and the site is still the one this cache
  wrote, a build is a no-op.
- `parsed-NN.pickle` and `blobs-NN.pickle` (32 shards by digest): validated entries by the
  SHA-256 of their bytes, so an unchanged file is neither parsed nor validated again (by the same
  generator code: a shard written by other code is dropped, since its schema may differ). A
  `parsed` shard holds each entry's `Head` (what other pages need) and is loaded by every
  rebuild; its `blobs` shard holds the pickled models, each with its entry page's HTML
  fragments (markdown and highlighted code; validate.Body), most of the cache by size, read
  only when a page of one of its entries renders. A rebuild rewrites only the
  shards whose entries changed.
- `memo-*.pickle`: results derived from the whole corpus that a build would otherwise recompute
  (similar entries, tag pairs, the fingerprint list of api/fingerprints.json, the per-entry items
  of the site-wide JSON files, each entry's search terms, the search index's postings that the
  next build patches), each stored with the digest of its inputs (see catalog.Memo), one file per
  result, or 32 for a per-entry map, so that an edit rewrites one of them (MemoFiles).
- `templates-*.bin`: the templates compiled to Python bytecode (render.TemplateCache); Jinja
  checks each against its template's source and its own version. `templates-refs-*.json`: the
  templates each template names, by its name and source (Renderer.template_key).
- `files.pickle`: each entry file's size, times and inode when last read, with the digest of its
  bytes: a file whose signature is unchanged is not read again (git's index works the same way).
- `pages.json`: for every page of the last site, the key of its inputs. A page whose key is
  unchanged is not rendered: its previous file stays where it is (an in-place update), unless the
  file is gone or was changed since it was written (write.scan_site). `reads.pickle`: what each page looked up in the catalog when it
  last rendered (reads.py), from which its key is made again on the next build.

The cache is an optimisation only: a test proves an incremental build equals a cold one byte for
byte after each kind of change. It is local state written by this tool, never by contributors: a
pull request can add files under `.cache/`, so every file carries an HMAC made with a key kept
outside every checkout (`~/.cache/failpedia/cache-key`), and an unsigned or altered file is
ignored. Unpickling a planted parsed shard would run its code; trusting planted page keys would
publish planted pages.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import pickle
import re
import secrets
import zlib
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from dataclasses import dataclass, field
from functools import lru_cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.problems import FailpediaError, SetupError

from .reads import Known, Made, Numbered, Read

if TYPE_CHECKING:
    from ..core.read import FileSig

__all__ = ["BuildCache", "code_version", "digest", "input_stamp"]

FORMAT = 6  # bump when the cached shapes change
SHARDS = 32  # parsed-entry files; one changed entry rewrites one of them
_GENERATOR = Path(__file__).resolve().parent.parent  # all of generator/, every package


def digest(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8") if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def _files(root: Path) -> Iterable[Path]:
    return map(Path, _file_names(str(root)))


def _file_names(root: str) -> Iterable[str]:
    """Every file under `root` (or `root` itself), in a stable order, as plain strings (making
    a Path object per file costs more than its stat call)."""
    if os.path.isfile(root):
        yield root
        return
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
        for name in sorted(filenames):
            yield os.path.join(dirpath, name)


def input_stamp(paths: Iterable[Path], extra: str) -> str:
    """Size, times and inode of every file under `paths`, plus `extra` (settings, flags). The
    ctime too: a copy that keeps the size and restores the mtime (cp -p, rsync -t) changes it."""
    parts = [extra]
    for root in paths:
        for p in _file_names(str(root)):
            try:
                st = os.stat(p)
            except OSError:
                continue
            parts.append(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}")
    return digest(*parts)


@lru_cache(maxsize=1)
def code_version() -> str:
    """The cache format and the generator's code: parsed entries and derived indexes made by
    other code (a schema rule added, a ranking changed) are not reused."""
    parts: list[bytes | str] = [str(FORMAT)]
    for p in _files(_GENERATOR):
        if p.suffix == ".py":
            parts += [p.relative_to(_GENERATOR).as_posix(), p.read_bytes()]
    return digest(*parts)


def _secret() -> bytes | None:
    """The signing key, from the user's cache folder (made on first use); None when unavailable."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "failpedia"
    path = base / "cache-key"
    try:
        if not path.exists():
            base.mkdir(parents=True, exist_ok=True)
            tmp = base / f"cache-key.{os.getpid()}.{secrets.token_hex(4)}"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(secrets.token_bytes(32))
            try:
                os.link(tmp, path)  # atomic: a build racing this one keeps the first key
            except FileExistsError:
                pass
            finally:
                os.unlink(tmp)
        key = path.read_bytes()
    except (OSError, RuntimeError):
        return None
    return key if len(key) == 32 else None


def _shard_of(key: str) -> int:
    return int(key[:4], 16) % SHARDS


def _mac(key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, hashlib.sha256).digest()


def _read_signed(path: Path, key: bytes) -> bytes | None:
    """The payload of a file this tool signed, or None (missing, unsigned or altered)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    mac, payload = data[:32], data[32:]
    return payload if hmac.compare_digest(mac, _mac(key, payload)) else None


def _write_signed(path: Path, key: bytes, payload: bytes) -> bytes:
    """Write `payload` with its MAC in front; returns the MAC. The temporary name is the writer's
    own: render workers compiling the same template write the same file at once."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    mac = _mac(key, payload)
    try:
        tmp.write_bytes(mac + payload)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return mac


def _mac_of(path: Path) -> bytes | None:
    """The MAC a signed file starts with (its payload is checked when it is read)."""
    try:
        with open(path, "rb") as f:
            return f.read(32)
    except OSError:
        return None


def _unpickle(payload: bytes | None) -> Any:
    """A payload this tool signed (or None): a file from another version may not load."""
    try:
        return pickle.loads(payload) if payload is not None else None
    except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError, TypeError):
        return None


class MemoFiles(MutableMapping[str, Any]):
    """catalog.Memo's store: signed files per name, read when a build first asks for that name
    and written only when it was set: a summary edit rewrites the item maps, not the fingerprint
    list. A per-entry map (a dict, what Memo.each stores) is kept in SHARDS files by key
    (`memo-<name>-NN.pickle`), and a save rewrites only the shards with an entry that is not the
    one read or last saved: one edit rewrites one shard of each map, not every entry's terms.
    Any other value is one file (`memo-<name>.pickle`)."""

    def __init__(self, folder: Path, key: bytes) -> None:
        self.folder, self.key = folder, key
        self._values: dict[str, Any] = {}
        self._missing: set[str] = set()
        self._dirty: set[str] = set()
        self._shards: dict[str, list[dict[str, Any]]] = {}  # name → a per-entry map's shards as read or last saved

    def _path(self, name: str, shard: int | None = None) -> Path:
        stem = f"memo-{re.sub(r'[^a-z0-9]+', '-', name.lower())}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"
        return self.folder / (f"{stem}.pickle" if shard is None else f"{stem}-{shard:02d}.pickle")

    def _read(self, name: str, shard: int | None = None) -> Any:
        data = _unpickle(_read_signed(self._path(name, shard), self.key))
        if not (isinstance(data, dict) and data.get("format") == code_version() and data.get("name") == name and data.get("shard") == shard):
            raise KeyError(name)
        return data["value"]

    def _load(self, name: str) -> Any:
        try:
            return self._read(name)
        except KeyError:
            shards = [self._read(name, i) for i in range(SHARDS)]  # a per-entry map, or KeyError
            if not all(isinstance(part, dict) for part in shards):
                raise
            self._shards[name] = shards
            return {k: v for part in shards for k, v in part.items()}

    def __getitem__(self, name: str) -> Any:
        if name not in self._values:
            if name in self._missing:
                raise KeyError(name)
            try:
                self._values[name] = self._load(name)
            except KeyError:
                self._missing.add(name)
                raise
        return self._values[name]

    def __setitem__(self, name: str, value: Any) -> None:
        self._values[name] = value
        self._missing.discard(name)
        self._dirty.add(name)

    def __delitem__(self, name: str) -> None:
        raise TypeError("memo entries are replaced, not deleted")

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def save(self) -> None:
        for name in sorted(self._dirty):
            value = self._values[name]
            if not isinstance(value, dict):
                self._write(name, None, value)
                continue
            shards: list[dict[str, Any]] = [{} for _ in range(SHARDS)]
            for k, v in value.items():
                shards[zlib.crc32(str(k).encode()) % SHARDS][k] = v
            before = self._shards.get(name)
            if before is None:
                self._path(name).unlink(missing_ok=True)  # not also a single file of the name
            for i, part in enumerate(shards):
                if before is None or before[i].keys() != part.keys() or any(before[i][k] is not v for k, v in part.items()):
                    self._write(name, i, part)
            self._shards[name] = shards
        self._dirty.clear()

    def _write(self, name: str, shard: int | None, value: Any) -> None:
        data = {"format": code_version(), "name": name, "shard": shard, "value": value}
        _write_signed(self._path(name, shard), self.key, pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL))


@dataclass
class BuildCache:
    folder: Path | None  # None: disabled
    key: bytes = field(default=b"", repr=False)  # signs and checks the cache files
    stamp: str = ""
    parsed: dict[str, Any] = field(default_factory=dict)  # digest → head part of the parse result
    pages: dict[str, str] = field(default_factory=dict)
    made: dict[str, Made] = field(default_factory=dict)  # page → what it was made from (load_parsed)
    _reads: list[Read] = field(default_factory=list, repr=False)  # the distinct look-ups `made` numbers
    _subjects: list[str] = field(default_factory=list, repr=False)  # the distinct subjects `made` numbers
    known: Known | None = None  # what the last build's reader found (reads.Known)
    site: str = ""  # the output folder the page keys describe
    entries: int = 0  # entry pages of that site
    memo: MutableMapping[str, Any] = field(default_factory=dict)  # corpus-wide results by name, see catalog.Memo
    files: dict[str, tuple[FileSig, str]] = field(default_factory=dict)  # entry file → (its signature, digest)
    _dirty: set[int] = field(default_factory=set)  # parsed shards to write
    _fresh: dict[str, bytes] = field(default_factory=dict, repr=False)  # blobs parsed in this build
    _blobs: dict[int, dict[str, bytes]] = field(default_factory=dict, repr=False)  # blob shards read so far
    _saved: bytes | None = field(default=None, repr=False)  # the MAC of pages.json as read or last written

    @classmethod
    def open(cls, folder: Path | None) -> "BuildCache":
        key = _secret() if folder is not None else None
        if folder is None or key is None:
            return cls(None)  # no key, no cache: every build is cold
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            why = "it is not a folder" if folder.exists() and not folder.is_dir() else e.strerror
            raise SetupError(f"cannot keep the build cache in {folder}: {why}; pass --cache-dir DIR, or --no-cache") from None
        cache = cls(folder, key)
        cache._saved = _mac_of(folder / "pages.json")
        try:
            payload = _read_signed(folder / "pages.json", key)
            meta = json.loads(payload.decode("utf-8")) if payload is not None else {}
            if meta.get("format") == FORMAT:
                cache.stamp, cache.pages, cache.site, cache.entries = meta["stamp"], meta["pages"], meta["site"], meta["entries"]
        except (OSError, ValueError, KeyError, TypeError):
            pass
        return cache

    def load_parsed(self) -> None:
        """Load the parsed-entry heads and the memo (only when a build has work to do). The
        entries' pickles stay on disk until `blob` asks for one."""
        if self.folder is None or self.parsed:
            return
        files = _unpickle(self.read_file("files.pickle"))
        if isinstance(files, dict) and files.get("format") == FORMAT and isinstance(files.get("files"), dict):
            self.files = files["files"]
        self.memo = MemoFiles(self.folder, self.key)
        reads = _unpickle(self.read_file("reads.pickle"))
        if isinstance(reads, dict) and reads.get("format") == FORMAT and reads.get("stamp") == self.stamp:
            self._take_reads(reads)
        for shard in range(SHARDS):
            data = _unpickle(_read_signed(self._shard_path(shard, "parsed"), self.key))
            if (
                isinstance(data, dict) and data.get("format") == code_version() and isinstance(data.get("entries"), dict)
                and data.get("blobs") == _mac_of(self._shard_path(shard, "blobs"))  # written with these heads
            ):
                self.parsed.update(data["entries"])
            else:
                self._dirty.add(shard)  # missing or stale: written again on save

    def _take_reads(self, reads: dict[str, Any]) -> None:
        """What each page was made from, from `reads.pickle`'s contents (`_numbered`)."""
        try:
            self._reads, self._subjects = reads["reads"], reads["subjects"]
            self.made = {path: Made(plan, Numbered(self._reads, numbers), subjects) for path, (plan, numbers, subjects) in reads["pages"].items()}
            self.known = Known(reads["signatures"], {self._reads[i]: value for i, value in reads["values"].items()})
        except (KeyError, TypeError, ValueError, IndexError):  # written by other code: every page renders
            self._reads, self._subjects, self.made, self.known = [], [], {}, None

    def current(self, folder: Path | None) -> bool:
        """Whether this cache, held in memory since it was opened or last saved, is still what
        `folder` holds: no other build has saved there since (a build server keeps its cache)."""
        return folder is not None and folder == self.folder and self._saved is not None and _mac_of(folder / "pages.json") == self._saved

    def numbers(self, subjects: set[str]) -> set[int]:
        """The numbers `made` knows these subjects by (a subject no page looked up has none)."""
        if not self._subjects or not subjects:
            return set()
        number = {s: i for i, s in enumerate(self._subjects)}
        return {number[s] for s in subjects if s in number}

    @property
    def enabled(self) -> bool:
        """False for a cold build (`--no-cache`, or no place to keep a cache)."""
        return self.folder is not None

    def known_files(self) -> dict[str, FileSig]:
        """Entry file → its signature when last read, for the files whose parse is cached: one
        still the same need not be read (read_source)."""
        return {path: sig for path, (sig, key) in self.files.items() if key in self.parsed}

    def get(self, key: str) -> tuple[Any, Callable[[], bytes]] | None:
        """The cached head part of an entry's parse result, and a callable that reads its blob."""
        meta = self.parsed.get(key)
        return None if meta is None else (meta, partial(self.blob, key))

    def blob(self, key: str) -> bytes:
        if key in self._fresh:
            return self._fresh[key]
        shard = _shard_of(key)
        if shard not in self._blobs:
            data = _unpickle(_read_signed(self._shard_path(shard, "blobs"), self.key))
            ok = isinstance(data, dict) and data.get("format") == code_version() and isinstance(data.get("blobs"), dict)
            self._blobs[shard] = data["blobs"] if ok else {}
        try:
            return self._blobs[shard][key]
        except KeyError:
            raise FailpediaError(f"the build cache in {self.folder} changed during the build; build again") from None

    def put(self, key: str, meta: Any, blob: bytes) -> None:
        self.parsed[key] = meta
        self._fresh[key] = blob
        self._dirty.add(_shard_of(key))

    def save_parsed(self, keep: set[str]) -> None:
        """Write the shards that changed; `keep`: digests of the entries present."""
        if self.folder is None:
            return
        gone = set(self.parsed) - keep
        for key in gone:
            del self.parsed[key]
            self._dirty.add(_shard_of(key))
        if not self._dirty:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        shards: dict[int, list[str]] = {s: [] for s in self._dirty}
        for key in self.parsed:
            if (s := _shard_of(key)) in shards:
                shards[s].append(key)
        for s, keys in sorted(shards.items()):
            blobs = {}
            for key in keys:
                try:
                    blobs[key] = self.blob(key)
                except FailpediaError:  # its old shard is gone or altered: parsed again next time
                    del self.parsed[key]
            blob_data = pickle.dumps({"format": code_version(), "blobs": blobs}, protocol=pickle.HIGHEST_PROTOCOL)
            mac = _write_signed(self._shard_path(s, "blobs"), self.key, blob_data)  # first: the heads name it
            entries = {key: self.parsed[key] for key in blobs}
            data = pickle.dumps({"format": code_version(), "blobs": mac, "entries": entries}, protocol=pickle.HIGHEST_PROTOCOL)
            _write_signed(self._shard_path(s, "parsed"), self.key, data)
            self._blobs[s] = blobs
        self._dirty.clear()
        self._fresh.clear()  # in _blobs now

    def read_file(self, name: str) -> bytes | None:
        """A file of this cache, or None (cache off, or the file missing, unsigned or altered)."""
        return None if self.folder is None else _read_signed(self.folder / name, self.key)

    def write_file(self, name: str, payload: bytes) -> None:
        if self.folder is not None:
            self.folder.mkdir(parents=True, exist_ok=True)
            _write_signed(self.folder / name, self.key, payload)

    def _numbered(self, stamp: str, made: dict[str, Made], known: Known) -> dict[str, Any]:
        """`made` and `known` with look-ups and subjects as numbers into two tables: the ones
        loaded, with the new ones after them (a page kept from the last build keeps its numbers)."""
        read_number = {r: i for i, r in enumerate(self._reads)}
        subject_number: dict[str, int] | None = None
        pages: dict[str, tuple[str, tuple[int, ...], tuple[int, ...]]] = {}
        for path, m in made.items():
            if isinstance(m.reads, Numbered) and m.reads.table is self._reads:
                pages[path] = (m.plan, m.reads.numbers, m.subjects)  # type: ignore[assignment]  # numbers, as loaded
                continue
            if subject_number is None:
                subject_number = {s: i for i, s in enumerate(self._subjects)}
            pages[path] = (m.plan, tuple(read_number.setdefault(r, len(read_number)) for r in m.reads),
                           tuple(subject_number.setdefault(str(s), len(subject_number)) for s in m.subjects))
        values = {read_number.setdefault(r, len(read_number)): v for r, v in known.values.items()}
        subjects = list(subject_number) if subject_number is not None else self._subjects
        return {"format": FORMAT, "stamp": stamp, "reads": list(read_number), "subjects": subjects, "signatures": dict(known.signatures),
                "values": values, "pages": pages}

    def _shard_path(self, shard: int, kind: str) -> Path:
        assert self.folder is not None
        return self.folder / f"{kind}-{shard:02d}.pickle"

    def save(self, stamp: str, pages: dict[str, str], site: Path, keep: set[str], entries: int,
             files: dict[str, tuple[FileSig, str]] | None = None, made: dict[str, Made] | None = None,
             known: Known | None = None, held: bool = False) -> None:
        """Write the new state; `keep` are the digests of the entries still present, `files` the
        entry files a next build may skip reading (see `known_files`), `made` what each page was
        made from, `known` what this build's reader found (reads.Known). `held`: this cache stays
        in memory for a next build (build.Warm), so what it holds becomes what was written, as a
        fresh `open` and `load_parsed` would read it."""
        if self.folder is None:
            return
        self.save_parsed(keep)
        if files is not None and files != self.files:
            self.write_file("files.pickle", pickle.dumps({"format": FORMAT, "files": files}, protocol=pickle.HIGHEST_PROTOCOL))
            self.files = files
        if isinstance(self.memo, MemoFiles):
            self.memo.save()
        if made is not None and known is not None:
            numbered = self._numbered(stamp, made, known)
            self.write_file("reads.pickle", pickle.dumps(numbered, protocol=pickle.HIGHEST_PROTOCOL))
            if held:
                self._take_reads(numbered)
                self.known = known  # what reads.pickle gives back, and the cards and matcher items it does not keep
        elif held:
            self._reads, self._subjects, self.made, self.known = [], [], {}, None  # as load_parsed finds it
        meta = {"format": FORMAT, "stamp": stamp, "site": str(site), "pages": pages, "entries": entries}
        self._saved = _write_signed(self.folder / "pages.json", self.key, json.dumps(meta, sort_keys=True).encode("utf-8"))
        self.stamp, self.pages, self.site, self.entries = stamp, pages, str(site), entries
