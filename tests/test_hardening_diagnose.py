"""`failpedia diagnose` on hostile or huge logs (issue 9): memory stays bounded whatever the size or
shape of the input, time grows linearly, and log text is only ever shown as text. The full 2 GB run
is bench/diagnose_big_log.py; these use a few hundred MB, generated and piped, never written."""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from generator.diagnosis.matcher import diagnose_bytes, matcher_spec
from generator.site.build import load_catalog
from generator.site.pages import fingerprint_data

REPO = Path(__file__).resolve().parent.parent
OOM = b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB."
HTML = b'<img src=x onerror="alert(1)"><script>alert(2)</script>'


# Runs the command, then reports the peak resident memory of its own address space (VmHWM; the
# rusage of a child also counts the parent's pages it held between fork and exec).
CHILD = """
import sys
from generator.surfaces.cli import main
code = main(sys.argv[1:])
sys.stdout.flush()
with open("/proc/self/status") as f:
    peak = [line.split()[1] for line in f if line.startswith("VmHWM:")]
sys.stderr.write("peak-kib %s\\n" % peak[0])
sys.exit(code)
"""


def run_diagnose(entries: Path, chunks, *args: str) -> tuple[int, dict, float, float]:
    """Pipe generated chunks into `diagnose -` in a child; (exit code, JSON, seconds, peak RSS MiB)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        cmd = [sys.executable, "-c", CHILD, "diagnose", "--entries", str(entries), "--json", *args, "-"]
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=REPO, stdin=subprocess.PIPE, stdout=out, stderr=err)
        assert proc.stdin is not None
        try:
            for chunk in chunks:
                proc.stdin.write(chunk)
        finally:
            proc.stdin.close()
            proc.wait(timeout=120)
        elapsed = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        report = err.read().decode()
        assert "Traceback" not in report, report
        peak = int(report.rsplit("peak-kib ", 1)[1].split()[0]) / 1024
        return proc.returncode, json.loads(out.read() or b"{}"), elapsed, peak


def noise(megabytes: int):
    line = b"2024-05-01 12:00:00 | INFO | step 123456 | loss 1.2345 | lr 3.0e-4 | CUDA memory fine " + HTML + b"\n"
    block = line * (1024 * 1024 // len(line))
    for _ in range(megabytes):
        yield block


def newlines(megabytes: int) -> int:
    return sum(block.count(b"\n") for block in noise(megabytes))


def gzipped(chunks) -> bytes:
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=9, mtime=0) as gz:
        for chunk in chunks:
            gz.write(chunk)
    return buffer.getvalue()


def test_a_large_piped_log_stays_bounded_in_memory_and_time(sample: Path) -> None:
    def log():
        yield from noise(192)
        yield b"x" * (48 * 1024 * 1024)  # one 48 MiB line without a newline
        yield b"\r" * (16 * 1024 * 1024)  # and 16 MiB of carriage returns (progress-bar redraws)
        yield b"\n[rank1]: " + OOM + b" " + HTML + b"\n"

    code, data, seconds, rss = run_diagnose(sample, log())
    assert code == 0 and data["matches"][0]["slug"] == "gpu-oom"
    (ev,) = data["matches"][0]["evidence"]
    assert ev["line"] == newlines(192) + 2 and ev["text"].endswith(HTML.decode())  # HTML stays text
    assert rss < 200, f"peak RSS {rss:.0f} MiB for a 256 MiB log"
    assert seconds < 60


def test_a_gzip_bomb_on_stdin_streams(sample: Path) -> None:
    bomb = gzipped([*(b"\n" * (1024 * 1024) for _ in range(256)), OOM + b"\n"])
    assert len(bomb) < 1024 * 1024
    code, data, seconds, rss = run_diagnose(sample, [bomb])
    assert code == 0 and data["matches"][0]["evidence"][0]["line"] == 256 * 1024 * 1024 + 1
    assert rss < 200 and seconds < 60


def test_a_binary_stream_is_refused_at_once(sample: Path) -> None:
    def zeros():
        yield b"\x00" * (1024 * 1024)
        yield from (b"\x00" * (1024 * 1024) for _ in range(8))

    started = time.perf_counter()
    cmd = [sys.executable, "-m", "generator", "diagnose", "--entries", str(sample), "-"]
    done = subprocess.run(cmd, cwd=REPO, input=b"".join(zeros()), capture_output=True, timeout=60)
    assert done.returncode == 2 and b"looks like a binary file" in done.stderr and b"Traceback" not in done.stderr
    assert time.perf_counter() - started < 30


def test_log_html_is_evidence_text_never_markup(sample: Path) -> None:
    spec = matcher_spec(fingerprint_data(load_catalog(sample)))
    log = b"<html><body>" + HTML + b"\n" + HTML + b" [rank3]: " + OOM + b"</body>\n"
    (match,) = diagnose_bytes(spec, log)
    assert match.evidence[0].text == (HTML + b" [rank3]: " + OOM + b"</body>").decode()
    assert match.evidence[0].rank == 3


@pytest.mark.parametrize("line", [
    b"CUDA out of memory" + b" a" * 2_000_000,               # a 4 MB line holding the literal
    b"CUDA out of memory. Tried to allocate " + b"9" * 3_000_000,
    (b"CUDA out of memory\r" * 200_000),                      # 200,000 segments
])
def test_hostile_lines_finish_quickly(sample: Path, line: bytes) -> None:
    spec = matcher_spec(fingerprint_data(load_catalog(sample)))
    started = time.perf_counter()
    diagnose_bytes(spec, line + b"\n")
    assert time.perf_counter() - started < 10
