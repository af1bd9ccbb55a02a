"""`failpedia run -- CMD`: real child processes, real signals, the bytes and status passed through."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from generator.surfaces.launcher import RankTails

REPO = Path(__file__).resolve().parent.parent
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB."
WATCHDOG = "[rank0]:[E ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9)"


def script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "job.py"
    path.write_text(textwrap.dedent(body))
    return path


def failpedia_run(sample: Path, *cmd: str, options: tuple[str, ...] = (), **kw) -> subprocess.CompletedProcess[bytes]:
    argv = [sys.executable, "-m", "generator", "run", "--entries", str(sample), *options, "--", *cmd]
    return subprocess.run(argv, capture_output=True, cwd=REPO, timeout=120, **kw)


def test_a_failing_multi_rank_job_passes_through_and_is_diagnosed(sample: Path, tmp_path: Path) -> None:
    job = script(tmp_path, f"""
        import sys
        for step in range(3):
            for rank in range(4):
                print(f"[rank{{rank}}]: step {{step}} loss 2.{{rank}} \\x1b[32mok\\x1b[0m", flush=True)
        sys.stderr.write("[rank2]: Traceback (most recent call last):\\n[rank2]: {OOM}\\n")
        sys.stderr.flush()
        for rank in (0, 1, 3):
            print("[rank%d]:%s" % (rank, {WATCHDOG[7:]!r}), file=sys.stderr, flush=True)
        sys.exit(7)
    """)
    direct = subprocess.run([sys.executable, str(job)], capture_output=True, timeout=60)
    report = tmp_path / "diagnosis.json"
    done = failpedia_run(sample, sys.executable, str(job), options=("--json", str(report)))
    assert done.returncode == direct.returncode == 7
    assert done.stdout == direct.stdout  # the child's bytes, ANSI codes and all
    err = done.stderr.decode()
    assert err.startswith(direct.stderr.decode())
    tail = err[len(direct.stderr.decode()):]
    assert "the job exited with status 7" in tail
    assert "diagnosis: GPU OOM (initiating, rank 2)" in tail
    assert "consequence: NCCL hang" in tail
    assert "Why rank 2: rank 2 printed GPU OOM" in tail
    data = json.loads(report.read_text())
    assert data["returncode"] == 7 and data["signal"] is None and data["initiating_rank"] == 2
    assert data["rank_verdict"]["lines"][0]["line"] == 2
    assert [(m["slug"], m["role"]) for m in data["matches"]] == [("gpu-oom", "initiating"), ("nccl-hang", "collateral")]
    # the initiating rank's last lines, colour codes removed (stdout and stderr interleave as read)
    assert sorted(data["tail"]) == sorted([f"[rank2]: step {s} loss 2.2 ok" for s in range(3)] + [
        "[rank2]: Traceback (most recent call last):", f"[rank2]: {OOM}"])
    assert data["tail"][-2:] == ["[rank2]: Traceback (most recent call last):", f"[rank2]: {OOM}"]


def test_a_job_killed_by_a_signal_is_diagnosed_and_the_wrapper_dies_the_same_way(sample: Path, tmp_path: Path) -> None:
    job = script(tmp_path, f"""
        import os, signal, sys
        print("[rank0]: {OOM}", file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    done = failpedia_run(sample, sys.executable, str(job))
    assert done.returncode == -signal.SIGKILL
    assert b"the job was killed by SIGKILL" in done.stderr and b"diagnosis: GPU OOM" in done.stderr


def test_a_successful_job_gets_no_diagnosis(sample: Path, tmp_path: Path) -> None:
    job = script(tmp_path, """
        import sys
        sys.stdout.buffer.write(bytes(range(256)) + b"\\nno newline at the end")
        print("CUDA memory is fine", file=sys.stderr)
    """)
    done = failpedia_run(sample, sys.executable, str(job))
    assert done.returncode == 0
    assert done.stdout == bytes(range(256)) + b"\nno newline at the end"
    assert done.stderr == b"CUDA memory is fine\n"


def test_a_definitive_fingerprint_is_reported_while_the_job_runs(sample: Path, tmp_path: Path) -> None:
    job = script(tmp_path, f"""
        import sys, time
        print({WATCHDOG!r}, file=sys.stderr, flush=True)
        time.sleep(0.5)
        print("recovered", flush=True)
    """)
    done = failpedia_run(sample, sys.executable, str(job))
    assert done.returncode == 0
    err = done.stderr.decode()
    assert "NCCL hang detected while the job runs" in err
    assert "the job exited with status 0" in err and "diagnosis: NCCL hang" in err


def test_signals_are_forwarded_to_the_job_once(sample: Path, tmp_path: Path) -> None:
    job = script(tmp_path, """
        import signal, sys, time
        got = []
        signal.signal(signal.SIGTERM, lambda s, f: got.append(s))
        print("ready", flush=True)
        deadline = time.time() + 30
        while not got and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)  # a second delivery would land here
        print(f"got {len(got)} SIGTERM", flush=True)
        sys.exit(143)
    """)
    argv = [sys.executable, "-m", "generator", "run", "--entries", str(sample), "--", sys.executable, str(job)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"ready\n"
        time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert out == b"got 1 SIGTERM\n"
    assert proc.returncode == 143
    assert b"the job exited with status 143" in err


def test_a_command_that_cannot_start_is_a_usage_error(sample: Path, tmp_path: Path) -> None:
    done = failpedia_run(sample, str(tmp_path / "no-such-program"))
    assert done.returncode == 2
    assert b"cannot start" in done.stderr and b"Traceback" not in done.stderr
    assert failpedia_run(sample).returncode == 2  # no command at all


def test_rank_tails_stay_bounded() -> None:
    tails = RankTails(lines=3)
    for i in range(10_000):
        tails.feed("stdout", f"[rank{i % 5000}]: line {i}\n".encode())
    tails.feed("stdout", b"x" * 100_000)  # a partial line that never ends
    tails.close()
    assert len(tails.tails) <= 1024
    assert all(len(t) <= 3 for t in tails.tails.values())
    assert all(len(line) <= 2000 for t in tails.tails.values() for line in t)


@pytest.mark.parametrize("chunks", [[b"[rank1]: a\n[rank1]: b\n"], [b"[rank1]: a\n[ra", b"nk1]: b\n"]])
def test_rank_tails_split_lines_across_reads(chunks: list[bytes]) -> None:
    tails = RankTails()
    for c in chunks:
        tails.feed("stderr", c)
    tails.close()
    assert tails.of(1) == ["[rank1]: a", "[rank1]: b"]


def test_a_job_no_entry_covers_still_gets_the_rank_its_log_names(sample: Path, tmp_path: Path) -> None:
    # Horovod's stall report (horovod/horovod#429): no entry matches, but rank 0 says rank 1 never submitted the allreduce.
    warning = ("WARNING: One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are "
               "waiting for remainder of ranks for more than 60 seconds.")
    job = script(tmp_path, f"""
        import sys
        for _ in range(2):
            print("[1,0]<stderr>:" + {warning!r}, file=sys.stderr, flush=True)
            print("[1,0]<stderr>:Stalled ops:", file=sys.stderr, flush=True)
            print("[1,0]<stderr>:allreduce.avg_loss [missing ranks: 1]", file=sys.stderr, flush=True)
        sys.exit(3)
    """)
    done = failpedia_run(sample, sys.executable, str(job))
    assert done.returncode == 3
    err = done.stderr.decode()
    assert "failpedia: no known failure matched its output." in err
    assert "Started on rank 1: the log names rank 1 as the one that never reached the collective" in err
