"""Index: the written site → its Pagefind full-text index in site/pagefind/, byte-identical per input.

`run_pagefind(site, expected_pages)` runs the Pagefind binary (from the `pagefind[bin]` wheel; no
network), checks that it indexed every entry page, then makes the output deterministic:
Pagefind writes its filter chunks and its metadata file in hash-map order, which changes from run
to run (upstream issue Pagefind/pagefind#638). `canonicalize` reorders those records — sorted
by name — without changing a single value, renames the files after their new content, and
updates the two references to them. Anything unexpected in the format is an error that names
the file and the way out, never a silently different site.

Pagefind's files are gzip("pagefind_dcd" + CBOR). Only the CBOR needed here is read: the items
are reordered as raw byte spans, so Pagefind's own encoding of every value is kept.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from .problems import FailpediaError

__all__ = ["EXCLUDE", "INDEX_DIR", "INDEX_DIRS", "NEXT_INDEX_DIR", "canonicalize", "run_pagefind", "swap_in_next_index"]

# Parts of an entry page that are not about the entry (navigation, links to other entries).
EXCLUDE = ("nav.crumbs", "nav.toc", "section[aria-labelledby=related]", "footer.entry-footer")
TIMEOUT = 600
INDEX_DIR = "pagefind"  # site/pagefind/: the index the pages load
NEXT_INDEX_DIR = ".pagefind-next"  # an index made beside the live one, then swapped in (the dev server)
INDEX_DIRS = (INDEX_DIR, NEXT_INDEX_DIR)  # what a build that leaves indexing to its caller leaves alone
_SIGNATURE = b"pagefind_dcd"


def run_pagefind(
    site: Path, expected_pages: int, subdir: str = INDEX_DIR, started: Callable[[subprocess.Popen[str]], None] | None = None
) -> int:
    """Index `site` into site/<subdir>/; returns the number of pages indexed. `started` receives
    the Pagefind process (the dev server stops it when it stops)."""
    site = site.resolve()  # Pagefind runs in it: a relative path would point elsewhere
    try:
        from pagefind_bin import get_executable

        exe = str(get_executable())
    except (ImportError, FileNotFoundError) as e:
        raise FailpediaError(
            f"search indexing failed: the Pagefind binary is missing ({e}); install it with "
            "`pip install 'pagefind[bin]'`, or build with --no-search"
        ) from None
    cmd = [exe, "--site", str(site), "--output-subdir", subdir, "--force-language", "en"]
    for selector in EXCLUDE:
        cmd += ["--exclude-selectors", selector]
    # Pagefind reads PAGEFIND_* variables and a pagefind.yml in its working folder; give it neither.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAGEFIND_")}
    try:
        proc = subprocess.Popen(cmd, cwd=site, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError as e:
        raise FailpediaError(f"search indexing failed: cannot run Pagefind ({e}); build with --no-search to skip it") from None
    if started is not None:
        started(proc)
    try:
        stdout, stderr = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise FailpediaError(f"search indexing failed: Pagefind did not finish within {TIMEOUT} s; build with --no-search to skip it") from None
    output = (stdout + stderr).strip()
    if proc.returncode != 0:
        tail = "\n".join(output.splitlines()[-8:])
        raise FailpediaError(f"search indexing failed: Pagefind exited with status {proc.returncode}:\n{tail}")
    m = re.search(r"Indexed (\d+) pages?", output)
    indexed = int(m.group(1)) if m else 0
    if indexed != expected_pages or not (site / subdir / "pagefind.js").is_file():
        raise FailpediaError(
            f"search indexing failed: Pagefind indexed {indexed} pages, expected {expected_pages} entries "
            "(every entry page must carry data-pagefind-body)"
        )
    canonicalize(site / subdir)
    return indexed


def swap_in_next_index(site: Path) -> None:
    """Make site/.pagefind-next/ the live site/pagefind/ (two renames; the old index is deleted)."""
    live, new, old = site / INDEX_DIR, site / NEXT_INDEX_DIR, site / ".pagefind-old"
    if live.exists():
        os.rename(live, old)
    os.rename(new, live)
    shutil.rmtree(old, ignore_errors=True)


# --- Canonical output -------------------------------------------------------------------------


class _Unexpected(Exception):
    pass


def _head(buf: bytes, i: int) -> tuple[int, int, int]:
    """(major type, argument, offset after the head) of the CBOR item at `i`."""
    if i >= len(buf):
        raise _Unexpected("truncated data")
    major, info = buf[i] >> 5, buf[i] & 31
    if info < 24:
        return major, info, i + 1
    size = {24: 1, 25: 2, 26: 4, 27: 8}.get(info)
    if size is None:
        raise _Unexpected(f"indefinite-length or reserved CBOR item at byte {i}")
    return major, int.from_bytes(buf[i + 1 : i + 1 + size], "big"), i + 1 + size


def _end(buf: bytes, i: int) -> int:
    """The offset just after the CBOR item at `i`."""
    major, arg, j = _head(buf, i)
    if major in (0, 1, 7):
        return j
    if major in (2, 3):
        return j + arg
    if major in (4, 5):
        for _ in range(arg * (2 if major == 5 else 1)):
            j = _end(buf, j)
        return j
    raise _Unexpected(f"CBOR tag at byte {i}")


def _array(buf: bytes, i: int) -> tuple[bytes, list[tuple[int, int]], int]:
    """(head bytes, (start, end) of each item, end) of the array at `i`."""
    major, count, j = _head(buf, i)
    if major != 4:
        raise _Unexpected(f"expected an array at byte {i}")
    spans = []
    for _ in range(count):
        end = _end(buf, j)
        spans.append((j, end))
        j = end
    return buf[i : spans[0][0] if spans else j], spans, j


def _text(buf: bytes, i: int) -> str:
    major, size, j = _head(buf, i)
    if major != 3:
        raise _Unexpected(f"expected a string at byte {i}")
    return buf[j : j + size].decode("utf-8")


def _read(path: Path) -> bytes:
    data = gzip.decompress(path.read_bytes())
    if not data.startswith(_SIGNATURE):
        raise _Unexpected("missing the pagefind_dcd signature")
    return data[len(_SIGNATURE) :]


def _write(folder: Path, prefix: str, digits: int, suffix: str, body: bytes) -> str:
    """Write a chunk named after its content; returns its hash name ('en_0123abc')."""
    name = f"{prefix}{hashlib.sha256(body).hexdigest()[:digits]}"
    (folder / f"{name}{suffix}").write_bytes(gzip.compress(_SIGNATURE + body, compresslevel=9, mtime=0))
    return name


def _sorted_filter(body: bytes) -> bytes:
    """A filter chunk, [name, [[value, [pages...]], ...]], with its values sorted."""
    head, (name, values), end = _array(body, 0)
    if len((name, values)) != 2 or end != len(body):
        raise _Unexpected("a filter chunk is not [name, values]")
    _text(body, name[0])
    vhead, spans, _ = _array(body, values[0])
    keyed = []
    for start, stop in spans:
        _, (value, _pages), _ = _array(body, start)
        keyed.append((_text(body, value[0]), body[start:stop]))
    return head + body[name[0] : name[1]] + vhead + b"".join(raw for _, raw in sorted(keyed))


def canonicalize(folder: Path) -> None:
    """Make Pagefind's filter chunks and metadata file identical for identical input."""
    entry_path = folder / "pagefind-entry.json"
    current = ""
    try:
        current = str(entry_path)
        entry = json.loads(entry_path.read_text(encoding="utf-8"))
        languages = entry["languages"]
        if len(languages) != 1:
            raise _Unexpected(f"expected one language, found {sorted(languages)}")
        lang = next(iter(languages.values()))
        meta_path = folder / f"pagefind.{lang['hash']}.pf_meta"
        current = str(meta_path)
        meta = _read(meta_path)
        head, spans, end = _array(meta, 0)
        if len(spans) != 6 or end != len(meta):
            raise _Unexpected(f"expected 6 parts in the metadata, found {len(spans)}")
        fhead, filters, _ = _array(meta, spans[3][0])
        _, sorts, _ = _array(meta, spans[4][0])
        if sorts:
            raise _Unexpected("sort indexes are not supported (no page declares data-pagefind-sort)")
        renamed = []
        for start, _stop in filters:
            _, (name, chunk), _ = _array(meta, start)
            old = _text(meta, chunk[0])
            current = str(folder / "filter" / f"{old}.pf_filter")
            body = _sorted_filter(_read(folder / "filter" / f"{old}.pf_filter"))
            new = _write(folder / "filter", old[: old.index("_") + 1], len(old) - old.index("_") - 1, ".pf_filter", body)
            if new != old:
                (folder / "filter" / f"{old}.pf_filter").unlink()
            renamed.append((_text(meta, name[0]), meta[start : chunk[0]] + _head_of_text(new) + new.encode()))
        filters_raw = fhead + b"".join(raw for _, raw in sorted(renamed))
        new_meta = meta[: spans[3][0]] + filters_raw + meta[spans[3][1] :]
        old_hash = lang["hash"]
        current = str(meta_path)
        prefix = old_hash[: old_hash.index("_") + 1]
        lang["hash"] = _write(folder, f"pagefind.{prefix}", len(old_hash) - len(prefix), ".pf_meta", new_meta)[len("pagefind.") :]
        if lang["hash"] != old_hash:
            meta_path.unlink()
        entry_path.write_text(json.dumps(entry, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
    except (_Unexpected, KeyError, ValueError, OSError, EOFError, gzip.BadGzipFile) as e:
        raise FailpediaError(
            f"search indexing failed: cannot make Pagefind's output deterministic ({current}: {e}); "
            "this Pagefind version writes a format generator/indexer.py does not know — pin pagefind to 1.5.x, "
            "or build with --no-search"
        ) from None


def _head_of_text(text: str) -> bytes:
    size = len(text.encode())
    if size >= 24:
        if size > 255:
            raise _Unexpected("chunk name too long")
        return bytes([0x78, size])
    return bytes([0x60 | size])
