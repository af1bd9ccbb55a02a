"""`failpedia diagnose LOG...`: the logs read in chunks (a .gz too, or standard input), matched
with diagnose's Matcher and printed, the answer first; `--follow` watches a growing log. Several
logs, or a folder of them, are merged in time order first (logmerge.py)."""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import sys
import time
from collections.abc import Callable, Container, Iterator
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from ...core.config import load_config
from ...diagnosis.matcher import BINARY_PROBE, CHUNK, EVIDENCE_CHARS, Match, Matcher, looks_binary, matcher_spec, rank_hits
from ...core.load import shown
from ...core.metrics import SPARK, sparkline
from ...core.locate import Encyclopedia, locate
from ...diagnosis.logmerge import MAX_FILES, MERGED, SKIP_NAMES, MergedLog, identify, merged_lines, natural_key
from ...core.problems import BuildFailed, SetupError, UsageError
from ..progress import Progress
from ...diagnosis.ranks import LogSource, RankScanner, RankVerdict, initiating_rank

__all__ = ["cmd_diagnose", "load_spec"]
GZIP_MAGIC = b"\x1f\x8b"  # a gzipped log is read through gzip


class _InputError(Exception):
    pass


_Stream = BinaryIO | gzip.GzipFile  # a log, or a .gz log read through gzip


def _open(path: str) -> _Stream:
    if path == "-":
        stream: BinaryIO = sys.stdin.buffer
    else:
        try:
            stream = open(path, "rb")  # noqa: SIM115
        except OSError as e:
            raise _InputError(f"{path}: cannot read: {e.strerror}") from None
    head = stream.peek(2)[:2] if hasattr(stream, "peek") else b""
    if head != GZIP_MAGIC:
        return stream
    if path == "-":
        return gzip.GzipFile(fileobj=stream, mode="rb")
    stream.close()
    return gzip.GzipFile(path, "rb")


def _chunks(path: str, stream: _Stream, size: int = CHUNK) -> Iterator[bytes]:
    first = True
    while True:
        try:
            data = stream.read(size)
        except (OSError, EOFError, gzip.BadGzipFile) as e:
            raise _InputError(f"{path}: cannot read: {e}") from None
        if not data:
            return
        if first and looks_binary(data):
            raise _InputError(f"{path}: looks like a binary file, not a text log")
        first = False
        yield data


def load_spec(enc: Encyclopedia) -> dict[str, Any]:
    """The matcher definition: the one compiled into the package, or made from the entries."""
    from ...site.build import load_catalog  # the pipeline only when there is no compiled definition
    from ...site.pages import fingerprint_data

    if enc.spec is not None:
        shipped: dict[str, Any] = json.loads(enc.spec.read_bytes())
        return shipped
    try:
        return matcher_spec(fingerprint_data(load_catalog(enc.entries)))
    except BuildFailed as e:
        raise SetupError(f"cannot diagnose: the entries in {enc.entries} have {e}; run 'failpedia check' to see them") from None


CERTAINTY = {
    "definitive": "definitive: a line names this failure outright",
    "strong": "strong: the log shows this failure's usual error text, which a related failure may share",
}


def _where(path: Path) -> str:
    try:
        return path.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return str(path)


def _expand(paths: list[str]) -> tuple[list[str], bool, list[str]]:
    """The log files the arguments name: a folder stands for the files in it and below it (not
    hidden ones, nor names that are not logs: SKIP_NAMES, nor binary files). Returns the files,
    whether a folder was given, and the files of folders that were passed over as not text."""
    files: list[str] = []
    skipped: list[str] = []
    folder = False
    for path in paths:
        if path == "-" or not os.path.isdir(path):
            if path != "-" and not os.path.exists(path):
                raise UsageError(f"{path}: cannot read: No such file or directory; check the path (a shell glob that matched nothing stays as typed)")
            files.append(path)
            continue
        folder = True
        found: list[str] = []
        for top, dirs, names in os.walk(path):
            dirs[:] = sorted((d for d in dirs if not d.startswith(".")), key=natural_key)
            for name in sorted(names, key=natural_key):
                full = os.path.join(top, name)
                if SKIP_NAMES.search(name) or not os.path.isfile(full):
                    continue
                if _binary(full):
                    skipped.append(full)
                    continue
                found.append(full)
                if len(files) + len(found) > MAX_FILES:
                    raise UsageError(
                        f"{path}: more than {MAX_FILES:,} log files in this folder and below it; pass the files of one job "
                        f"(e.g. {os.path.join(path, '*.log')}) or a folder that holds only its logs")
        if not found:
            raise UsageError(f"{path}: no log files in this folder or below it" + (f" ({len(skipped)} binary files passed over)" if skipped else "")
                             + "; pass the log files themselves")
        files.extend(found)
    if len(files) > MAX_FILES:
        raise UsageError(f"{len(files):,} log files: more than the {MAX_FILES:,} one diagnosis merges; pass the files of one job")
    return files, folder, skipped


def _binary(path: str) -> bool:
    """A file in a folder that is passed over: binary (a .gz is read, so not binary here)."""
    try:
        with open(path, "rb") as f:
            head = f.read(BINARY_PROBE)
    except OSError:
        return False  # reading it again will say why
    return not head.startswith(GZIP_MAGIC) and looks_binary(head)


def _evidence_lines(m: Match, indent: str, out: TextIO) -> None:
    for e in m.evidence:
        rank = f" [rank {e.rank}]" if e.rank is not None else ""
        # log text is untrusted: escape sequences and bidi controls are shown, never obeyed
        print(f"{indent}{shown(e.file, 1000)}:{e.line}{rank}  {shown(e.text, EVIDENCE_CHARS)}", file=out)


def _can_print(out: TextIO, text: str) -> bool:
    try:
        text.encode(getattr(out, "encoding", None) or "ascii")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def _number(v: float | None) -> str:
    return "nan/inf" if v is None else f"{v:.6g}"


def _series_lines(m: Match, indent: str, out: TextIO, several: bool) -> None:
    """The readings of each numeric fingerprint that fired, as a one-line sparkline."""
    ascii_only = not _can_print(out, SPARK)
    for s in m.series:
        points = s["points"]
        values = [p[1] for p in points]
        finite = [v for v in values if v is not None]
        fired = ", ".join(str(p[0]) for p in s["fired"])
        shown_of = f"{len(points)} of {s['readings']}" if s["readings"] > len(points) else str(len(points))
        where = ("merged log " if s["file"] == MERGED else f"{shown(s['file'], 1000)} ") if several else ""
        print(f"{indent}{s['metric']} over {where}lines {points[0][0]}-{points[-1][0]} ({shown_of} readings; {s['check']} fired at line"
              f"{'s' * (len(s['fired']) > 1)} {fired}):", file=out)
        print(f"{indent}  {sparkline(values, ascii_only=ascii_only)}  first {_number(values[0])}, last {_number(values[-1])}, "
              f"max {_number(max(finite) if finite else None)}", file=out)


def _print_text(matches: list[Match], top: int, out: TextIO, spec: dict[str, Any] | None = None,
                page: Callable[[str], Path | None] | None = None, verdict: RankVerdict | None = None, several: bool = False) -> None:
    """The answer first (with its quick answer, fix and first steps), the failures it caused under
    it as consequences, then the other possible causes. `page(url)`: a built page's path, or None."""
    if not matches:
        print("No known failure matched this log.", file=out)
        if verdict is not None:  # the log still says which rank the others waited for
            _verdict(verdict, "", out)
        return
    entries = (spec or {}).get("entries", {})
    shown_matches = matches[:top]
    answer = shown_matches[0]
    info = entries.get(answer.slug, {})
    print(f"1. {answer.title}  [{'the answer' if answer.role == 'initiating' else answer.role}, {answer.certainty} match]", file=out)
    if verdict is not None:
        _verdict(verdict, "   ", out, {(e.file, e.line) for e in answer.evidence})
    if info.get("summary"):
        print(f"   Quick answer: {info['summary']}", file=out)
    if info.get("fix"):
        print(f"   Fix: {info['fix']}", file=out)
    for n, step in enumerate(info.get("steps", []), 1):
        print(f"     {n}. {step}" if n > 1 else f"   First steps:\n     1. {step}", file=out)
    local = page(info["url"]) if page is not None and info.get("url") else None
    print(f"   Read: {_where(local)}  (online: {answer.url})" if local else f"   Read: {answer.url}", file=out)
    print("   Evidence:", file=out)
    _evidence_lines(answer, "     ", out)
    _series_lines(answer, "     ", out, several)
    for m in shown_matches[1:]:
        if m.tied_with == answer.slug and m.evidence and answer.evidence:
            at = f"{shown(answer.evidence[0].file, 1000)}:" if several else ""
            print(f"   Why not {m.title}? It matches the same line {at}{answer.evidence[0].line} as strongly; this answer's fingerprint "
                  f"matched more of it: \"{shown(answer.evidence[0].matched, 200)}\" against \"{shown(m.evidence[0].matched, 200)}\".", file=out)
    consequences = [m for m in shown_matches[1:] if m.role == "collateral"]
    if consequences:
        print("   Consequences (caused by it; not separate problems):", file=out)
        for m in consequences:
            ranks = sorted({e.rank for e in m.evidence if e.rank is not None})
            where = f" on rank{'s' * (len(ranks) != 1)} {', '.join(map(str, ranks))}" if ranks else ""
            print(f"   - {m.title}{where}  ({m.url})", file=out)
            _evidence_lines(m, "       ", out)
    others = [m for m in shown_matches[1:] if m.role != "collateral"]
    if others:
        print("Other possible causes:", file=out)
        for n, m in enumerate(others, 2):
            print(f"{n}. {m.title}  [also possible, {m.certainty} match]", file=out)
            print(f"   {m.url}", file=out)
            _evidence_lines(m, "   ", out)
            _series_lines(m, "   ", out, several)
    used = sorted({m.certainty for m in shown_matches})
    print("(" + "; ".join(CERTAINTY[c] for c in used) + ")", file=out)


def _verdict(verdict: RankVerdict, indent: str, out: TextIO, shown_already: Container[tuple[str, int]] = ()) -> None:
    """"Started on rank R on host: why." and the lines that show it (those the evidence does not show already)."""
    print(f"{indent}Started on {verdict.who}: {verdict.reason}.", file=out)
    for file, line, text in verdict.lines:
        if (file, line) not in shown_already:
            print(f"{indent}  {shown(file, 1000)}:{line}  {shown(text, EVIDENCE_CHARS)}", file=out)
    if verdict.disagrees:
        print(f"{indent}Note: {verdict.disagrees}.", file=out)


def cmd_diagnose(args: argparse.Namespace) -> int:
    if args.follow and (len(args.logs) != 1 or args.logs[0] == "-" or os.path.isdir(args.logs[0])):
        raise UsageError("--follow takes exactly one log file (not -, nor a folder or several files: diagnose them when the job has ended)")
    if args.logs.count("-") > 1:
        raise UsageError("standard input (-) can be given only once")
    enc = locate(args.entries)
    base_url = load_config(enc.project).base_url
    spec = load_spec(enc)
    if args.follow:
        return _follow(spec, args.logs[0], base_url, args, enc)
    files, folder, skipped = _expand(args.logs)
    for path in skipped[:5]:
        print(f"{shown(path, 1000)}: passed over: a binary file, not a text log", file=sys.stderr)
    if len(skipped) > 5:
        print(f"... and {len(skipped) - 5} more binary files passed over", file=sys.stderr)
    if len(files) > 1 or folder:
        return _merged(spec, files, base_url, args, enc)
    progress = Progress()
    matchers = []
    scanners = []
    try:
        for path in files:
            m, scan = Matcher(spec, path), RankScanner(file=path)
            stream = _open(path)
            raw = getattr(stream, "fileobj", None) or stream  # a .gz: its compressed file says how far we are
            size = Path(path).stat().st_size if path != "-" and Path(path).is_file() else 0
            try:
                for data in _chunks(path, stream):
                    m.feed(data)
                    scan.feed(data)
                    if size:
                        progress(f"{path}: {raw.tell() * 100 // size}% of {size / 2**20:.0f} MiB")
            finally:
                if path != "-":
                    stream.close()
            m.close()
            scan.close()
            matchers.append(m)
            scanners.append(scan)
    except _InputError as e:
        progress.done()
        raise UsageError(str(e)) from None
    progress.done()
    matches = rank_hits(spec, matchers, base_url)
    return _report(matches, initiating_rank(matches, scanners[0]), args, spec, enc)


def _report(matches: list[Match], verdict: RankVerdict | None, args: argparse.Namespace, spec: dict[str, Any],
            enc: Encyclopedia, sources: list[LogSource] | None = None) -> int:
    if args.json:
        doc: dict[str, Any] = {"matches": [m.as_json() for m in matches[: args.top]], "initiating_rank": verdict.as_json() if verdict else None}
        if sources is not None:  # several files: each one's rank, node or host as its path says
            doc["files"] = [{"file": s.name, "rank": s.rank, "label": s.label, "host": s.host} for s in sources]
        print(json.dumps(doc, indent=2))
    else:
        if sources is not None:
            print(f"Merged {len(sources)} files in time order: " + ", ".join(
                shown(s.name, 200) + (f" ({s.label})" if s.label else "") for s in sources[:8]) + (", ..." if len(sources) > 8 else ""))
        _print_text(matches, args.top, sys.stdout, spec, enc.page, verdict, several=sources is not None)
    return 0 if matches else 1


def _merged(spec: dict[str, Any], files: list[str], base_url: str, args: argparse.Namespace, enc: Encyclopedia) -> int:
    """Several logs: one story, merged in time order (logmerge.py), read a chunk of each at a time."""
    order = sorted(files, key=natural_key)
    sources = [identify(p) for p in order]
    size = max(1 << 16, min(1 << 20, (16 << 20) // len(order)))  # memory: one read of each open file at a time
    progress = Progress()
    total = sum(os.path.getsize(p) for p in order if p != "-" and os.path.isfile(p)) or 1
    log = MergedLog(spec, sources)
    try:
        with contextlib.ExitStack() as stack:
            streams = []
            for path in order:
                try:
                    stream = _open(path)
                except _InputError as e:
                    raise UsageError(f"{e}" + ("; too many open files: pass fewer logs, or raise `ulimit -n`" if "Too many open files" in str(e) else "")) from None
                if path != "-":
                    stack.callback(stream.close)
                streams.append(stream)
            raws = [getattr(s, "fileobj", None) or s for s in streams]
            for n, (i, number, line) in enumerate(merged_lines([_chunks(p, s, size) for p, s in zip(order, streams)])):
                log.feed(i, number, line)
                if not n & 0xFFFF:
                    done = sum(r.tell() for p, r in zip(order, raws) if p != "-")
                    progress(f"merging {len(order)} logs: {min(100, done * 100 // total)}% of {total / 2**20:.0f} MiB")
    except _InputError as e:
        progress.done()
        raise UsageError(str(e)) from None
    progress.done()
    log.close()
    matches, verdict = log.result(base_url)
    return _report(matches, verdict, args, spec, enc, sources)


def _follow(spec: dict[str, Any], path: str, base_url: str, args: argparse.Namespace, enc: Encyclopedia) -> int:
    try:
        f = open(path, "rb")  # noqa: SIM115
    except OSError as e:
        raise UsageError(f"{path}: cannot read: {e.strerror}") from None
    m = Matcher(spec, path)
    shown: list[tuple[str, str]] = []
    print(f"watching {path} (Ctrl-C to stop)", flush=True)
    try:
        while True:
            data = f.read(CHUNK)
            if data:
                if looks_binary(data) and m.line_base == 0:
                    raise UsageError(f"{path}: looks like a binary file, not a text log")
                m.feed(data)
                continue
            # No new data: match the unterminated last line too, without consuming it.
            probe = m.snapshot()
            if m.carry:
                probe._process(m.carry + b"\n")
            matches = rank_hits(spec, [probe], base_url)
            now = [(x.slug, x.role) for x in matches]
            if matches and now != shown:
                shown = now
                print(time.strftime("%H:%M:%S") + " diagnosis:", flush=True)
                if args.json:
                    print(json.dumps({"matches": [x.as_json() for x in matches[: args.top]]}), flush=True)
                else:
                    _print_text(matches, args.top, sys.stdout, spec, enc.page)
                sys.stdout.flush()
            if Path(path).stat().st_size < f.tell():  # truncated or rotated: start over
                f.seek(0)
                m = Matcher(spec, path)
            time.sleep(0.3)
    except KeyboardInterrupt:
        return 0 if shown else 1
    finally:
        f.close()
