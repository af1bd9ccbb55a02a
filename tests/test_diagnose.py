"""`failpedia diagnose`: the Python engine's rules, the command's contract, and its input handling."""

from __future__ import annotations

import gzip
import json
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import sample_files, valid_entry, write_tree
from generator.site.build import load_catalog
from generator.diagnosis.matcher import Matcher, diagnose_bytes, matcher_spec, rank_hits
from generator.site.pages import fingerprint_data
from generator.core.patterns import compile_pattern

REPO = Path(__file__).resolve().parent.parent

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB."
WATCHDOG = "[rank0]:[E ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9)"


def spec_for(root: Path) -> dict:
    return matcher_spec(fingerprint_data(load_catalog(root)))


@pytest.fixture
def spec(sample: Path) -> dict:
    return spec_for(sample)


def slugs(matches) -> list[tuple[str, str]]:
    return [(m.slug, m.role) for m in matches]


def test_initiating_failure_first_and_its_consequences_collateral(spec) -> None:
    log = "\n".join(["step 1", f"[rank1]: {OOM}", "noise"] + [f"[rank{r}]:{WATCHDOG[8:]}" for r in (0, 2, 3)]) + "\n"
    matches = diagnose_bytes(spec, log.encode())
    # gpu-oom (strong, 6) often_causes nccl-hang (definitive, 10): the cause leads despite its lower score.
    assert slugs(matches) == [("gpu-oom", "initiating"), ("nccl-hang", "collateral")]
    assert matches[0].evidence[0].line == 2 and matches[0].evidence[0].rank == 1
    assert [e.rank for e in matches[1].evidence] == [0, 2, 3]
    assert matches[0].confidence == 0.6 and matches[1].confidence == 1.0


def test_a_watchdog_alone_is_initiating(spec) -> None:
    assert slugs(diagnose_bytes(spec, (WATCHDOG + "\n").encode())) == [("nccl-hang", "initiating")]


def test_nothing_matches_unrelated_logs(spec) -> None:
    log = b"Traceback (most recent call last):\nModuleNotFoundError: No module named 'flash_attn'\nCUDA memory is fine\n"
    assert diagnose_bytes(spec, log) == []


def near_spec(tmp_path: Path, window: int = 3) -> dict:
    files = sample_files()
    files["distributed/ddp-oom.yaml"] = valid_entry(
        title="DDP OOM", tags=["ddp", "oom"], related=["gpu-oom", "nccl-hang"],
        fingerprints=[{"pattern": "CUDA out of memory", "near": "Reducer|allreduce", "window": window,
                       "strength": "strong", "examples": [OOM]}],
    )
    return spec_for(write_tree(tmp_path / "entries", files))


@pytest.mark.parametrize("before, after, expected", [
    (["Reducer::prepare"], [], True),            # near evidence 1 line before
    ([], ["x", "x", "in allreduce"], True),      # 3 lines after: inside the window
    ([], ["x", "x", "x", "in allreduce"], False),  # 4 lines after: outside
    (["Reducer", "x", "x", "x"], [], False),     # 4 lines before: outside
])
def test_near_window(tmp_path: Path, before, after, expected) -> None:
    spec = near_spec(tmp_path)
    log = "\n".join(before + [OOM] + after) + "\n"
    got = [m.slug for m in diagnose_bytes(spec, log.encode())]
    assert ("ddp-oom" in got) is expected
    if expected:  # near-confirmed (6 + 2) outranks the plain OOM entry (6)
        assert got[0] == "ddp-oom"


def numeric_spec(tmp_path: Path, **fp) -> dict:
    files = sample_files()
    files["memory/gpu-oom.yaml"] = valid_entry(
        title="GPU OOM", related=["ddp-oom"], often_causes=["nccl-hang"],
        fingerprints=[{"strength": "strong", **fp}],
    )
    return spec_for(write_tree(tmp_path / "entries", files))


@pytest.mark.parametrize("values, fires, line", [
    ([1, 2, 3, 4], True, 4),
    ([1, 2, 3], False, 0),           # too few rises
    ([1, 2, 2, 3, 4], False, 0),     # a repeat resets the streak
    ([5, 1, 2, 3, 9], True, 5),      # the streak may start anywhere
])
def test_rising_fingerprint(tmp_path: Path, values, fires, line) -> None:
    spec = numeric_spec(tmp_path, pattern=r"mem allocated (\d+\.\d+) GiB", rising=True, times=4,
                        examples=["step 1 mem allocated 1.50 GiB"])
    log = "".join(f"step {i} mem allocated {v}.00 GiB\n" for i, v in enumerate(values))
    got = diagnose_bytes(spec, log.encode())
    assert bool(got) is fires
    if fires:
        assert got[0].evidence[0].line == line


@pytest.mark.parametrize("pairs, fires", [
    ([(1.0, 0.6)] * 3, True),
    ([(1.0, 0.6)] * 2 + [(1.0, 0.1)] * 5, False),
    ([(0.0, 0.6)] * 5, False),    # a zero whole never counts
])
def test_share_above_fingerprint(tmp_path: Path, pairs, fires) -> None:
    spec = numeric_spec(tmp_path, pattern=r"Time (\d+\.\d+) Data (\d+\.\d+)", share_above=0.5, times=3,
                        examples=["Time 1.0 Data 0.9"])
    log = "".join(f"Time {w} Data {p}\n" for w, p in pairs)
    assert bool(diagnose_bytes(spec, log.encode())) is fires


def test_numeric_fingerprints_are_checked(run_cli, tmp_path: Path) -> None:
    files = sample_files()
    files["memory/gpu-oom.yaml"] = valid_entry(fingerprints=[
        {"pattern": r"mem allocated \d+ GiB", "rising": True, "examples": ["mem allocated 3 GiB"]},
        {"pattern": r"Time (\d+) Data (\w+)", "share_above": 0.5, "examples": ["Time 3 Data x"]},
    ], related=["ddp-oom"])
    root = write_tree(tmp_path / "entries", files)
    code, out, _ = run_cli("check", "--entries", str(root))
    assert code == 1
    assert "fingerprints[0]: rising needs a group in the pattern that captures the number" in out
    assert "fingerprints[1].examples[0]: the captured groups must be plain numbers like 12 or 3.5" in out


def test_ansi_codes_and_carriage_returns(spec) -> None:
    bar = "\r".join(f" {p}%|####      | {p}/100" for p in range(0, 100, 10))
    log = f"{bar}\r\x1b[1;31m{OOM}\x1b[0m\nnext\n".encode()
    (m,) = diagnose_bytes(spec, log)
    assert m.slug == "gpu-oom" and m.evidence[0].text == OOM and m.evidence[0].line == 1


def test_chunked_feeding_equals_one_shot(spec) -> None:
    lines = [f"step {i} loss 0.1" for i in range(3000)]
    lines[1200] = f"[rank3]: {OOM}"
    lines[2999] = WATCHDOG
    data = ("\n".join(lines)).encode()  # no trailing newline: the last line still counts
    whole = diagnose_bytes(spec, data)
    rnd = random.Random(7)
    m = Matcher(spec)
    pos = 0
    while pos < len(data):
        step = rnd.randint(1, 5000)
        m.feed(data[pos : pos + step])
        pos += step
    m.close()
    assert rank_hits(spec, [m]) == whole
    assert [e.line for x in whole for e in x.evidence] == [1201, 3000]


REAL_SPEC: dict | None = None


def real_spec() -> dict:
    global REAL_SPEC
    if REAL_SPEC is None:
        REAL_SPEC = spec_for(REPO / "entries")
    return REAL_SPEC


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["", " ", "x", "\r", "[rank2]: ", "CUDA", " out of memory", "NCCL", "Watchdog caught ",
                                 "collective operation timeout", "error", ": ", "0", "Tried to allocate 2.00 GiB"]), max_size=40))
def test_literal_prefilter_is_exact(parts: list[str]) -> None:
    """The prefilter finds exactly the lines a full per-segment regex scan finds."""
    spec = real_spec()
    line = "".join(parts)
    m = Matcher(spec)
    m.feed((line + "\n").encode())
    m.close()
    fired = {i for i, s in enumerate(m.state) if s.count or s.pending}
    naive = set()
    for i, fp in enumerate(spec["fingerprints"]):
        if any(compile_pattern(fp["pattern"]).search(seg) for seg in line.split("\r")):
            naive.add(i)
    assert fired == naive


def test_every_real_example_line_is_found_by_the_prefilter() -> None:
    spec = real_spec()
    catalog = load_catalog(REPO / "entries")
    for slug, rec in catalog.records.items():
        for fp in rec.entry.fingerprints:
            if fp.rising or fp.share_above or fp.metric:
                continue  # numeric: fires only over several lines (test_numeric_fingerprints, test_metrics)
            for ex in fp.examples:
                m = Matcher(spec)
                m.feed((ex + "\n").encode())
                m.close()
                idx = [i for i, f in enumerate(spec["fingerprints"]) if f["slug"] == slug and f["pattern"] == fp.pattern]
                assert any(m.state[i].count or m.state[i].pending for i in idx), (slug, ex)


def test_adversarial_lines_finish_quickly() -> None:
    spec = real_spec()
    evil = ("CUDA out of memory " + "a" * 200_000 + "\n" + "NCCL " * 100_000 + "\n" + ("Watchdog " + "(" * 5000) + "\n") * 3
    started = time.perf_counter()
    diagnose_bytes(spec, evil.encode())
    assert time.perf_counter() - started < 10


# --- the command -----------------------------------------------------------------------------


def cli(run_cli, sample: Path, *args: str) -> tuple[int, str, str]:
    return run_cli("diagnose", "--entries", str(sample), *args)


def test_cli_json_contract(run_cli, sample: Path, tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(f"[rank1]: {OOM}\n{WATCHDOG}\n")
    code, out, _ = cli(run_cli, sample, "--json", str(log))
    assert code == 0
    data = json.loads(out)
    assert [m["slug"] for m in data["matches"]] == ["gpu-oom", "nccl-hang"]
    first = data["matches"][0]
    assert set(first) >= {"slug", "title", "url", "confidence", "role", "evidence"}
    assert first["role"] == "initiating" and first["url"].endswith("/gpu-oom/")
    assert first["certainty"] == "strong" and first["tied_with"] is None
    assert first["evidence"] == [{"file": str(log), "line": 1, "rank": 1, "text": f"[rank1]: {OOM}", "matched": "CUDA out of memory. Tried to allocate 20"}]


def test_cli_text_output_and_top(run_cli, sample: Path, tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(f"[rank1]: {OOM}\n{WATCHDOG}\n")
    code, out, _ = cli(run_cli, sample, "--top", "1", str(log))
    assert code == 0
    assert out.splitlines()[0] == "1. GPU OOM  [the answer, strong match]"
    assert f"{log}:1 [rank 1]  [rank1]: {OOM}" in out
    assert "NCCL hang" not in out


def test_cli_no_match_exits_1(run_cli, sample: Path, tmp_path: Path) -> None:
    log = tmp_path / "ok.log"
    log.write_text("all good\n")
    assert cli(run_cli, sample, "--json", str(log))[:2] == (1, '{\n  "matches": [],\n  "initiating_rank": null\n}\n')


def test_cli_gzip_and_several_files(run_cli, sample: Path, tmp_path: Path) -> None:
    a = tmp_path / "rank1.log.gz"
    a.write_bytes(gzip.compress(f"x\n{OOM}\n".encode()))
    b = tmp_path / "rank0.log"
    b.write_text(f"{WATCHDOG}\n")
    code, out, _ = cli(run_cli, sample, "--json", str(b), str(a))
    data = json.loads(out)
    assert code == 0 and [(m["slug"], m["role"]) for m in data["matches"]] == [("gpu-oom", "initiating"), ("nccl-hang", "collateral")]
    # merged: the evidence keeps its own file and line, and rank1.log.gz's name gives its rank
    assert data["matches"][0]["evidence"][0] == {"file": str(a), "line": 2, "rank": 1, "text": OOM, "matched": "CUDA out of memory. Tried to allocate 20"}
    assert [(f["file"], f["rank"]) for f in data["files"]] == [(str(b), 0), (str(a), 1)]


@pytest.mark.parametrize("setup, message", [
    (lambda p: None, "cannot read: No such file or directory"),
    (lambda p: p.write_bytes(b"\x7fELF\x00\x00binary"), "looks like a binary file"),
    (lambda p: p.write_bytes(b"\x1f\x8bnot really gzip"), "cannot read"),
])
def test_cli_bad_input_exits_2(run_cli, sample: Path, tmp_path: Path, setup, message) -> None:
    log = tmp_path / "bad.log"
    setup(log)
    code, out, err = cli(run_cli, sample, str(log))
    assert code == 2 and message in err and "Traceback" not in err


def test_cli_bad_arguments_exit_2(run_cli, sample: Path) -> None:
    assert cli(run_cli, sample, "--top", "0", "x.log")[0] == 2
    assert cli(run_cli, sample, "--follow", "-")[0] == 2
    assert run_cli("diagnose")[0] == 2


def test_stdin_and_follow_end_to_end(sample: Path, tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "generator", "diagnose", "--entries", str(sample)]
    done = subprocess.run([*cmd, "--json", "-"], input=f"{WATCHDOG}\n".encode(), capture_output=True, cwd=REPO, timeout=60)
    assert done.returncode == 0 and json.loads(done.stdout)["matches"][0]["slug"] == "nccl-hang"

    log = tmp_path / "live.log"
    log.write_text("starting\n")
    proc = subprocess.Popen([*cmd, "--follow", str(log)], stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("watching")
        with log.open("a") as f:
            f.write("step 1\n" + WATCHDOG)  # the job hangs mid-line: no newline yet
        deadline = time.time() + 30
        seen = ""
        while time.time() < deadline and "NCCL hang" not in seen:
            seen += proc.stdout.readline()
        assert "1. NCCL hang  [the answer, definitive match]" in seen
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


def test_text_output_shows_control_characters_instead_of_obeying_them(run_cli, sample: Path, tmp_path: Path) -> None:
    log = tmp_path / "evil.log"
    log.write_text(f"[rank1]: {OOM} \x1b]0;pwned\x07 \u202etxt\n")
    code, out, _ = cli(run_cli, sample, str(log))
    assert code == 0
    assert "\x1b" not in out and "\u202e" not in out and "\x07" not in out
    assert "\\x1b]0;pwned\\x07 \\u202etxt" in out


def test_snapshot_feeds_an_unfinished_line_without_touching_the_matcher(tmp_path: Path) -> None:
    # `--follow` matches the last, still-unterminated line on a snapshot. With a `near` fingerprint
    # that has a pending hit and remembered near-lines, the copy once swapped the two fields and
    # crashed (AttributeError: 'list' object has no attribute 'line').
    spec = near_spec(tmp_path)
    m = Matcher(spec, "live.log")
    m.feed(f"allreduce warm-up\nx\nx\nx\nx\n{OOM}\nx\nin Reducer::prepare".encode())  # unfinished last line
    before = [(s.count, list(s.pending), len(s.near_lines)) for s in m.state]
    assert any(pending and lines for _, pending, lines in before)  # the state that used to be swapped
    probe = m.snapshot()
    probe._process(m.carry + b"\n")
    assert [x.slug for x in rank_hits(spec, [probe])][0] == "ddp-oom"
    assert [(s.count, list(s.pending), len(s.near_lines)) for s in m.state] == before
    m.feed(b"\n")
    m.close()
    assert [x.slug for x in rank_hits(spec, [m])][0] == "ddp-oom"
FRAG_LINE = ("[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 3 has a total capacity of 79.15 GiB of which "
             "1.12 GiB is free. Including non-PyTorch memory, this process has 78.02 GiB memory in use. Of the allocated memory 73.61 GiB is "
             "allocated by PyTorch, and 2.31 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
             "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  "
             "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")
REAL_WATCHDOG = ("[rank0]:[E1201 02:11:07.123456 1234 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: "
                 "WorkNCCL(SeqNum=1203, OpType=ALLREDUCE, NumelIn=26214400, NumelOut=26214400, Timeout(ms)=600000) ran for 600021 milliseconds before timing out.")


def test_the_answer_reads_right_at_2am(run_cli, tmp_path: Path) -> None:
    """On the real entries: the initiating failure is the answer, with its quick answer, fix and
    first steps; the tie on the OOM line says why fragmentation wins, from the line itself; the
    watchdog is a consequence under it, not a rival above; the evidence keeps the figure that
    justifies the call; certainty is a word with its meaning, not '0.60'."""
    log = tmp_path / "slurm-1234.out"
    log.write_text(f"[rank3]:     loss.backward()\n{FRAG_LINE}\n{REAL_WATCHDOG}\n{REAL_WATCHDOG.replace('rank0', 'rank1').replace('Rank 0', 'Rank 1')}\n")
    code, out, _ = run_cli("diagnose", "--entries", str(REPO / "entries"), str(log))
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "1. CUDA memory fragmentation (reserved but unallocated)  [the answer, strong match]"
    assert lines[1] == "   Started on rank 3: rank 3 printed CUDA memory fragmentation (reserved but unallocated)."
    assert lines[2].startswith("   Quick answer: ") and lines[3].startswith("   Fix: Export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")
    assert lines[4] == "   First steps:" and lines[5].startswith("     1. ") and lines[7].startswith("     3. ")
    assert "0.60" not in out and "strong: the log shows this failure's usual error text" in lines[-1]
    evidence = next(x for x in lines if x.startswith(f"     {log}:2 [rank 3]"))
    assert "2.31 GiB is reserved by PyTorch but unallocated" in evidence and "…" in evidence and len(evidence.split(" [rank 3]  ", 1)[1]) <= 300
    assert ('   Why not CUDA out of memory? It matches the same line 2 as strongly; this answer\'s fingerprint matched more of it: '
            '"2.31 GiB is reserved by PyTorch but unallocated" against "CUDA out of memory. Tried to allocate".') in lines
    at = lines.index("   Consequences (caused by it; not separate problems):")
    assert lines[at + 1].startswith("   - NCCL watchdog timeout") and "on ranks 0, 1" in lines[at + 1]
    assert lines.index("Other possible causes:") > at and "2. CUDA out of memory  [also possible, strong match]" in lines


def test_read_points_at_the_built_page_when_there_is_one(run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    repo = tmp_path / "repo"
    shutil.copytree(REPO / "entries", repo / "entries")
    shutil.copy(REPO / "pyproject.toml", repo / "pyproject.toml")
    page = repo / "site" / "cuda-out-of-memory" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text("<!doctype html>")
    (repo / "train.log").write_text("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB.\n")
    monkeypatch.chdir(repo)
    code, out, _ = run_cli("diagnose", "train.log")
    assert code == 0 and "   Read: site/cuda-out-of-memory/index.html  (online: https://" in out


def test_evidence_is_elided_in_the_middle_keeping_the_match() -> None:
    from generator.diagnosis.matcher import elide

    text = "head " + "a" * 400 + " THE MATCH " + "b" * 400
    start = text.index("THE MATCH")
    out = elide(text, start, start + 9)
    assert len(out) == 300 and out.startswith("head ") and "THE MATCH" in out and out.count("…") == 2
    assert elide("short line", 0, 5) == "short line"
    assert elide("x" * 299 + "MATCH", 299, 304).endswith("…xMATCH"[-6:]) and len(elide("MATCH" + "y" * 400, 0, 5)) == 300
